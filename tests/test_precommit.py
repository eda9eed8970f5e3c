"""The pre-commit hooks, proven with the real `pre-commit try-repo` against a copy of this
working tree (committed in a temporary repository, so the current code is what runs)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from .snippets import CLEAN_SRC, TLL001_FIXED, TLL001_SRC

ROOT = Path(__file__).resolve().parents[1]
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env={**os.environ, **GIT_ENV})


@pytest.fixture(scope="session")
def hook_repo(tmp_path_factory):
    """This working tree's files (tracked and new, not ignored) committed in a fresh repo."""
    dest = tmp_path_factory.mktemp("hook-repo")
    listing = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=ROOT, check=True,
                             capture_output=True).stdout.decode().split("\0")
    for rel in filter(None, listing):
        src = ROOT / rel
        if src.is_file() and not rel.startswith(("fixtures/", "bench/")):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    git(dest, "init", "-q")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "hooks under test")
    return dest


@pytest.fixture(scope="session")
def pre_commit_home(tmp_path_factory):
    """One cache for the session: the hook's environment is built once."""
    return tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture
def try_repo(hook_repo, pre_commit_home, tmp_path):
    def run(hook, files):
        project = tmp_path / "project"
        project.mkdir(exist_ok=True)
        for name, text in files.items():
            (project / name).parent.mkdir(parents=True, exist_ok=True)
            (project / name).write_text(text)
        git(project, "init", "-q")
        git(project, "add", "-A")
        env = {**os.environ, **GIT_ENV, "PRE_COMMIT_HOME": str(pre_commit_home), "NO_COLOR": "1"}
        env.pop("VIRTUAL_ENV", None)
        proc = subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), hook, "--all-files",
                               "--color", "never"], cwd=project, capture_output=True, text=True, env=env,
                              timeout=900)
        return proc, project

    return run


def test_hook_definitions():
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"torchleaklint", "torchleaklint-fix"}
    for hook in hooks.values():
        assert hook["language"] == "python" and hook["types_or"] == ["python", "pyi"]
        assert hook.get("pass_filenames", True) is True
        assert "--force-exclude" in hook["entry"]
    assert "--fix" in hooks["torchleaklint-fix"]["entry"]
    assert "--exit-non-zero-on-fix" in hooks["torchleaklint-fix"]["entry"]


def test_check_hook_fails_and_names_the_finding(try_repo):
    proc, project = try_repo("torchleaklint", {"train.py": TLL001_SRC, "notes.txt": "x"})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "train.py:7:5: TLL001" in proc.stdout
    assert (project / "train.py").read_text() == TLL001_SRC


def test_fix_hook_rewrites_and_fails_so_the_change_is_restaged(try_repo):
    proc, project = try_repo("torchleaklint-fix", {"train.py": TLL001_SRC})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (project / "train.py").read_text() == TLL001_FIXED
    assert "files were modified by this hook" in proc.stdout


def test_clean_repo_passes(try_repo):
    proc, _ = try_repo("torchleaklint", {"train.py": CLEAN_SRC, "pkg/util.pyi": "def f() -> int: ...\n"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Passed" in proc.stdout


def test_no_python_files_passes(try_repo):
    proc, _ = try_repo("torchleaklint", {"README.md": "# nothing to lint\n"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no files to check" in proc.stdout


def test_excluded_files_stay_excluded(try_repo):
    proc, _ = try_repo("torchleaklint", {
        "pyproject.toml": '[tool.torchleaklint]\nextend-exclude = ["generated"]\n',
        "generated/model_pb.py": TLL001_SRC, "train.py": CLEAN_SRC,
    })
    assert proc.returncode == 0, proc.stdout + proc.stderr


UPSTREAM = "https://github.com/torchleaklint/torchleaklint"


def readme_snippet() -> str:
    """The README's pre-commit configuration, as printed there."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### pre-commit\n"):]
    start = section.index("```yaml\n") + len("```yaml\n")
    return section[start:section.index("```\n", start)]


def test_readme_snippet_works_as_written(hook_repo, pre_commit_home, tmp_path):
    """The README's snippet, byte for byte, as a project's .pre-commit-config.yaml. Git is
    told (through the variables pre-commit passes on) to fetch the upstream URL from the
    copy of this tree, whose branch is `main` as upstream's is."""
    snippet = readme_snippet()
    assert UPSTREAM in snippet and "rev: v0.1.0" not in snippet
    git(hook_repo, "branch", "-f", "main")
    project = tmp_path / "project"
    project.mkdir()
    (project / ".pre-commit-config.yaml").write_text(snippet)
    (project / "train.py").write_text(TLL001_SRC)
    (project / "clean.py").write_text(CLEAN_SRC)
    git(project, "init", "-q")
    git(project, "add", "-A")
    env = {**os.environ, **GIT_ENV, "PRE_COMMIT_HOME": str(pre_commit_home), "NO_COLOR": "1",
           "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": f"url.{hook_repo}.insteadOf", "GIT_CONFIG_VALUE_0": UPSTREAM}
    env.pop("VIRTUAL_ENV", None)
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "run", "--all-files", "--color", "never"],
                          cwd=project, capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "train.py:7:5: TLL001" in proc.stdout
    assert "clean.py" not in proc.stdout
    assert (project / "train.py").read_text() == TLL001_SRC
    # The installed hook is this tree's code: the hook environment holds its version.
    from torchleaklint import __version__

    envs = list(pre_commit_home.glob("repo*/py_env-*/lib/python*/site-packages/torchleaklint-*.dist-info"))
    assert any(p.name == f"torchleaklint-{__version__}.dist-info" for p in envs), envs
