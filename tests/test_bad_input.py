"""Bad and unusual input, one row per case, through the real program: the exit code, the
one line that explains the problem, and what is on disk after ``--fix --unsafe-fixes``
(byte-identical unless the case is a leak that must be fixed)."""

from __future__ import annotations

import base64
import codecs
import os
import random
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional

import pytest

from torchleaklint.config import Settings
from torchleaklint.engine.source import decode_source
from torchleaklint.runner import run, write_back

from .snippets import TLL001_FIXED, TLL001_SRC, TLL002_FIXED, TLL002_SRC

NEUTRAL = "[tool.other]\nx = 1\n"
SETPRIV = shutil.which("setpriv")
# Root ignores file permissions; dropping the two capabilities that let it do so makes
# permission cases real without a second user.
DROP_DAC = [SETPRIV, "--inh-caps=-dac_override,-dac_read_search",
            "--bounding-set=-dac_override,-dac_read_search"] if SETPRIV else None


def can_drop_permissions() -> bool:
    if os.geteuid() != 0:
        return True
    if DROP_DAC is None:
        return False
    return subprocess.run([*DROP_DAC, "true"], capture_output=True).returncode == 0


def tll(args: List[str], cwd: Path, honour_permissions: bool = False) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_COLOR="1")
    prefix = DROP_DAC if honour_permissions and os.geteuid() == 0 else []
    return subprocess.run([*prefix, sys.executable, "-m", "torchleaklint", *args], cwd=cwd, capture_output=True,
                          text=True, env=env, timeout=120)


def snapshot(root: Path) -> Dict[str, bytes]:
    out = {}
    for folder, dirs, names in os.walk(root):
        for name in dirs + names:
            path = Path(folder, name)
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                out[rel] = b"-> " + os.readlink(path).encode()
            elif path.is_file():
                try:
                    out[rel] = path.read_bytes()
                except PermissionError:
                    out[rel] = b"<unreadable>"
    return out


def generated_5mb() -> bytes:
    """A generated resource module (like pyrcc or protobuf output) of about 5 MB."""
    rng = random.Random(0)
    rows = "".join(f"    '{base64.b64encode(rng.randbytes(57)).decode()}'\n" for _ in range(61_000))
    return ("# Generated file. Do not edit.\nimport torch\n\nBLOB = (\n" + rows + ")\n\n"
            "def load():\n    return torch.frombuffer(bytearray(BLOB, 'ascii'), dtype=torch.uint8)\n").encode()


@dataclass
class Case:
    name: str
    files: Callable[[Path], None]  # builds the tree
    exit_code: int
    message: Optional[str]  # a fragment of the one line that explains the problem
    stream: str = "stdout"  # stdout: a TLL000 finding; stderr: a `torchleaklint: error:` line
    fixed: Optional[Dict[str, bytes]] = None  # files --fix must rewrite, to these bytes
    args: tuple = (".",)
    honour_permissions: bool = False


def write(tmp: Path, name: str, data) -> Path:
    path = tmp / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


def symlink_loops(tmp: Path) -> None:
    write(tmp, "pkg/clean.py", TLL001_FIXED)
    os.symlink(".", tmp / "pkg" / "again")           # a folder that contains itself
    os.symlink("loop_b.py", tmp / "pkg" / "loop_a.py")  # two links pointing at each other
    os.symlink("loop_a.py", tmp / "pkg" / "loop_b.py")
    os.symlink("missing.py", tmp / "pkg" / "dangling.py")


def symlinks_outside(tmp: Path) -> None:
    # The tree is tmp/proj; the leaking files live outside it and must never be touched.
    write(tmp, "outside/leak.py", TLL001_SRC)
    write(tmp, "outside/lib/leak2.py", TLL002_SRC)
    write(tmp, "proj/clean.py", TLL001_FIXED)
    os.symlink("../outside/leak.py", tmp / "proj" / "linked.py")
    os.symlink("../outside/lib", tmp / "proj" / "linked_dir")
    write(tmp, "proj/pyproject.toml", NEUTRAL)


def permission_denied_dir(tmp: Path) -> None:
    write(tmp, "ok.py", TLL001_SRC)
    write(tmp, "locked/inner.py", TLL002_SRC)
    os.chmod(tmp / "locked", 0o000)


def unreadable_file(tmp: Path) -> None:
    write(tmp, "secret.py", TLL002_SRC)
    os.chmod(tmp / "secret.py", 0o000)


def read_only(tmp: Path) -> None:
    write(tmp, "ro.py", TLL001_SRC)
    os.chmod(tmp / "ro.py", 0o444)


def fifo(tmp: Path) -> None:
    write(tmp, "ok.py", TLL001_FIXED)
    os.mkfifo(tmp / "pipe.py")  # opening it for reading would block until a writer comes


def unix_socket(tmp: Path) -> None:
    import socket

    write(tmp, "ok.py", TLL001_FIXED)
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp / "sock.py"))


MIXED_SRC = TLL001_SRC.replace("\n", "\r\n", 4)  # CRLF on the first four lines, LF after
TABS_SRC = TLL002_SRC.replace("    ", "\t")

CASES = [
    Case("syntax error", lambda t: write(t, "bad.py", "import torch\n\ndef f(:\n    pass\n"), 1,
         "bad.py:3:7: TLL000 SyntaxError"),
    Case("python 3.6 code with `async` as a keyword argument: checked, not fixed",
         lambda t: write(t, "py36.py", TLL001_SRC.replace("for x, y in loader:\n",
                                                          "for x, y in loader:\n    y = y.cuda(async=True)\n")),
         1, "py36.py:1:1: TLL000 not fixed: the file is valid only in an older Python"),
    Case("python 2 code", lambda t: write(t, "old.py", "import torch\nprint 'loss', loss\n"), 1,
         "old.py:2:1: TLL000 SyntaxError: Missing parentheses in call to 'print'"),
    Case("tabs and spaces mixed inconsistently", lambda t: write(t, "tabs.py", "if x:\n\ty = 1\n        z = 2\n"), 1,
         "tabs.py:3:"),
    Case("undecodable bytes", lambda t: write(t, "bytes.py", b"import torch\ns = '\xff\xfe'\n"), 1,
         "bytes.py:2:6: TLL000 file is not valid utf-8"),
    Case("unknown coding cookie on bytes that are not UTF-8",
         lambda t: write(t, "cookie.py", b"# coding: klingon\nx = '\xff'\n"), 1,
         "cookie.py:1:1: TLL000 cannot determine the file's encoding: unknown encoding: klingon"),
    Case("unknown coding cookie on UTF-8 text (a source-rewriting codec such as future_fstrings)",
         lambda t: write(t, "fstr.py", ("# -*- coding: future_fstrings -*-\n# Größe\n" + TLL001_SRC).encode()), 0,
         "Found 1 error (1 fixed, 0 remaining).",
         fixed={"fstr.py": ("# -*- coding: future_fstrings -*-\n# Größe\n" + TLL001_FIXED).encode()}),
    Case("unknown coding cookie on UTF-8 text that does not parse",
         lambda t: write(t, "pyxl.py", b"# coding: pyxl\nx = <div>hi</div>\n"), 1,
         "pyxl.py:2:5: TLL000 SyntaxError"),
    Case("BOM contradicting a latin-1 cookie",
         lambda t: write(t, "bomcookie.py", codecs.BOM_UTF8 + b"# coding: latin-1\nx = 1\n"), 1,
         "bomcookie.py:1:1: TLL000 cannot determine the file's encoding"),
    Case("NUL byte", lambda t: write(t, "nul.py", b"import torch\nx = 1\x00\n"), 1,
         "nul.py:2:1: TLL000 source contains a NUL byte"),
    Case("empty file", lambda t: write(t, "empty.py", b""), 0, "All checks passed!"),
    Case("only a BOM", lambda t: write(t, "bom.py", codecs.BOM_UTF8), 0, "All checks passed!"),
    Case("5 MB generated file, over the default size limit", lambda t: write(t, "generated_rc.py", generated_5mb()),
         1, "generated_rc.py:1:1: TLL000 skipped: too large (4.8 MB; the limit is max-file-size-mb = 4)"),
    Case("5 MB generated file, within a raised size limit",
         lambda t: (write(t, "generated_rc.py", generated_5mb()),
                    write(t, "pyproject.toml", "[tool.torchleaklint]\nmax-file-size-mb = 8\n")), 0, "All checks passed!"),
    Case("a file over a lowered size limit",
         lambda t: (write(t, "a.py", TLL001_SRC), write(t, "pyproject.toml", "[tool.torchleaklint]\nmax-file-size-mb = 0.0001\n")),
         1, f"a.py:1:1: TLL000 skipped: too large ({len(TLL001_SRC)} bytes; the limit is max-file-size-mb = 0.0001)"),
    Case("20,000 elifs", lambda t: write(t, "elifs.py", "x = 1\nif x == 0:\n    pass\n" + "".join(
        f"elif x == {i}:\n    pass\n" for i in range(1, 20_000))), 1,
         "elifs.py:1:1: TLL000 cannot parse file: too deeply nested for Python's parser (MemoryError)"),
    Case("hard-linked file", lambda t: (write(t, "a.py", TLL001_SRC), os.link(t / "a.py", t / "a_copy.txt")), 1,
         "a.py:1:1: TLL000 not fixed: the file has 2 hard links, and the fix (written to a new file that replaces "
         "this name) would separate them"),
    Case("FIFO found in a folder", fifo, 1, "pipe.py:1:1: TLL000 skipped: a FIFO, not a regular file"),
    Case("FIFO named on the command line", fifo, 1, "pipe.py:1:1: TLL000 skipped: a FIFO, not a regular file",
         args=("pipe.py", "ok.py")),
    Case("socket found in a folder", unix_socket, 1, "sock.py:1:1: TLL000 skipped: a socket, not a regular file"),
    Case("latin-1 with a coding cookie",
         lambda t: write(t, "latin.py", ("# -*- coding: latin-1 -*-\n# Größe\n" + TLL001_SRC).encode("latin-1")), 0,
         "Found 1 error (1 fixed, 0 remaining).",
         fixed={"latin.py": ("# -*- coding: latin-1 -*-\n# Größe\n" + TLL001_FIXED).encode("latin-1")}),
    Case("CRLF and LF mixed", lambda t: write(t, "mixed.py", MIXED_SRC), 0, "(1 fixed, 0 remaining)",
         fixed={"mixed.py": MIXED_SRC.replace("append(loss)", "append(loss.item())").encode()}),
    Case("tab indentation", lambda t: write(t, "tabs.py", TABS_SRC), 0, "(1 fixed, 0 remaining)",
         fixed={"tabs.py": TABS_SRC.replace("total += loss", "total += loss.item()").encode()}),
    Case("BOM and CRLF", lambda t: write(t, "bom.py", codecs.BOM_UTF8 + TLL002_SRC.replace("\n", "\r\n").encode()), 0,
         "(1 fixed, 0 remaining)",
         fixed={"bom.py": codecs.BOM_UTF8 + TLL002_FIXED.replace("\n", "\r\n").encode()}),
    Case("read-only file", read_only, 1, "ro.py:1:1: TLL000 not fixed: the file is read-only"),
    Case("symlink loops and a dangling link", symlink_loops, 0, "All checks passed!"),
    Case("symlinks pointing outside the tree", symlinks_outside, 0, "All checks passed!", args=("proj",)),
    Case("non-existent path", lambda t: None, 2, "torchleaklint: error: no/such.py: no such file or directory",
         stream="stderr", args=("no/such.py",)),
    Case("unknown rule code in --select", lambda t: write(t, "a.py", TLL001_SRC), 2, "TLL042",
         stream="stderr", args=("--select", "TLL001,TLL042", ".")),
    Case("malformed pyproject.toml", lambda t: (write(t, "a.py", TLL001_SRC),
                                                write(t, "pyproject.toml", "[tool.torchleaklint\nselect = [\n")), 2,
         "pyproject.toml", stream="stderr"),
    Case("wrong type in pyproject.toml", lambda t: (write(t, "a.py", TLL001_SRC),
                                                    write(t, "pyproject.toml", "[tool.torchleaklint]\nselect = 3\n")),
         2, "select", stream="stderr"),
    Case("pyproject.toml that is not UTF-8",
         lambda t: (write(t, "a.py", TLL001_SRC), write(t, "pyproject.toml", b"[tool.torchleaklint]\n# Gr\xf6\xdfe\n")),
         2, "pyproject.toml: not valid UTF-8, as TOML files must be (byte 0xf6 at offset 25)", stream="stderr"),
    Case("--config file that is not UTF-8",
         lambda t: (write(t, "a.py", TLL001_SRC), write(t, "lint.toml", b"select = ['TLL001'] # \xff\n")),
         2, "lint.toml: not valid UTF-8", stream="stderr", args=("--config", "lint.toml", ".")),
    Case("--config naming a FIFO", lambda t: (write(t, "a.py", TLL001_SRC), os.mkfifo(t / "lint.toml")),
         2, "lint.toml: config file not found", stream="stderr", args=("--config", "lint.toml", ".")),
    Case("max-file-size-mb that is not a number",
         lambda t: (write(t, "a.py", TLL001_SRC), write(t, "pyproject.toml", "[tool.torchleaklint]\nmax-file-size-mb = '4'\n")),
         2, "max-file-size-mb: expected a number of megabytes from 0 (no limit) to 1048576, got '4'", stream="stderr"),
    Case("max-file-size-mb that is nan",
         lambda t: (write(t, "a.py", TLL001_SRC), write(t, "pyproject.toml", "[tool.torchleaklint]\nmax-file-size-mb = nan\n")),
         2, "max-file-size-mb: expected a number of megabytes", stream="stderr"),
    Case("permission-denied folder", permission_denied_dir, 1, "locked:1:1: TLL000 cannot read directory",
         fixed={"ok.py": TLL001_FIXED.encode()}, honour_permissions=True),
    Case("unreadable file", unreadable_file, 1, "secret.py:1:1: TLL000 cannot read file: Permission denied",
         honour_permissions=True),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input(case: Case, tmp_path):
    if case.honour_permissions and not can_drop_permissions():
        pytest.skip("running as root without setpriv: file permissions cannot be enforced")
    (tmp_path / "pyproject.toml").write_text(NEUTRAL)
    case.files(tmp_path)
    before = snapshot(tmp_path)
    try:
        proc = tll(["--fix", "--unsafe-fixes", *case.args], tmp_path, case.honour_permissions)
        after = snapshot(tmp_path)
    finally:
        for folder, dirs, _ in os.walk(tmp_path):  # let pytest clean up
            for d in dirs:
                if not Path(folder, d).is_symlink():
                    os.chmod(Path(folder, d), 0o755)
    output = proc.stdout + proc.stderr
    assert "Traceback" not in output, output
    assert proc.returncode == case.exit_code, output
    if case.stream == "stderr":
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert len(lines) == 1, proc.stderr
        assert lines[0].startswith("torchleaklint: error: ") and case.message in lines[0], lines[0]
        assert proc.stdout == ""
    else:
        assert proc.stderr == ""
        hits = [line for line in proc.stdout.splitlines() if case.message in line]
        assert len(hits) == 1, proc.stdout
        if "TLL000" in case.message:
            assert sum("TLL000" in line for line in proc.stdout.splitlines()) == 1, proc.stdout
    expected = dict(before)
    for name, data in (case.fixed or {}).items():
        assert before[name] != data
        expected[name] = data
    assert after == expected


def test_hard_links_are_kept(tmp_path):
    write(tmp_path, "a.py", TLL001_SRC)
    os.link(tmp_path / "a.py", tmp_path / "b.py")
    (tmp_path / "pyproject.toml").write_text(NEUTRAL)
    tll(["--fix", "."], tmp_path)
    assert os.stat(tmp_path / "a.py").st_nlink == 2
    assert os.path.samefile(tmp_path / "a.py", tmp_path / "b.py")
    assert (tmp_path / "a.py").read_text() == TLL001_SRC


@pytest.mark.parametrize("output_format", ["full", "concise"])
def test_a_file_name_with_a_newline_stays_on_one_line(tmp_path, output_format):
    write(tmp_path, "bad\nname.py", TLL001_SRC)
    write(tmp_path, "tab\tand\x1b[31mred.py", TLL001_SRC)
    (tmp_path / "pyproject.toml").write_text(NEUTRAL)
    proc = tll(["--output-format", output_format, "--no-cache", "."], tmp_path)
    located = [line for line in proc.stdout.splitlines() if ":7:5: TLL001" in line]
    assert [line.split(":7:5:")[0] for line in located] == ["bad\\nname.py", "tab\\tand\\x1b[31mred.py"]
    assert "\x1b" not in proc.stdout
    fixed = tll(["--fix", "--show-fixes", "."], tmp_path)
    assert "- bad\\nname.py:" in fixed.stdout.splitlines()
    assert (tmp_path / "bad\nname.py").read_text() == TLL001_FIXED


def test_read_only_file_keeps_its_mode(tmp_path):
    read_only(tmp_path)
    (tmp_path / "pyproject.toml").write_text(NEUTRAL)
    tll(["--fix", "ro.py"], tmp_path)
    assert stat.S_IMODE(os.stat(tmp_path / "ro.py").st_mode) == 0o444
    assert (tmp_path / "ro.py").read_text() == TLL001_SRC


def test_symlink_listed_before_its_target_still_fixes_the_target(tmp_path):
    """In a folder walk a linked file is not followed; the real file is fixed where it is."""
    write(tmp_path, "z_real.py", TLL001_SRC)
    os.symlink("z_real.py", tmp_path / "a_link.py")
    (tmp_path / "pyproject.toml").write_text(NEUTRAL)
    proc = tll(["--fix", "."], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "z_real.py").read_text() == TLL001_FIXED
    assert (tmp_path / "a_link.py").is_symlink()


@pytest.mark.parametrize("args", [["."], ["pipe.py"], ["--no-cache", "."], ["-j", "2", "."], ["--add-noqa", "."]])
def test_a_fifo_never_blocks_a_run(tmp_path, args):
    """Checking (through the run snapshot, the per-file cache, the process pool) and
    --add-noqa: each run ends well within the timeout instead of waiting for a writer."""
    fifo(tmp_path)
    os.mkfifo(tmp_path / ".gitignore")
    (tmp_path / "pyproject.toml").write_text(NEUTRAL)
    for _ in range(2):  # cold, then warm
        proc = subprocess.run([sys.executable, "-m", "torchleaklint", *args], cwd=tmp_path, capture_output=True,
                              text=True, env=dict(os.environ, NO_COLOR="1"), timeout=60)
        assert "Traceback" not in proc.stderr, proc.stderr
        assert proc.returncode == (0 if "--add-noqa" in args else 1), proc.stdout + proc.stderr


def test_read_regular_refuses_special_files_without_opening_them(tmp_path):
    from torchleaklint.engine.file_gate import NotRegularFile, read_regular

    os.mkfifo(tmp_path / "pipe.py")
    with pytest.raises(NotRegularFile, match="a FIFO, not a regular file"):
        read_regular(str(tmp_path / "pipe.py"))
    with pytest.raises(NotRegularFile, match="a character device"):
        read_regular("/dev/null")


def test_symlink_loop_named_explicitly_is_tll000(tmp_path):
    os.symlink("b.py", tmp_path / "a.py")
    os.symlink("a.py", tmp_path / "b.py")
    (tmp_path / "pyproject.toml").write_text(NEUTRAL)
    proc = tll(["--fix", "a.py"], tmp_path)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("a.py:1:1: TLL000 cannot read file: Too many levels of symbolic links"), proc.stdout
    assert os.readlink(tmp_path / "a.py") == "b.py"


# --- races with other programs (in-process, to hit the exact moment) -------------------

def test_file_deleted_between_discovery_and_reading(tmp_path, monkeypatch):
    import torchleaklint.runner as runner

    gone = write(tmp_path, "gone.py", TLL001_SRC)
    kept = write(tmp_path, "kept.py", TLL002_SRC)
    discover = runner.discover

    def discover_then_delete(*args, **kwargs):
        files = discover(*args, **kwargs)
        gone.unlink()
        return files

    monkeypatch.setattr(runner, "discover", discover_then_delete)
    result = run([str(tmp_path)], Settings(), fix=True)
    problems = [(d.path, d.code, d.message) for d in result.diagnostics]
    assert problems == [(str(gone), "TLL000", "cannot read file: No such file or directory")]
    assert not gone.exists()
    assert kept.read_text() == TLL002_FIXED


def test_file_deleted_while_being_fixed_is_not_recreated(tmp_path, monkeypatch):
    import torchleaklint.engine.fix as fixer

    path = write(tmp_path, "a.py", TLL001_SRC)
    fix_source = fixer.fix_source

    def fix_then_delete(*args, **kwargs):
        outcome = fix_source(*args, **kwargs)
        path.unlink()
        return outcome

    monkeypatch.setattr(fixer, "fix_source", fix_then_delete)
    result = run([str(path)], Settings(), fix=True)
    assert not path.exists()
    assert result.changed_files == []
    assert any(d.code == "TLL000" and "not fixed" in d.message for d in result.diagnostics)
    assert [p.name for p in tmp_path.iterdir()] == []


def test_file_edited_while_being_fixed_keeps_the_edit(tmp_path):
    """Someone saved the file after it was read: the fix is dropped, not written over it."""
    path = write(tmp_path, "a.py", TLL001_SRC)
    source = decode_source(path.read_bytes())
    edited = TLL001_SRC + "print('edited meanwhile')\n"
    path.write_text(edited)
    problem = write_back(str(path), source, TLL001_FIXED)
    assert problem == "not fixed: the file changed on disk while it was being fixed"
    assert path.read_text() == edited


def test_file_already_fixed_by_someone_else_is_fine(tmp_path):
    path = write(tmp_path, "a.py", TLL001_SRC)
    source = decode_source(path.read_bytes())
    path.write_text(TLL001_FIXED)
    inode = os.stat(path).st_ino
    assert write_back(str(path), source, TLL001_FIXED) is None
    assert path.read_text() == TLL001_FIXED
    assert os.stat(path).st_ino == inode  # nothing was written
