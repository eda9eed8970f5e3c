"""The runtime harness, on real PyTorch and matplotlib on the CPU.

One full ``torchleaklint verify`` run (every fixable rule, fresh processes, real autofixes)
is shared by the tests that read its JSON; the negative tests run the harness against fixes
that do not fix, to show that the harness can say NOT CONFIRMED.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("matplotlib")
pytest.importorskip("psutil")

from torchleaklint.harness import growth as g  # noqa: E402
from torchleaklint.harness import verify as verify_module  # noqa: E402
from torchleaklint.harness.verify import Reproduction, RuleVerdict, reproductions, run_child  # noqa: E402
from torchleaklint.rules import ALL_RULES  # noqa: E402

STEPS = 8
FIXABLE = [r.code for r in ALL_RULES if r.repro]
# Leaks whose every unit is small: a gloo process group on one process holds about
# 44-60 KiB of host memory (its threads and file descriptors are what runs out first).
SMALL_LEAKS = {"TLL015": 32 * 1024}


@pytest.fixture(scope="module")
def verified():
    proc = subprocess.run([sys.executable, "-m", "torchleaklint", "verify", "--device", "cpu", "--steps", str(STEPS),
                           "--output-format", "json"], capture_output=True, text=True, timeout=900)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_every_fixable_rule_is_confirmed_on_cpu(verified):
    returncode, document = verified
    verdicts = {r["code"]: r for r in document["rules"]}
    assert sorted(verdicts) == sorted(FIXABLE)
    problems = {code: r["reason"] for code, r in verdicts.items() if r["verdict"] != "CONFIRMED"}
    assert not problems
    assert returncode == 0
    assert {r["device"] for r in verdicts.values()} == {"cpu"}


def test_each_leak_retains_its_minimum_per_step_and_the_fix_is_flat(verified):
    _, document = verified
    for rule in document["rules"]:
        before, after = rule["growth"]["before"], rule["growth"]["after"]
        if rule["signal"] == "peak":
            assert before["peak"]["level"] >= 256 * 1024, rule["code"]
            continue
        assert before["bytes"]["per_step"] >= SMALL_LEAKS.get(rule["code"], 256 * 1024), rule["code"]
        assert after["bytes"]["per_step"] < g.NOISE_FLOORS["bytes"], rule["code"]
        if rule["signal"] in ("nodes", "figures"):
            assert before[rule["signal"]]["per_step"] >= 1, rule["code"]
            assert after[rule["signal"]]["per_step"] == 0, rule["code"]


def test_json_carries_every_sample_of_every_run(verified):
    _, document = verified
    rule = document["rules"][0]
    assert set(rule["runs"]) == {f"{v}-{n}" for v in ("before", "after") for n in (STEPS, 2 * STEPS)}
    samples = rule["runs"][f"before-{2 * STEPS}"]["samples"]
    assert [s["step"] for s in samples] == list(range(1, 2 * STEPS + 1))
    assert {"nodes", "heap", "rss", "step_peak", "tensor_bytes"} <= set(samples[0])


def _noop_fix(code, filename, settings, unsafe=None):
    """A 'fix' that changes the text but not the behaviour."""
    return code + "\n# reviewed\n"


@pytest.mark.parametrize("code, reason", [
    ("TLL002", "the fixed program still grows"),
    ("TLL003", "the fix does not lower the peak per step"),  # a level, not a rate
])
def test_a_fix_that_does_not_fix_is_not_confirmed(monkeypatch, code, reason):
    monkeypatch.setattr(verify_module, "fix_source", _noop_fix)
    (verdict,) = verify_module.verify(reproductions([code]), steps=6, device="cpu", jobs=2)
    assert not verdict.confirmed
    assert verdict.reason.startswith(reason)


def test_a_fix_that_changes_results_is_not_confirmed(monkeypatch):
    real_fix = verify_module.fix_source

    def fix_and_break(code, filename, settings, unsafe=None):
        return real_fix(code, filename, settings, unsafe).replace("lr=1e-3", "lr=1e-1")

    monkeypatch.setattr(verify_module, "fix_source", fix_and_break)
    (verdict,) = verify_module.verify(reproductions(["TLL001"]), steps=6, device="cpu", jobs=2)
    assert not verdict.confirmed
    assert verdict.reason.startswith("the fix changes the program's results")


def test_a_reproduction_the_linter_misses_is_not_confirmed(tmp_path):
    repro = Reproduction("TLL001", "graph-tensor-stored", tmp_path / "clean.py", "x = 1\n", "nodes", {})
    (verdict,) = verify_module.verify([repro], steps=4, device="cpu")
    assert not verdict.confirmed and "does not report TLL001" in verdict.reason
    assert verdict.runs == {}


def test_a_crashing_child_is_reported(tmp_path):
    program = tmp_path / "boom.py"
    program.write_text("def main(steps, device, monitor):\n    raise ValueError('bad shapes')\n")
    document = run_child(program, 4, "cpu", timeout=120)
    assert document["error"].startswith("ValueError: bad shapes")


def test_a_hanging_child_is_stopped(tmp_path):
    program = tmp_path / "hang.py"
    program.write_text("import time\n\ndef main(steps, device, monitor):\n    time.sleep(600)\n")
    document = run_child(program, 4, "cpu", timeout=5)
    assert document == {"error": "timed out after 5 s"}


def test_a_program_that_skips_monitor_steps_is_an_error(tmp_path):
    program = tmp_path / "short.py"
    program.write_text("def main(steps, device, monitor):\n    monitor.step()\n")
    document = run_child(program, 4, "cpu", timeout=120)
    assert "called monitor.step() 1 times for 4 steps" in document["error"]


def _doc(values, key="nodes", result=1.0):
    return {"device": "cpu", "result": {"x": result}, "error": None,
            "samples": [{"step": i + 1, key: v, "heap": 1000, "figures": None, "tensors": 0, "step_peak": 0}
                        for i, v in enumerate(values)]}


@pytest.mark.parametrize("after_values, after_result, expected", [
    (([5] * 6, [5] * 12), 1.0, "the original grows and the fixed program does not; same results"),
    ((list(range(6)), list(range(12))), 1.0, "the fixed program still grows: +1.0 nodes/step (N..2N: +1.0)"),
    (([5] * 6, [5] * 12), 2.0, "the fix changes the program's results: result['x']: 1.0 != 2.0"),
])
def test_judge(after_values, after_result, expected):
    repro = Reproduction("TLL001", "graph-tensor-stored", None, "", "nodes", {})
    verdict = RuleVerdict("TLL001", "graph-tensor-stored", "nodes")
    verdict.runs = {"before-6": _doc([3 * i for i in range(6)]), "before-12": _doc([3 * i for i in range(12)]),
                    "after-6": _doc(after_values[0], result=after_result),
                    "after-12": _doc(after_values[1], result=after_result)}
    verify_module.judge(repro, verdict, 6)
    assert verdict.reason == expected
    assert verdict.confirmed == expected.startswith("the original grows")


def test_growth_that_stops_is_not_growth():
    # Growth during warm-up only (a bounded buffer filling up) is flat in the second half.
    short, long = _doc([0, 4, 8, 8, 8, 8])["samples"], _doc([0, 4, 8] + [8] * 9)["samples"]
    gr = g.growth("nodes", "nodes", short, long)
    assert gr.per_step == 0 and gr.span == 0
    assert gr.flat(g.NOISE_FLOORS["nodes"])


def test_a_constant_offset_between_the_two_runs_is_not_growth():
    # The N-step and 2N-step runs are separate processes: start-up can leave one of them a
    # constant 135 KiB higher (seen on a fixed program in CI). Only rises count.
    flat = [20_000 + 1_200 * i for i in range(8)]
    long = [135_000 + 20_000 + 1_200 * i for i in range(16)]
    gr = g.growth("bytes", "rss", _doc(flat, key="rss")["samples"], _doc(long, key="rss")["samples"])
    assert gr.span == pytest.approx(1_200) and gr.per_step == pytest.approx(1_200)
    assert gr.flat(g.NOISE_FLOORS["bytes"])
    # The same offset on a real leak leaves its growth as it is.
    leak = 300_000
    gr = g.growth("bytes", "rss", _doc([leak * i for i in range(8)], key="rss")["samples"],
                  _doc([135_000 + leak * i for i in range(16)], key="rss")["samples"])
    assert gr.span == pytest.approx(leak) and gr.grows(g.NOISE_FLOORS["bytes"])


def test_verify_cli_rejects_unknown_and_unfixable_rules(cli):
    result = cli("verify", "--rule", "TLL999")
    assert result.exit_code == 2
    assert result.output.strip() == "torchleaklint: error: unknown rule code 'TLL999' (see `torchleaklint rules`)"
    result = cli("verify", "--rule", "TLL008")
    assert result.exit_code == 2
    assert "TLL008 has no autofix" in result.output


@pytest.mark.parametrize("args, message", [
    (["--timeout", "nan"], "--timeout must be a number of seconds from 1 to 86400, got 'nan'"),
    (["--timeout", "inf"], "--timeout must be a number of seconds from 1 to 86400, got 'inf'"),
    (["--timeout", "1e300"], "--timeout must be a number of seconds from 1 to 86400, got '1e300'"),
    (["--timeout", "0"], "--timeout must be a number of seconds from 1 to 86400, got '0'"),
    (["--timeout", "soon"], "--timeout must be a number of seconds from 1 to 86400, got 'soon'"),
    (["--rule", ""], "--rule needs a rule code, got '' (see `torchleaklint rules`)"),
    (["--rule", " , "], "--rule needs a rule code, got ' , ' (see `torchleaklint rules`)"),
])
def test_verify_refuses_bad_arguments_in_one_line_before_measuring(cli, monkeypatch, args, message):
    import torchleaklint.harness.verify as measuring

    monkeypatch.setattr(measuring, "verify", lambda *a, **k: pytest.fail("measured despite a bad argument"))
    result = cli("verify", *args)
    assert result.exit_code == 2
    assert result.output.splitlines() == [f"torchleaklint: error: {message}"]


def test_verify_without_the_harness_extra_says_what_to_install(cli, monkeypatch):
    import torchleaklint.harness.command as command

    monkeypatch.setattr(command, "missing_requirements", lambda: ["torch", "psutil"])
    result = cli("verify")
    assert result.exit_code == 2
    assert result.output.strip() == ("torchleaklint: error: verify needs the harness extra: pip install "
                                     "'torchleaklint[harness]' (missing: torch, psutil)")


def test_verify_cuda_without_a_gpu_is_a_usage_error(cli):
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    result = cli("verify", "--device", "cuda")
    assert result.exit_code == 2
    assert "no CUDA device is available" in result.output


def test_linting_never_imports_torch():
    code = textwrap.dedent("""
        import sys
        from torchleaklint.cli import main
        from torchleaklint import lint_source
        lint_source("import torch\\nlosses = []\\n")
        assert "torch" not in sys.modules, "the lint path imported torch"
    """)
    subprocess.run([sys.executable, "-c", code], check=True)
