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
from torchleaklint.engine import cache as cache_module
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
    assert cold.cached_files == 0 and os.path.exists(Snapshots(tmp_path / "c").path)
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


def test_recently_modified_file_is_checked_by_content(project, tmp_path):
    """A file edited twice within one clock tick keeps its stat; its content decides."""
    agent = project / "agent.py"
    agent.write_text(agent.read_text())  # modified now: within the racy window
    stamp = agent.stat().st_mtime_ns
    cold = check([project], tmp_path / "c")
    files = [str(p) for p in sorted(project.glob("*.py"))]
    assert str(agent) in RunKey(files, Settings()).racy
    # Same size, same mtime, other bytes: only the content hash can tell.
    text = agent.read_text()
    assert "return critic_loss, actor_loss" in text
    same_size = text.replace("return critic_loss, actor_loss", "return critic_loss, actor_los_")
    assert len(same_size) == len(text)
    agent.write_text(same_size)
    os.utime(agent, ns=(stamp, stamp))
    assert agent.stat().st_mtime_ns == stamp
    again = check([project], tmp_path / "c")
    assert again.cached_files < 3  # the snapshot was not reused
    assert findings(again) == findings(check([project], tmp_path / "x", cache=False)) != findings(cold)


def test_snapshot_of_recent_files_stops_hashing_once_they_are_old(project, tmp_path, monkeypatch):
    meters = project / "meters.py"
    meters.write_text(meters.read_text())  # modified now
    files = [str(p) for p in sorted(project.glob("*.py"))]
    cold = check([project], tmp_path / "c")
    stored = Snapshots(tmp_path / "c")._load()
    assert [list(racy) for racy, _ in stored.values()] == [[str(meters)]]
    monkeypatch.setattr(cache_module, "RACY_NS", 0)  # as if the window had passed
    key = RunKey(files, Settings())
    assert key.racy == {} and key.value in stored
    warm = check([project], tmp_path / "c")
    assert warm.cached_files == 3 and findings(warm) == findings(cold)
    assert [racy for racy, _ in Snapshots(tmp_path / "c")._load().values()] == [{}]


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
    """What makes an unchanged run fast: it loads neither the analysis nor rich, nor the
    fixer, nor OpenSSL's hashes (BLAKE2 comes from CPython's own module)."""
    env = dict(os.environ, TORCHLEAKLINT_CACHE_DIR=str(tmp_path / "c"), NO_COLOR="1")
    probe = ("import sys, runpy\n"
             "sys.argv = ['torchleaklint', 'check', sys.argv[1], '-q']\n"
             "try:\n    runpy.run_module('torchleaklint', run_name='__main__')\n"
             "except SystemExit:\n    pass\n"
             "loaded = sorted(m for m in sys.modules if m.startswith(('torchleaklint.analysis', 'torchleaklint.rules.',"
             " 'rich', 'libcst', 'torchleaklint.engine.lint', 'torchleaklint.engine.fix', '_hashlib')))\n"
             "print('LOADED', loaded, file=sys.stderr)\n")
    cold = subprocess.run([sys.executable, "-c", probe, str(project)], env=env, capture_output=True, text=True,
                          timeout=120)
    assert "torchleaklint.analysis" in cold.stderr  # the cold run analyses
    warm = subprocess.run([sys.executable, "-c", probe, str(project)], env=env, capture_output=True, text=True,
                          timeout=120)
    assert "LOADED []" in warm.stderr, warm.stderr
    assert warm.stdout == cold.stdout and "TLL001" in warm.stdout
