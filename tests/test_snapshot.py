"""Whole-run snapshots: a run whose files, settings and modules are all as they were is
answered from the snapshot without the per-file cache; any difference falls through to
the per-file cache, and the findings are always those of a run without any cache."""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from torchleaklint.config import Settings
from torchleaklint.engine.cache import Cache
from torchleaklint.engine.snapshot import KEPT, RunKey, Snapshots
from torchleaklint.runner import run

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "leaky_training"


def findings(result):
    return sorted((d.path, d.code, d.start.line, d.start.col, d.message) for d in result.diagnostics)


def check(paths, cache_dir, settings=None, cache=True):
    return run([str(p) for p in paths], settings or Settings(), cache=cache, cache_dir=str(cache_dir))


def age(*paths, seconds_ago=3600):
    """Give files an old modification time: a snapshot is only recorded for such files."""
    when = time.time() - seconds_ago
    for path in paths:
        os.utime(path, (when, when))


@pytest.fixture
def project(tmp_path):
    target = tmp_path / "proj"
    shutil.copytree(EXAMPLE, target)
    age(*target.glob("*.py"))
    return target


def test_unchanged_run_is_answered_by_the_snapshot(project, tmp_path, monkeypatch):
    cold = check([project], tmp_path / "c")
    assert cold.cached_files == 0 and Snapshots(tmp_path / "c").path.exists()
    with monkeypatch.context() as patch:
        patch.setattr(Cache, "open", classmethod(lambda *a, **k: pytest.fail("per-file cache opened")))
        warm = check([project], tmp_path / "c")
    assert warm.cached_files == warm.files == 3
    assert findings(warm) == findings(cold) == findings(check([project], tmp_path / "x", cache=False))
    assert [d.path for d in warm.diagnostics] == [d.path for d in cold.diagnostics]  # same order


def test_edited_file_with_an_old_stamp_misses_and_relints(project, tmp_path):
    check([project], tmp_path / "c")
    agent = project / "agent.py"
    agent.write_text(agent.read_text().replace("return critic_loss, actor_loss",
                                               "return critic_loss.item(), actor_loss.item()"))
    age(agent, seconds_ago=1800)  # another old stamp: the edit is seen through mtime and size
    edited = check([project], tmp_path / "c")
    assert edited.cached_files < 3
    assert not [d for d in edited.diagnostics if d.path.endswith("train.py") and d.code == "TLL001"]
    assert findings(edited) == findings(check([project], tmp_path / "x", cache=False))


def test_file_modified_just_before_the_run_records_no_snapshot(project, tmp_path):
    meters = project / "meters.py"
    meters.write_text(meters.read_text() + "\n# just edited\n")  # mtime: now
    check([project], tmp_path / "c")
    files = [str(p) for p in sorted(project.glob("*.py"))]
    key = RunKey(files, Settings())
    assert key.racy
    assert not Snapshots(tmp_path / "c").path.exists()
    age(meters)
    assert not RunKey(files, Settings()).racy


def test_settings_paths_and_cwd_are_part_of_the_key(project, tmp_path, monkeypatch):
    files = [str(p) for p in sorted(project.glob("*.py"))]
    base = RunKey(files, Settings()).value
    assert RunKey(files, Settings()).value == base
    assert RunKey(files, Settings(select=("TLL002",))).value != base
    assert RunKey(files[:2], Settings()).value != base
    monkeypatch.chdir(tmp_path)
    assert RunKey(files, Settings()).value != base


def test_new_init_file_outside_the_linted_folder_changes_the_key(tmp_path):
    inner = tmp_path / "pkg" / "sub"
    inner.mkdir(parents=True)
    (inner / "__init__.py").write_text("")
    (inner / "train.py").write_text("import torch\n")
    files = [str(inner / "__init__.py"), str(inner / "train.py")]
    before = RunKey(files, Settings()).value
    (tmp_path / "pkg" / "__init__.py").write_text("")  # pkg.sub.train instead of sub.train
    assert RunKey(files, Settings()).value != before


def test_missing_file_gives_no_key(tmp_path):
    key = RunKey([str(tmp_path / "gone.py")], Settings())
    assert key.value is None
    assert Snapshots(tmp_path / "c").findings(key) is None


def test_only_the_most_recent_runs_are_kept(project, tmp_path):
    store = Snapshots(tmp_path / "c")
    files = [str(p) for p in sorted(project.glob("*.py"))]
    keys = []
    for i in range(KEPT + 3):
        key = RunKey(files, Settings(model_names=(f"net{i}",)))
        assert store.record(key, [(f, []) for f in files]) is None
        keys.append(key)
    fresh = Snapshots(tmp_path / "c")
    kept = [k for k in keys if fresh.findings(k) is not None]
    assert kept == keys[-KEPT:]


def test_cli_warm_run_imports_no_analysis_rich_or_libcst(project, tmp_path):
    """What makes an unchanged run fast: it loads neither the analysis nor rich."""
    env = dict(os.environ, TORCHLEAKLINT_CACHE_DIR=str(tmp_path / "c"), NO_COLOR="1")
    probe = ("import sys, runpy\n"
             "sys.argv = ['torchleaklint', 'check', sys.argv[1], '-q']\n"
             "try:\n    runpy.run_module('torchleaklint', run_name='__main__')\n"
             "except SystemExit:\n    pass\n"
             "loaded = sorted(m for m in sys.modules if m.startswith(('torchleaklint.analysis', 'torchleaklint.rules.',"
             " 'rich', 'libcst', 'torchleaklint.engine.lint')))\n"
             "print('LOADED', loaded, file=sys.stderr)\n")
    cold = subprocess.run([sys.executable, "-c", probe, str(project)], env=env, capture_output=True, text=True,
                          timeout=120)
    assert "torchleaklint.analysis" in cold.stderr  # the cold run analyses
    warm = subprocess.run([sys.executable, "-c", probe, str(project)], env=env, capture_output=True, text=True,
                          timeout=120)
    assert "LOADED []" in warm.stderr, warm.stderr
    assert warm.stdout == cold.stdout and "TLL001" in warm.stdout
