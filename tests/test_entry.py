"""The console script ends a finished check without the interpreter's teardown, and
everything the check wrote is still delivered: every finding, the report file, the exit
code. Other commands, and the command line called in-process, exit the normal way."""

from __future__ import annotations

import json
import subprocess
import sys

from click.testing import CliRunner

from torchleaklint.cli import main

LEAK = """import torch

def train(model, opt, loader):
    losses = []
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss)
    return losses
"""

# An exit handler that says whether the interpreter's normal exit ran.
PROBE = ("import atexit, sys; atexit.register(lambda: sys.stderr.write('normal exit\\n')); "
         "sys.argv = ['torchleaklint', *sys.argv[1:]]; from torchleaklint.entry import console; console()")


def probe(args, cwd):
    return subprocess.run([sys.executable, "-c", PROBE, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def project(tmp_path, files=200):
    (tmp_path / "pyproject.toml").write_text("[tool.other]\n")
    for i in range(files):
        (tmp_path / f"m{i:03d}.py").write_text(LEAK)
    return tmp_path


def test_a_check_ends_at_once_with_every_finding_delivered(tmp_path):
    project(tmp_path)
    proc = probe(["check", ".", "--no-cache", "--output-format", "json"], tmp_path)
    assert proc.returncode == 1
    assert "normal exit" not in proc.stderr
    found = json.loads(proc.stdout)  # the whole report arrived through the pipe
    assert len(found) == 200 and {d["code"] for d in found} == {"TLL001"}


def test_a_check_with_a_report_file_and_exit_zero(tmp_path):
    project(tmp_path, files=50)
    proc = probe(["check", ".", "--no-cache", "-q", "--exit-zero", "-o", "report.txt"], tmp_path)
    assert proc.returncode == 0 and "normal exit" not in proc.stderr
    assert (tmp_path / "report.txt").read_text().count("TLL001") == 50


def test_a_check_answered_by_the_cache_ends_the_same_way(tmp_path):
    project(tmp_path, files=20)
    first = probe(["check", ".", "-q"], tmp_path)
    again = probe(["check", ".", "-q"], tmp_path)
    assert first.returncode == again.returncode == 1
    assert again.stdout == first.stdout and again.stdout.count("TLL001") == 20
    assert "normal exit" not in again.stderr


def test_errors_and_other_commands_exit_the_normal_way(tmp_path):
    bad = probe(["check", "missing.py"], tmp_path)
    assert bad.returncode == 2 and "no such file or directory" in bad.stderr and "normal exit" in bad.stderr
    rules = probe(["rules"], tmp_path)
    assert rules.returncode == 0 and "TLL001" in rules.stdout and "normal exit" in rules.stderr


def test_in_process_the_command_line_never_ends_the_process(tmp_path):
    project(tmp_path, files=3)
    result = CliRunner().invoke(main, ["check", str(tmp_path), "--no-cache", "-q"])
    assert result.exit_code == 1 and result.output.count("TLL001") == 3


def test_a_profiled_check_exits_the_normal_way(tmp_path):
    project(tmp_path, files=3)
    script = tmp_path / "run_console.py"
    script.write_text("import sys\nsys.argv[0] = 'torchleaklint'\nfrom torchleaklint.entry import console\nconsole()\n")
    out = tmp_path / "run.prof"
    proc = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(out), str(script), "check", ".", "--no-cache",
                           "-q"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.stdout.count("TLL001") == 3  # (the profiler's own exit code is 0)
    assert out.exists()  # the profiler wrote its results at the normal exit


def test_run_as_a_module_a_check_exits_the_normal_way(tmp_path):
    project(tmp_path, files=3)
    code = ("import atexit, runpy, sys; atexit.register(lambda: sys.stderr.write('normal exit\\n')); "
            "sys.argv = ['torchleaklint', 'check', '.', '--no-cache', '-q']; "
            "runpy.run_module('torchleaklint', run_name='__main__')")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and proc.stdout.count("TLL001") == 3 and "normal exit" in proc.stderr
