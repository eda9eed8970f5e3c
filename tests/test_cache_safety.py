"""The cache folder is data the tool wrote, never code and never the user's files: planted
payloads do not run, foreign or damaged content is ignored with one warning, `clean`
removes only the tool's own tagged folder, and a file rewritten behind the cache's back
(same size, old modification time restored) is linted again."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from torchleaklint.config import Settings
from torchleaklint.engine.cache import Cache, read_json, read_lines, tool_fingerprint
from torchleaklint.engine.cache_folder import CACHEDIR_SIGNATURE
from torchleaklint.engine.snapshot import Snapshots
from torchleaklint.runner import run

from .snippets import TLL001_SRC, TLL002_SRC

NEUTRAL = "[tool.other]\nx = 1\n"


class _RunsACommand:
    """A pickle that, when loaded, creates the file named by ``marker``."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def tll(args, cwd: Path, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "torchleaklint", *args], cwd=cwd, capture_output=True, text=True,
                          env=dict(os.environ, NO_COLOR="1", **env), timeout=60)


def old(path: Path) -> None:
    os.utime(path, (1_600_000_000, 1_600_000_000))


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text(NEUTRAL)
    for name, src in (("a.py", TLL001_SRC), ("b.py", TLL002_SRC)):
        (tmp_path / name).write_text(src)
        old(tmp_path / name)
    return tmp_path


def test_the_payload_is_understood_by_pickle(tmp_path):
    """The planted payload is a real one: loading it with pickle does run the command."""
    marker = tmp_path / "ran"
    pickle.loads(pickle.dumps(_RunsACommand(str(marker))))
    assert marker.exists()


@pytest.mark.parametrize("where", ["current names", "former pickle names"])
def test_a_planted_pickle_payload_never_runs(project, where):
    cold = tll(["."], project)
    folder = project / ".torchleaklint_cache"
    suffix = ".json" if where == "current names" else ".pickle"
    marker = project / "pwned"
    payload = pickle.dumps({"format": 1, "tool": tool_fingerprint(), "entries": _RunsACommand(str(marker))})
    for kind in ("cache", "runs"):
        (folder / f"{kind}-{tool_fingerprint()[:20]}{suffix}").write_bytes(payload)
    warm = tll(["."], project)
    assert not marker.exists()
    assert warm.stdout == cold.stdout and warm.returncode == cold.returncode == 1
    warnings = warm.stderr.splitlines()
    if where == "current names":
        # Both files are read and refused by their first line, each with one warning.
        assert len(warnings) == 2, warm.stderr
        assert all(w.startswith("torchleaklint: warning: ignoring unreadable cache") and
                   "not written by this torchleaklint" in w for w in warnings), warnings
    else:  # files of the former format are never opened
        assert warnings == []
    assert tll(["."], project).stderr == ""  # rebuilt


def test_cache_files_are_a_header_line_and_json(project):
    tll(["."], project)
    folder = project / ".torchleaklint_cache"
    files = sorted(folder.glob("*.json"))
    assert [p.name.split("-")[0] for p in files] == ["cache", "runs"]
    for path in files:
        header, *lines = path.read_bytes().split(b"\n")
        assert header == f"torchleaklint-cache 2 {tool_fingerprint()}".encode()
        assert lines[-1] == b"" and all(json.loads(part) for line in lines[:-1] for part in line.split(b"\t"))
    entries = (folder / files[0].name).read_bytes().split(b"\n")[1:-1]
    assert sorted(json.loads(line.partition(b"\t")[0]) for line in entries) == [str(project / "a.py"),
                                                                                  str(project / "b.py")]
    assert (folder / "CACHEDIR.TAG").read_text().startswith(CACHEDIR_SIGNATURE + "\n")


def _rewrite_lines(path: Path, edit) -> None:
    """Apply ``edit`` to the JSON value of each line after the header (a per-file cache
    line is ``path<TAB>entry``: ``edit`` gets and returns ``[path, entry]``)."""
    header, *lines = path.read_bytes().split(b"\n")
    out = [header]
    for line in filter(None, lines):
        if b"\t" in line:
            key, _, entry = line.partition(b"\t")
            path_value, entry_value = edit([json.loads(key), json.loads(entry)])
            out.append(json.dumps(path_value).encode() + b"\t" + json.dumps(entry_value).encode())
        else:
            out.append(json.dumps(edit(json.loads(line))).encode())
    path.write_bytes(b"\n".join(out))


@pytest.mark.parametrize("damage", [
    lambda line: [line[0], {"path": line[1]}],          # an object where the entry goes
    lambda line: [[line[0]], line[1]],                    # a list for the path
    lambda line: [line[0], line[1][:-1]],                # an entry one field short
    lambda line: [line[0], [{"__class__": "os.system"}] + line[1][1:]],  # an object for the stat
    lambda line: [line[0], line[1][:1] + [7] + line[1][2:]],  # a number where the hash goes
], ids=["object", "list for path", "short entry", "object for stat", "number for hash"])
def test_well_formed_json_of_the_wrong_shape_is_ignored_with_one_warning(project, damage):
    cold = run([str(project)], Settings(), cache=True, cache_dir=str(project / "c"))
    _rewrite_lines(Path(Cache(project / "c").path), damage)
    Path(Snapshots(project / "c").path).unlink()  # else the run never reads the per-file cache
    warm = run([str(project)], Settings(), cache=True, cache_dir=str(project / "c"))
    assert len(warm.warnings) == 1, warm.warnings  # for the whole file, or for its damaged entries
    assert all("ignoring" in w and "cache" in w for w in warm.warnings), warm.warnings
    assert warm.diagnostics == cold.diagnostics and warm.cached_files == 0
    assert run([str(project)], Settings(), cache=True, cache_dir=str(project / "c")).warnings == []  # rebuilt


def test_a_damaged_run_snapshot_is_ignored_with_one_warning(project):
    cold = run([str(project)], Settings(), cache=True, cache_dir=str(project / "c"))
    _rewrite_lines(Path(Snapshots(project / "c").path),
                  lambda runs: {k: [v[0], [[p, [["TLL001", None]]] for p, _ in v[1]]] for k, v in runs.items()})
    warm = run([str(project)], Settings(), cache=True, cache_dir=str(project / "c"))
    assert len(warm.warnings) == 1 and "ignoring unreadable cache" in warm.warnings[0], warm.warnings
    assert sorted(warm.diagnostics, key=lambda d: d.sort_key()) == sorted(cold.diagnostics, key=lambda d: d.sort_key())


@pytest.mark.parametrize("body", [b"[" * 200_000, b"{\"a\": " * 100_000, b"\xff\xfe", b"NaN", b"\"a.py\"\t" + b"[" * 200_000])
def test_hostile_json_is_ignored_with_one_warning(tmp_path, body):
    path = tmp_path / f"cache-{tool_fingerprint()[:20]}.json"
    path.write_bytes(f"torchleaklint-cache 2 {tool_fingerprint()}\n".encode() + body)
    warnings = []
    assert not isinstance(read_json(str(path), warnings), dict)
    assert len(warnings) <= 1
    cache = Cache.open(tmp_path)
    found = [cache.entries.get(name) for name in ("a.py", "b.py")]
    assert found == [None, None] and len(cache.entries) <= 1 and len(cache.warnings) == 1, cache.warnings


def test_a_cache_file_of_another_fingerprint_is_refused_by_its_first_line(tmp_path):
    path = tmp_path / "cache.json"
    path.write_bytes(b"torchleaklint-cache 2 0123456789abcdef0123456789abcdef\n{}")
    warnings = []
    assert read_lines(str(path), warnings) is None
    assert len(warnings) == 1 and "not written by this torchleaklint" in warnings[0]


# --- a file rewritten behind the cache's back --------------------------------------------

@pytest.mark.parametrize("through", ["run snapshot", "per-file cache"])
def test_same_size_rewrite_with_the_old_mtime_restored_is_linted_again(project, through):
    target = project / "a.py"
    cold = run([str(project)], Settings(), cache=True, cache_dir=str(project / "c"))
    assert {d.code for d in cold.diagnostics} == {"TLL001", "TLL002"}
    before = os.stat(target)
    edited = TLL001_SRC.replace("losses.append(loss)", "losses.append(x[0])")
    assert len(edited) == len(TLL001_SRC)
    target.write_text(edited)
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))  # as some sync tools do
    after = os.stat(target)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    if through == "per-file cache":
        Path(Snapshots(project / "c").path).unlink()
    warm = run([str(project)], Settings(), cache=True, cache_dir=str(project / "c"))
    assert {d.code for d in warm.diagnostics} == {"TLL002"}


# --- clean and the cache folder --------------------------------------------------------

def test_clean_refuses_a_source_folder_and_deletes_nothing(project):
    (project / "src").mkdir()
    (project / "src" / "model.py").write_text("x = 1\n")
    proc = tll(["clean"], project, TORCHLEAKLINT_CACHE_DIR="src")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == ["torchleaklint: error: refusing to remove src: it has no torchleaklint "
                                        "CACHEDIR.TAG, so it is not a torchleaklint cache folder"]
    assert (project / "src" / "model.py").read_text() == "x = 1\n"


def test_clean_refuses_the_current_folder(project):
    proc = tll(["clean"], project, TORCHLEAKLINT_CACHE_DIR=".")
    assert proc.returncode == 2 and "refusing to remove ." in proc.stderr
    assert sorted(p.name for p in project.iterdir()) == ["a.py", "b.py", "pyproject.toml"]


def test_clean_refuses_a_tagged_folder_holding_other_files(project):
    tll(["."], project)
    folder = project / ".torchleaklint_cache"
    (folder / "notes.txt").write_text("mine\n")
    kept = sorted(p.name for p in folder.iterdir())
    proc = tll(["clean"], project)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == ["torchleaklint: error: refusing to remove .torchleaklint_cache: it holds "
                                        "'notes.txt', which torchleaklint did not write (1 such item)"]
    assert sorted(p.name for p in folder.iterdir()) == kept


def test_clean_refuses_a_foreign_cachedir_tag(project):
    folder = project / "other_cache"
    folder.mkdir()
    (folder / "CACHEDIR.TAG").write_text(CACHEDIR_SIGNATURE + "\n# created by another tool\n")
    proc = tll(["clean"], project, TORCHLEAKLINT_CACHE_DIR="other_cache")
    assert proc.returncode == 2 and "no torchleaklint CACHEDIR.TAG" in proc.stderr
    assert (folder / "CACHEDIR.TAG").exists()


def test_clean_removes_the_tools_own_folder(project):
    tll(["."], project, TORCHLEAKLINT_CACHE_DIR="c")
    (project / "c" / ".cache-x1.tmp").write_bytes(b"left by a killed write")
    proc = tll(["clean"], project, TORCHLEAKLINT_CACHE_DIR="c")
    assert (proc.returncode, proc.stdout) == (0, "Removed c\n")
    assert not (project / "c").exists()


@pytest.mark.parametrize("setting, problem", [
    ("deep/missing/path", "the parent folder of deep/missing/path does not exist"),
    ("a.py", "a.py exists and is not a folder"),
    ("src", "src holds files and no torchleaklint CACHEDIR.TAG"),
])
def test_a_bad_cache_folder_is_one_error_and_creates_nothing(project, setting, problem):
    (project / "src").mkdir()
    (project / "src" / "model.py").write_text("x = 1\n")
    before = sorted(str(p.relative_to(project)) for p in project.rglob("*"))
    proc = tll(["."], project, TORCHLEAKLINT_CACHE_DIR=setting)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.splitlines() == [f"torchleaklint: error: cannot use the cache folder: {problem} "
                                        f"(set TORCHLEAKLINT_CACHE_DIR to another folder, or use --no-cache)"]
    assert sorted(str(p.relative_to(project)) for p in project.rglob("*")) == before
    assert tll([".", "--no-cache"], project, TORCHLEAKLINT_CACHE_DIR=setting).returncode == 1


def test_an_empty_folder_named_for_the_cache_is_used_and_tagged(project):
    (project / "empty").mkdir()
    assert tll(["."], project, TORCHLEAKLINT_CACHE_DIR="empty").returncode == 1
    assert (project / "empty" / "CACHEDIR.TAG").exists()


def test_save_rewrites_the_lines_of_changed_entries_only(project):
    cache_dir = project / "c"
    run([str(project)], Settings(), cache=True, cache_dir=str(cache_dir))
    cache_file = Path(Cache(cache_dir).path)
    before = dict(json_lines(cache_file))
    (project / "a.py").write_text(TLL001_SRC.replace("losses.append(loss)", "losses.append(x[0])"))
    edited = run([str(project)], Settings(), cache=True, cache_dir=str(cache_dir))
    assert {d.code for d in edited.diagnostics} == {"TLL002"}
    after = dict(json_lines(cache_file))
    assert after[str(project / "b.py")] == before[str(project / "b.py")]  # written back as read
    assert after[str(project / "a.py")] != before[str(project / "a.py")]
    Path(Snapshots(cache_dir).path).unlink()  # answer from the per-file lines just written
    again = run([str(project)], Settings(), cache=True, cache_dir=str(cache_dir))
    assert again.cached_files == 2 and again.diagnostics == edited.diagnostics


def json_lines(path: Path):
    for line in path.read_bytes().split(b"\n")[1:]:
        if line:
            yield json.loads(line.partition(b"\t")[0]), line
