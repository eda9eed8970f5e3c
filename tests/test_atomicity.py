"""A ``--fix`` run that is killed, or that runs beside another one, never leaves a
truncated or half-written file: every file is the original or the fully fixed version."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict

import pytest

from torchleaklint.engine.fix import atomic_write

from .snippets import BOTH_SRC

NEUTRAL = "[tool.other]\nx = 1\n"
# Real-looking padding so that each file takes a while to write and to lint.
PADDING = "".join(
    f"\n\ndef helper_{i}(values, scale={i}):\n"
    f"    # keeps a running maximum (block {i})\n"
    f"    best = None\n"
    f"    for v in values:\n"
    f"        if best is None or v * scale > best:\n"
    f"            best = v * scale\n"
    f"    return best\n"
    for i in range(20)
)
SOURCE = BOTH_SRC + PADDING


def tll_command(*args: str):
    return [sys.executable, "-m", "torchleaklint", "--no-color", *args]


def env():
    return dict(os.environ, NO_COLOR="1")


def fixed_version(tmp_path: Path) -> str:
    """The content that one ``--fix --unsafe-fixes`` run gives one copy."""
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "pyproject.toml").write_text(NEUTRAL)
    (probe / "one.py").write_text(SOURCE)
    proc = subprocess.run(tll_command("--fix", "--unsafe-fixes", "one.py"), cwd=probe, capture_output=True,
                          text=True, env=env(), timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    fixed = (probe / "one.py").read_text()
    assert fixed != SOURCE and "loss.item()" in fixed
    return fixed


def make_tree(root: Path, count: int) -> Dict[Path, str]:
    root.mkdir()
    (root / "pyproject.toml").write_text(NEUTRAL)
    files = {}
    for i in range(count):
        path = root / f"pkg{i % 10}" / f"train_{i:04d}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text(SOURCE)
        files[path] = SOURCE
    return files


def states(files, fixed: str) -> Dict[str, int]:
    counts = {"original": 0, "fixed": 0}
    for path in files:
        text = path.read_text()
        assert text in (SOURCE, fixed), f"{path} is neither the original nor the fixed version:\n{text[:400]}"
        counts["original" if text == SOURCE else "fixed"] += 1
    return counts


def test_sigkill_mid_run_leaves_every_file_whole(tmp_path):
    fixed = fixed_version(tmp_path)
    root = tmp_path / "tree"
    files = make_tree(root, 150)
    proc = subprocess.Popen(tll_command("--fix", "--unsafe-fixes", "."), cwd=root, env=env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    try:
        # Kill as soon as the run has started writing.
        while time.monotonic() < deadline and proc.poll() is None:
            if any(os.stat(p).st_size != len(SOURCE) for p in files):
                break
            time.sleep(0.002)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    counts = states(files, fixed)
    assert counts["fixed"] >= 1 and counts["original"] >= 1, counts
    # Whatever a killed run left behind (at most a temporary file) does not disturb the next run.
    leftovers = [p for p in root.rglob("*") if p.is_file() and p.suffix != ".py" and p.name != "pyproject.toml"]
    assert all(p.name.startswith(".torchleaklint-") and p.suffix == ".tmp" for p in leftovers), leftovers
    again = subprocess.run(tll_command("--fix", "--unsafe-fixes", "."), cwd=root, capture_output=True, text=True,
                           env=env(), timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    assert states(files, fixed) == {"original": 0, "fixed": len(files)}


def test_two_fix_runs_at_once_leave_valid_files(tmp_path):
    fixed = fixed_version(tmp_path)
    root = tmp_path / "tree"
    files = make_tree(root, 40)
    runs = [subprocess.Popen(tll_command("--fix", "--unsafe-fixes", "."), cwd=root, env=env(), text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    outputs = [run.communicate(timeout=300) for run in runs]
    for run, (out, err) in zip(runs, outputs):
        assert "Traceback" not in err, err
        assert run.returncode in (0, 1), out + err
    assert states(files, fixed) == {"original": 0, "fixed": len(files)}
    for path in files:
        compile(path.read_bytes(), str(path), "exec")
    assert [p.name for p in root.rglob(".torchleaklint-*")] == []


def test_killed_writer_never_exposes_partial_content(tmp_path):
    """A process killed inside ``atomic_write`` leaves the old bytes in place."""
    path = tmp_path / "big.py"
    old = b"x = 1\n" * 200_000
    path.write_bytes(old)
    code = ("import sys, os\n"
            "from torchleaklint.engine import fix\n"
            "real_replace = os.replace\n"
            "def stop(src, dst):\n"
            "    os.kill(os.getpid(), 9)\n"
            "fix.os.replace = stop\n"
            "fix.atomic_write(sys.argv[1], b'y = 2\\n' * 300_000)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert path.read_bytes() == old


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
def test_fix_keeps_the_file_owner(tmp_path):
    path = tmp_path / "a.py"
    path.write_text(SOURCE)
    os.chown(path, 65534, 65534)
    atomic_write(str(path), SOURCE.replace("append(loss)", "append(loss.item())").encode())
    info = os.stat(path)
    assert (info.st_uid, info.st_gid) == (65534, 65534)
