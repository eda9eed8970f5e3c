"""The content-hash cache: warm runs reuse findings, edits re-lint the file and the files
whose cross-file facts it feeds, and a damaged cache is rebuilt with one warning."""

import os
import shutil
from pathlib import Path

import pytest

from torchleaklint.config import Settings
from torchleaklint.engine.cache import Cache
from torchleaklint.engine.snapshot import Snapshots
from torchleaklint.runner import run

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "leaky_training"
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def findings(result):
    return sorted((d.path, d.code, d.start.line, d.start.col, d.message) for d in result.diagnostics)


def check(paths, cache_dir, jobs=1, cache=True):
    return run([str(p) for p in paths], Settings(), jobs=jobs, cache=cache, cache_dir=str(cache_dir))


@pytest.fixture
def project(tmp_path):
    target = tmp_path / "proj"
    shutil.copytree(EXAMPLE, target)
    return target


def test_warm_run_reuses_every_file_with_the_same_findings(project, tmp_path):
    cold = check([project], tmp_path / "c")
    warm = check([project], tmp_path / "c")
    assert cold.cached_files == 0
    assert warm.cached_files == warm.files == 3
    assert findings(warm) == findings(cold) == findings(check([project], tmp_path / "x", cache=False))
    assert len(cold.diagnostics) >= 3


def test_callee_change_relints_its_callers(project, tmp_path):
    agent = project / "agent.py"
    cold = check([project], tmp_path / "c")
    stored = [d for d in cold.diagnostics if d.path.endswith("train.py") and d.code == "TLL001"]
    assert len(stored) == 2  # agent.update(...) returns graph-carrying losses, kept in lists

    # The callee now returns plain floats: the caller's findings must go on the warm run.
    agent.write_text(agent.read_text().replace("return critic_loss, actor_loss",
                                               "return critic_loss.item(), actor_loss.item()"))
    detached = check([project], tmp_path / "c")
    assert not [d for d in detached.diagnostics if d.path.endswith("train.py") and d.code == "TLL001"]
    assert detached.cached_files == 1  # meters.py: it does not call into agent.py
    assert findings(detached) == findings(check([project], tmp_path / "x", cache=False))

    # And back: graph-carrying again, the caller's findings return.
    agent.write_text(agent.read_text().replace("return critic_loss.item(), actor_loss.item()",
                                               "return critic_loss, actor_loss"))
    again = check([project], tmp_path / "c")
    assert findings(again) == findings(cold)


def test_unchanged_callee_keeps_caller_cached(project, tmp_path):
    (project / "plots.py").write_text("import torch\n\n\ndef norm(x):\n    return torch.linalg.norm(x)\n")
    check([project], tmp_path / "c")
    meters = project / "meters.py"
    meters.write_text(meters.read_text() + "\n# a comment\n")
    warm = check([project], tmp_path / "c")
    # train.py reads AverageMeter.update's summary from meters.py, and agent.py the class of
    # train.py's meters (whether `meter.update(...)` can be a call of `Agent.update`): both are
    # re-linted. plots.py consulted nothing of meters.py: it stays cached.
    assert warm.cached_files == 1
    assert findings(warm) == findings(check([project], tmp_path / "x", cache=False))


def test_new_file_defining_a_called_name_relints_the_caller(tmp_path):
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "train.py").write_text(
        "import torch\nfrom helpers import compute\n\n"
        "def train(model, data, opt):\n    losses = []\n    for x in data:\n"
        "        loss = compute(model, x)\n        loss.backward()\n        opt.step()\n"
        "        losses.append(loss)\n    return losses\n")
    (proj / "other.py").write_text("import torch\n\ndef unrelated():\n    return 1\n")
    first = check([proj], tmp_path / "c")
    (proj / "helpers.py").write_text("import torch\n\ndef compute(model, x):\n    return model(x).sum()\n")
    second = check([proj], tmp_path / "c")
    assert findings(second) == findings(check([proj], tmp_path / "x", cache=False))
    assert second.cached_files == 1  # other.py; train.py asked for `compute` and is re-judged
    assert first.cached_files == 0


def test_new_binding_of_an_attribute_name_relints_its_users(tmp_path):
    """``model.recon_a(x)`` is a module call while every ``.recon_a`` the project binds is an
    nn.Module; an edit elsewhere binding ``self.recon_a`` to a plain object makes it unknown."""
    proj = tmp_path / "p"
    shutil.copytree(FIXTURES / "TLL001" / "positive" / "crossfile_submodule_of_parameter", proj)
    other = proj / "other.py"
    other.write_text("class Calibrator:\n    pass\n\n\nclass Holder:\n    def __init__(self):\n"
                     "        self.scale = Calibrator()\n        self.shift = Calibrator()\n")
    first = check([proj], tmp_path / "c")
    assert [(Path(d.path).name, d.code) for d in first.diagnostics] == [("scoring.py", "TLL001")]
    other.write_text(other.read_text().replace("self.scale", "self.recon_a").replace("self.shift", "self.recon_b"))
    second = check([proj], tmp_path / "c")
    assert not second.diagnostics
    assert findings(second) == findings(check([proj], tmp_path / "x", cache=False))
    assert second.cached_files == 2  # networks.py and run.py: the lookup is recorded, not every table


def test_settings_change_does_not_reuse_findings(project, tmp_path):
    check([project], tmp_path / "c")
    only = run([str(project)], Settings(select=("TLL002",)), cache=True, cache_dir=str(tmp_path / "c"))
    assert only.cached_files == 0
    assert {d.code for d in only.diagnostics} == {"TLL002"}


@pytest.mark.parametrize("damaged_file", ["per-file cache", "run snapshots"])
@pytest.mark.parametrize("garbage", [b"", b"not a pickle at all", b"\x80\x04\x95garbage"])
def test_garbage_cache_is_ignored_with_one_warning_and_rebuilt(project, tmp_path, garbage, damaged_file):
    cold = check([project], tmp_path / "c")
    cache_file, snapshots = Path(Cache(tmp_path / "c").path), Path(Snapshots(tmp_path / "c").path)
    assert cache_file.exists() and snapshots.exists()  # the copied files are not new: no racy stat
    if damaged_file == "per-file cache":
        cache_file.write_bytes(garbage)
        snapshots.unlink()  # else the run is answered without reading the per-file cache
    else:
        snapshots.write_bytes(garbage)
    damaged = check([project], tmp_path / "c")
    assert len(damaged.warnings) == 1 and "unreadable cache" in damaged.warnings[0]
    assert "\n" not in damaged.warnings[0]
    assert findings(damaged) == findings(cold)
    rebuilt = check([project], tmp_path / "c")
    assert rebuilt.warnings == [] and rebuilt.cached_files == 3


def test_cached_findings_follow_the_path_spelling(project, tmp_path, monkeypatch):
    cold = check([project], tmp_path / "c")
    monkeypatch.chdir(project.parent)
    warm = check([Path("proj")], tmp_path / "c")
    # Files that consult no other file are reused; the others are re-judged (cross-file
    # evidence names the callee's path).
    assert warm.cached_files >= 1
    assert sorted(d.path for d in warm.diagnostics) == sorted(
        str(Path("proj") / Path(d.path).name) for d in cold.diagnostics)


def test_a_file_named_from_inside_its_tests_folder_is_judged_again(tmp_path, monkeypatch):
    """`tests/helper.py` is a test file and `helper.py` (run from inside `tests/`) is not:
    the cached findings of one spelling must not answer the other."""
    source = next(p for p in sorted((FIXTURES / "TLL009" / "positive").glob("*.py")) if ".fixed" not in p.name)
    (tmp_path / "proj" / "tests").mkdir(parents=True)
    shutil.copy(source, tmp_path / "proj" / "tests" / "helper.py")
    monkeypatch.chdir(tmp_path / "proj")
    assert findings(check(["tests/helper.py"], tmp_path / "c")) == []
    monkeypatch.chdir(tmp_path / "proj" / "tests")
    uncached = check(["helper.py"], tmp_path / "c", cache=False)
    assert [d.code for d in uncached.diagnostics] == ["TLL009"]
    assert findings(check(["helper.py"], tmp_path / "c")) == findings(uncached)


def test_rules_read_nothing_of_a_path_but_whether_it_is_a_test():
    """The cache keys a file's findings on that verdict (see engine.parallel.result_key)."""
    import ast

    import torchleaklint.rules as rules

    folder = Path(rules.__file__).parent
    readers = []
    for module in sorted(folder.glob("*.py")):
        if module.name == "base.py":
            continue
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "path" and isinstance(node.value, ast.Name) \
                    and node.value.id == "ctx":
                readers.append(f"{module.name}:{node.lineno}")
    assert readers == []


def test_cli_clean_and_no_cache(cli, tmp_path):
    shutil.copytree(EXAMPLE, tmp_path / "proj")
    result = cli("proj", "--no-cache")
    assert result.exit_code == 1
    assert not (tmp_path / ".torchleaklint_cache").exists()
    cold = cli("proj", "-j", "2")
    assert (tmp_path / ".torchleaklint_cache" / "CACHEDIR.TAG").exists()
    warm = cli("proj")
    assert warm.output == cold.output
    for cache_file in (tmp_path / ".torchleaklint_cache").glob("*.json"):
        cache_file.write_bytes(b"garbage")
    damaged = cli("proj")
    assert damaged.output.count("torchleaklint: warning: ignoring unreadable cache") == 2
    assert damaged.exit_code == 1
    cleaned = cli("clean")
    assert cleaned.exit_code == 0 and "Removed" in cleaned.output
    assert not (tmp_path / ".torchleaklint_cache").exists()
    assert "No cache" in cli("clean").output


def test_fixture_projects_same_findings_cold_and_warm(tmp_path):
    paths = sorted(str(p) for p in FIXTURES.glob("TLL00*/positive"))
    cold = check(paths, tmp_path / "c", jobs=2)
    warm = check(paths, tmp_path / "c", jobs=2)
    assert warm.cached_files == warm.files > 100
    assert findings(warm) == findings(cold) == findings(check(paths, tmp_path / "x", jobs=1, cache=False))


def test_real_code_same_findings_without_cache_warm_and_after_an_edit(tmp_path):
    """On published training code (the CI slice): the run snapshot, the per-file cache and
    a re-lint after an edit all report what a run without any cache reports."""
    import os
    import time

    from .real_code import slice_folders

    project = tmp_path / "code"
    for folder in slice_folders():
        shutil.copytree(folder, project / folder.name)
    files = sorted(project.rglob("*.py"))
    old = time.time() - 3600
    for path in files:
        os.utime(path, (old, old))  # not racy: the snapshot is recorded on the first run
    fresh = findings(check([project], tmp_path / "none", cache=False))
    assert len(files) > 10 and fresh  # real findings to compare, not an empty list

    cold = check([project], tmp_path / "c")
    assert cold.cached_files == 0 and findings(cold) == fresh
    snapshot = check([project], tmp_path / "c")
    assert snapshot.cached_files == len(files) and findings(snapshot) == fresh
    for runs in (tmp_path / "c").glob("runs-*.json"):
        runs.unlink()
    per_file = check([project], tmp_path / "c")
    assert per_file.cached_files == len(files) and findings(per_file) == fresh

    # An edit that changes findings: the leak-free twin of a planted leak.
    edited = next(p for p in files if p.name == "torch.py" or "tab_model" in p.name)
    edited.write_text(edited.read_text(encoding="utf-8") + "\n\ndef _planted(model, xs):\n"
                      "    kept = []\n    for x in xs:\n        loss = model(x).sum()\n"
                      "        loss.backward()\n        kept.append(loss)\n    return len(kept)\n",
                      encoding="utf-8")
    after = check([project], tmp_path / "c")
    assert findings(after) == findings(check([project], tmp_path / "none", cache=False)) != fresh
    assert 0 < after.cached_files < len(files)


def test_the_tool_fingerprint_sees_every_source_file_by_name_size_and_mtime(tmp_path):
    from torchleaklint.engine.cache import _sources

    (tmp_path / "rules").mkdir()
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "rules" / "b.py").write_text("y = 2\n")
    (tmp_path / "__pycache__" / "a.cpython-311.py").write_text("")
    (tmp_path / "notes.txt").write_text("")
    os.utime(tmp_path / "rules" / "b.py", ns=(1_000_000_000, 1_000_000_000))
    before = sorted(_sources(str(tmp_path), ""))
    assert [(rel, size) for rel, size, _ in before] == [("a.py", 6), ("rules/b.py", 6)]
    (tmp_path / "rules" / "b.py").write_text("y = 3\n")  # same size, new modification time
    assert sorted(_sources(str(tmp_path), "")) != before
