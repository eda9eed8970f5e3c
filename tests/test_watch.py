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
# Process groups (TLL015) and TorchScript's compiled traces (TLL016) grow in native memory
# that no Python object the watcher follows holds, so it has no holder to attribute to a
# rule (on TLL015's reproduction it reports the process growing, with no rule); the verify
# harness measures both.
NOT_WATCHED = {"TLL015", "TLL016"}
GROWING = [r for r in reproductions() if r.signal != "peak" and r.code not in NOT_WATCHED]
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

    # Instances are counted by the census (a scan of every object): at every sample here.
    kept, w = [], Watch(label="erl", every=1, warmup=2, track_types=["ReplayBuffer"], census_every=1)
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


def _mlp_step():
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(16, 32)

    def step():
        loss = model(x).pow(2).mean()  # creates the graph
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    return step


def test_default_settings_catch_a_kept_loss_within_50_steps_with_its_line_and_list():
    step, losses = _mlp_step(), []
    with torchleaklint.watch(label="train") as w:
        for _ in range(50):
            losses.append(step())
            w.step()
    report = w.report()
    (graph,) = [f for f in report.findings if f.kind == "graph"]
    assert graph.per_step >= 5  # pow, mean, two addmm, relu, t: kept through the loss
    assert graph.line == "loss = model(x).pow(2).mean()  # creates the graph"
    (held,) = [f for f in report.findings if f.kind == "list"]
    assert "local `losses` of" in held.what and "(of Tensor)" in held.what
    assert held.line == "losses.append(step())"
    assert held.per_step == pytest.approx(1.0)
    assert "local `losses` of" in graph.kept_in


def test_a_kept_loss_is_traced_to_a_list_that_the_loop_cannot_see():
    def make_step():
        step, losses = _mlp_step(), []

        def train():
            losses.append(step())  # a closure's list: not a local of the watched loop

        return train

    train = make_step()
    with torchleaklint.watch(label="closure") as w:
        for _ in range(50):
            train()
            w.step()
    (graph,) = [f for f in w.report().findings if f.kind == "graph"]
    assert graph.kept_in == "list closure variable `losses` of train()"
    assert "kept in list closure variable `losses` of train()" in graph.message()


def test_default_settings_catch_one_kept_tensor_per_step_within_50_steps():
    kept, data = [], torch.randn(64)
    with torchleaklint.watch(label="cache") as w:
        for _ in range(50):
            kept.append(data[:8] * 2)  # a small tensor without a graph, one per step
            w.step()
    (finding,) = [f for f in w.report().findings if f.kind == "tensors"]
    assert finding.per_step == pytest.approx(1.0) and finding.unit == "tensors"
    assert finding.line.startswith("kept.append(data[:8] * 2)")


def test_a_list_of_loss_floats_is_python_objects_never_a_graph_leak():
    step, losses = _mlp_step(), []
    with torchleaklint.watch(label="floats") as w:
        for _ in range(50):
            losses.append(step().item())
            w.step()
    report = w.report()
    assert [f.kind for f in report.findings] == ["list"]
    (finding,) = report.findings
    assert finding.rule is None and "(of float)" in finding.what
    assert finding.bytes_per_step == pytest.approx(8 + 24)  # a list slot and a float
    assert "bytes/step of Python objects" in finding.message()


def test_too_few_samples_say_so_and_how_many_steps_they_need():
    import io

    from rich.console import Console

    with Watch(label="short", warmup=3) as w:
        for _ in range(4):
            w.step()
    (phase,) = w.report().phases
    assert not phase.judged and phase.needs_steps == 2  # samples at steps 5 and 6 complete three
    out = io.StringIO()
    w.print_report(Console(file=out, width=200))
    assert "short: too few samples to judge (needs ~2 more steps)" in out.getvalue()
    assert "stable" not in out.getvalue()
    with w:
        for _ in range(2):
            w.step()
    assert w.report().phases[0].judged


def test_sampling_is_dense_first_then_backs_off():
    with Watch(label="cheap") as w:
        for _ in range(1000):
            w.step()
    taken = [s.step for s in w.samples]
    assert taken[:16] == list(range(1, 17))
    assert 55 <= len(taken) <= 70  # 19 dense, then 10 % of the step: ~24 per tenfold
    assert max(b - a for a, b in zip(taken, taken[1:])) <= 100


def test_every_and_census_every_fix_the_intervals():
    with Watch(label="fixed", every=3, census_every=2) as w:
        for _ in range(30):
            w.step()
    assert [s.step for s in w.samples] == list(range(1, 31, 3))
    assert [s.census for s in w.samples] == [i % 2 == 1 for i in range(10)]
    assert "census_nodes" in w.samples[1].probes and "census_nodes" not in w.samples[0].probes


@pytest.mark.parametrize("arguments", [
    {"budget": 0}, {"budget": float("nan")}, {"budget": float("inf")}, {"budget": -0.1}, {"budget": 2},
    {"budget": "5%"}, {"budget": True}, {"warmup": "x"}, {"warmup": -5}, {"warmup": 2.0},
    {"every": 1.5}, {"every": 0}, {"every": True}, {"census_every": 0}, {"device": "tpu"},
    {"device": "cuda:x"}, {"device": 0}, {"label": ""}, {"label": None}, {"track_types": "ReplayBuffer"},
    {"track_types": [3]}, {"track_types": 5}, {"trace_sites": "yes"},
], ids=repr)
def test_bad_arguments_are_refused_when_the_watch_is_created(arguments):
    with pytest.raises(ValueError, match=f"watch: {next(iter(arguments))}"):
        torchleaklint.watch(**arguments)
    with pytest.raises(ValueError):
        torchleaklint.watch_steps(**arguments)(lambda: None)


def test_cuda_is_refused_where_there_is_none():
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(ValueError, match="CUDA is not available"):
        Watch(device="cuda:0")


def test_good_arguments_are_kept():
    w = Watch(label="ok", every=2, warmup=0, budget=1, device=torch.device("cpu"), track_types=("A",))
    assert (w.every, w.warmup, w.budget, w.device, w.track_types) == (2, 0, 1.0, "cpu", ("A",))


def test_watch_steps_watches_the_calls_only():
    weight = torch.randn(8, requires_grad=True)
    between = []

    @torchleaklint.watch_steps(every=1, warmup=2)
    def train_step():
        return (weight * 3).sum().item()

    for _ in range(12):
        train_step()
        between.append(weight * 2)  # made between calls: not the step's
    report = train_step.watch.report()
    assert not [f for f in report.findings if f.kind in GRAPH_KINDS]


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
