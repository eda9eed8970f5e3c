"""The runtime watcher on real torch (CPU): the harness's reproductions, lists, phases, the
pytest marker (through ``pytester``)."""

from __future__ import annotations

import importlib.util
import json

import pytest

torch = pytest.importorskip("torch")

import torchleaklint  # noqa: E402
from torchleaklint import fix_source  # noqa: E402
from torchleaklint.harness.verify import reproductions  # noqa: E402
from torchleaklint.runtime.watch import Watch  # noqa: E402

pytest_plugins = ["pytester"]

# TLL003's deep copy is a transient peak inside each clone, not growth: nothing to watch.
GROWING = [r for r in reproductions() if r.signal != "peak"]
GRAPH_KINDS = ("graph", "tensors", "figures")


def _run(path, steps=12):
    spec = importlib.util.spec_from_file_location(f"watched_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with Watch(label=path.stem, every=1, warmup=3, trace_sites=True) as w:
        module.main(steps, "cpu", w)
    return w.report()


@pytest.mark.parametrize("repro", GROWING, ids=lambda r: r.code)
def test_each_leaking_reproduction_is_attributed_to_its_rule(repro):
    report = _run(repro.path)
    assert report.growing
    matched = [f for f in report.findings if f.rule == repro.code]
    assert matched, [f.message() for f in report.findings]
    finding = matched[0]
    if finding.site is not None:
        assert finding.site[0] == str(repro.path)
        assert finding.line  # the source text of the line that created or stored it


@pytest.mark.parametrize("repro", GROWING, ids=lambda r: r.code)
def test_each_fixed_reproduction_passes(repro, tmp_path):
    fixed = tmp_path / repro.path.name
    fixed.write_text(fix_source(repro.source, repro.path.name, repro.settings(), unsafe=True))
    report = _run(fixed)
    assert not [f.message() for f in report.findings if f.kind in GRAPH_KINDS or f.rule == repro.code]


def test_a_growing_list_of_floats_is_list_growth_not_graph_growth():
    history = []
    with torchleaklint.watch(label="floats", every=1, warmup=2) as w:
        for step in range(14):
            history.append(float(step) * 0.5)
            w.step()
    report = w.report()
    kinds = {f.kind for f in report.findings}
    assert kinds == {"list"}
    (finding,) = report.findings
    assert "local `history` of test_a_growing_list_of_floats_is_list_growth_not_graph_growth()" in finding.what
    assert "(of float)" in finding.what
    assert finding.per_step == pytest.approx(1.0)
    assert "history.append(float(step) * 0.5)" in finding.line


def test_phases_tracked_types_json_and_plot(tmp_path):
    class ReplayBuffer:
        pass

    kept, w = [], Watch(label="erl", every=1, warmup=2, track_types=["ReplayBuffer"])
    weight = torch.randn(16, requires_grad=True)
    with w:
        for generation in range(8):
            with w.phase("evaluate"):
                with torch.no_grad():
                    (weight * 2).sum()
                w.step()
            with w.phase("train"):
                kept.append(ReplayBuffer())
                kept.append((weight * generation).sum())
                w.step()
    report = w.report()
    phases = {p.phase: p for p in report.phases}
    assert set(phases) == {"evaluate", "train"}
    assert not phases["evaluate"].growing
    assert {f.kind for f in phases["train"].findings} >= {"graph", "instances"}
    document = json.loads(w.to_json())
    assert document["growing"] is True and len(document["samples"]) == 16
    w.plot(tmp_path / "erl.png")
    assert (tmp_path / "erl.png").read_bytes().startswith(b"\x89PNG")


def test_watch_steps_decorator_counts_calls():
    weight = torch.randn(8, requires_grad=True)
    kept = []

    @torchleaklint.watch_steps(every=1, warmup=2)
    def train_step():
        kept.append((weight * 3).sum())

    for _ in range(10):
        train_step()
    train_step.watch.__exit__(None, None, None)
    report = train_step.watch.report()
    assert report.steps == 10
    assert any(f.kind == "graph" for f in report.findings)


def test_default_sampling_adapts_to_the_budget():
    with Watch(label="cheap") as w:
        for _ in range(400):
            w.step()
    assert len(w.samples) < 400 // 2


def test_step_outside_the_window_is_an_error():
    with pytest.raises(RuntimeError, match="outside"):
        Watch().step()


MARKED = '''
import pytest
import torch

@pytest.fixture
def trainer():
    class Trainer:
        def __init__(self):
            self.model = torch.nn.Linear(32, 1)
            self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01)
            self.losses = []
        def step(self, keep):
            loss = self.model(torch.randn(16, 32)).pow(2).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            self.losses.append(loss if keep == "tensor" else loss.item())
    return Trainer()

@pytest.mark.no_graph_leak(steps=12, warmup=3)
def test_leaky_step(trainer):
    trainer.step("tensor")

@pytest.mark.no_graph_leak(steps=12, warmup=3)
def test_clean_step(trainer):
    trainer.step("float")
'''


def test_pytest_marker_fails_a_leaking_test_and_passes_a_clean_one(pytester):
    pytester.makepyfile(test_steps=MARKED)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*test_leaky_step: memory grows per call over 12 calls*",
        "*autograd graph grows*created at*test_steps.py*",
    ])
    assert "test_clean_step" not in "\n".join(line for line in result.outlines if "FAILED" in line)
