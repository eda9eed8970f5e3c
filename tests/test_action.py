"""The GitHub Action (action.yml), exercised by running its steps' commands as the runner
would: each `run` step in bash with its `env`, `${{ inputs.* }}` filled in from the
inputs, `if:` conditions evaluated, and $GITHUB_PATH honoured between steps. The install
step really installs this working tree (committed in a temporary repository, as the
pre-commit tests do) into a fresh virtual environment."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from .snippets import CLEAN_SRC, TLL001_SRC
from .test_precommit import hook_repo  # noqa: F401  (the fixture: this tree in a fresh repository)

ROOT = Path(__file__).resolve().parents[1]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
EXPRESSION = re.compile(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}")
CONDITION = re.compile(r"^inputs\.([\w-]+) == '([^']*)'$")


def inputs_with(**given):
    values = {name: spec.get("default", "") for name, spec in ACTION["inputs"].items()}
    unknown = set(given) - set(values)
    assert not unknown, unknown
    values.update(given)
    return values


def expand(text: str, inputs) -> str:
    return EXPRESSION.sub(lambda m: inputs[m.group(1)], str(text))


def runs(step, inputs) -> bool:
    condition = step.get("if")
    if condition is None:
        return True
    match = CONDITION.match(condition.strip())
    assert match, f"the test evaluates only `inputs.X == 'value'` conditions, not {condition!r}"
    return inputs[match.group(1)] == match.group(2)


def run_action(workspace: Path, action_path: Path, runner_temp: Path, **given):
    """Run the action's steps in ``workspace``; returns (the steps run, by name, with their
    completed process, or the `with:` of a `uses:` step), stopping at the first failure."""
    inputs = inputs_with(**given)
    github_path = runner_temp / "github_path"
    github_path.touch()
    results = {}
    for step in ACTION["runs"]["steps"]:
        if not runs(step, inputs):
            continue
        if "uses" in step:
            results[step["name"]] = {k: expand(v, inputs) for k, v in step.get("with", {}).items()}
            continue
        assert step["shell"] == "bash"
        added = [line for line in github_path.read_text().splitlines() if line]
        env = {**os.environ, "GITHUB_ACTION_PATH": str(action_path), "RUNNER_TEMP": str(runner_temp),
               "GITHUB_PATH": str(github_path), "GITHUB_WORKSPACE": str(workspace), "NO_COLOR": "1",
               "PATH": os.pathsep.join([*added, os.environ["PATH"]])}
        env.pop("VIRTUAL_ENV", None)
        env.update({k: expand(v, inputs) for k, v in step.get("env", {}).items()})
        # GitHub runs a bash step as `bash --noprofile --norc -eo pipefail {0}`.
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", expand(step["run"], inputs)],
                              cwd=workspace, env=env, capture_output=True, text=True, timeout=900)
        results[step["name"]] = proc
        if proc.returncode != 0:
            break
    return results


def test_action_shape():
    assert ACTION["runs"]["using"] == "composite"
    names = [step["name"] for step in ACTION["runs"]["steps"]]
    assert names == ["Install torchleaklint", "Write SARIF", "Upload SARIF", "Check"]
    upload = ACTION["runs"]["steps"][2]
    assert upload["uses"].startswith("github/codeql-action/upload-sarif@")


@pytest.fixture(scope="module")
def runner_temp(tmp_path_factory):
    """One RUNNER_TEMP for the module, so the install step's environment is built once
    and every later run of the action reuses it (pip finds it already installed)."""
    return tmp_path_factory.mktemp("runner-temp")


def test_findings_become_annotations_and_sarif(hook_repo, runner_temp, tmp_path):  # noqa: F811
    workspace = tmp_path / "repo"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "train.py").write_text(TLL001_SRC)
    (workspace / "notes.txt").write_text("x")
    results = run_action(workspace, hook_repo, runner_temp, sarif="true", args="src")
    install = results["Install torchleaklint"]
    assert install.returncode == 0, install.stdout + install.stderr
    venv_bin = runner_temp / "torchleaklint-venv" / "bin"
    assert (venv_bin / "torchleaklint").exists()
    # Installed from the action's own checkout, not from the test's environment.
    origin = subprocess.run([str(venv_bin / "python"), "-c", "import torchleaklint; print(torchleaklint.__file__)"],
                            capture_output=True, text=True, check=True, cwd=workspace).stdout
    assert str(runner_temp) in origin

    sarif = results["Write SARIF"]
    assert sarif.returncode == 0, sarif.stderr
    report = json.loads((workspace / "torchleaklint.sarif").read_text())
    assert [r["ruleId"] for r in report["runs"][0]["results"]] == ["TLL001"]
    assert results["Upload SARIF"] == {"sarif_file": "torchleaklint.sarif", "category": "torchleaklint"}

    check = results["Check"]
    assert check.returncode == 1, check.stdout + check.stderr
    assert re.search(r"^::error file=src/train\.py,line=7,col=5,.*title=TLL001.*::", check.stdout, re.M), check.stdout


def test_clean_code_passes_and_sarif_is_off_by_default(hook_repo, runner_temp, tmp_path):  # noqa: F811
    workspace = tmp_path / "repo"
    workspace.mkdir()
    (workspace / "train.py").write_text(CLEAN_SRC)
    (workspace / "gen").mkdir()
    (workspace / "gen" / "leak.py").write_text(TLL001_SRC)
    results = run_action(workspace, hook_repo, runner_temp, args="--extend-exclude gen .")
    assert list(results) == ["Install torchleaklint", "Check"]
    assert results["Check"].returncode == 0, results["Check"].stdout + results["Check"].stderr
    assert results["Check"].stdout == ""
    assert not (workspace / "torchleaklint.sarif").exists()
