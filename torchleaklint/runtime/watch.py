"""``torchleaklint.watch``: sample the harness's probes once per step of the user's loop.

    with torchleaklint.watch(label="train", track_types=["ReplayBuffer"]) as w:
        for batch in w.track(loader):        # or call w.step() at the end of each iteration
            with w.phase("train"):
                ...
    w.print_report()

A sample costs one scan of the garbage collector's objects (tens of milliseconds with torch
loaded). By default the watch samples as often as a budget of 5 % of the loop's time allows
(``every=k`` samples every k-th step instead), and records creation sites, which costs a
Python call per torch operation, only from the moment a graph or the tensor count starts to
grow (``trace_sites=True`` records them from the start, ``False`` never).
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import time
from typing import Callable, Iterable, Iterator, List, Optional, Sequence, Union

from ..harness.probes import Sampler
from .trend import WatchReport, WatchSample, phase_trend

LONG_LIST = 8  # lists shorter than this are not followed
FULL_COLLECTION_EVERY = 10  # samples; the others collect the young generations only


class Watch:
    def __init__(self, label: str = "run", every: Optional[int] = None, warmup: int = 3,
                 track_types: Sequence[str] = (), trace_sites: Union[bool, str] = "auto",
                 device: Optional[str] = None, budget: float = 0.05) -> None:
        if every is not None and every < 1:
            raise ValueError("every must be >= 1")
        if trace_sites not in (True, False, "auto"):
            raise ValueError("trace_sites must be True, False or 'auto'")
        self.label = label
        self.every = every
        self.budget = budget
        self._next_sample = 1
        self._last_sample = (0, 0.0)  # (step, time) when the previous sample ended
        self.sampling_seconds = 0.0
        self.loop_seconds = 0.0  # time spent between samples, in the user's loop
        self.warmup = warmup
        self.track_types = tuple(track_types)
        self.trace_sites = trace_sites
        self.device = device
        self.steps = 0
        self.samples: List[WatchSample] = []
        self._phase = label
        self._phase_steps: dict = {}
        self._sampler: Optional[Sampler] = None
        # Lists that grew since the previous sample, held until the next one so that the
        # report can name them (an id alone may be reused once a list dies).
        self._growing_lists: dict = {}
        self._list_lengths: dict = {}  # id -> length of every long list at the last sample
        self._list_names: dict = {}  # id -> (description, append site), named while sampling
        self._tracer = None

    # -- the window ---------------------------------------------------------------------
    def __enter__(self) -> "Watch":
        import torch

        device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
        self._sampler = Sampler(device, full_collection_every=FULL_COLLECTION_EVERY)
        if self.trace_sites is True:
            self._start_tracing()
        self._sampler.begin()
        self._last_sample = (0, time.perf_counter())
        return self

    def _start_tracing(self) -> None:
        from .sites import SiteTracer

        self._tracer = SiteTracer()
        self._tracer.__enter__()

    def __exit__(self, *exc) -> None:
        if self._tracer is not None:
            self._tracer.__exit__(*exc)
            self._tracer = None

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Steps taken inside are reported under ``name`` (seed 002's evaluate/train/evolve)."""
        previous, self._phase = self._phase, name
        try:
            yield
        finally:
            self._phase = previous

    def track(self, iterable: Iterable) -> Iterator:
        """Yield from ``iterable``, counting one step after each item's iteration body."""
        for item in iterable:
            yield item
            self.step()

    # -- sampling -----------------------------------------------------------------------
    def step(self, **observed: float) -> None:
        if self._sampler is None:
            raise RuntimeError("watch.step() called outside `with torchleaklint.watch(...)`")
        self.steps += 1
        self._phase_steps[self._phase] = self._phase_steps.get(self._phase, 0) + 1
        if self.steps < self._next_sample:
            return
        started = time.perf_counter()
        self._take_sample(observed)
        ended = time.perf_counter()
        cost = ended - started
        self.sampling_seconds += cost
        last_step, last_time = self._last_sample
        self.loop_seconds += started - last_time
        if self.every is not None:
            interval = self.every
        else:
            # The next sample comes when the loop's own time (sampling excluded) has grown
            # enough that all sampling so far stays within the budget.
            step_time = max((started - last_time) / max(self.steps - last_step, 1), 1e-6)
            due = self.sampling_seconds / self.budget - self.loop_seconds
            interval = max(math.ceil(due / step_time), 1)
        self._next_sample = self.steps + interval
        self._last_sample = (self.steps, ended)
        if self.trace_sites == "auto" and self._tracer is None and self._starts_growing():
            self._start_tracing()

    def _starts_growing(self) -> bool:
        recent = [s.probes for s in self.samples if s.step > self.warmup][-3:]
        if len(recent) < 3:
            return False
        return any(recent[0][key] < recent[1][key] < recent[2][key] for key in ("nodes", "tensors"))

    def _take_sample(self, observed: dict) -> None:
        record = WatchSample(self.steps, self._phase, {}, traced=self._tracer is not None)
        tracing = record.traced
        own = id(self.samples)

        def census(objects, tensors) -> None:
            if tracing:
                from .sites import nodes_by_site, tensor_site

                record.nodes_by_site = nodes_by_site(tensors)
                for tensor in tensors:
                    if tensor.grad_fn is None:
                        site = tensor_site(tensor)
                        count, size = record.tensors_by_site.get(site, (0, 0))
                        record.tensors_by_site[site] = (count + 1, size + _nbytes(tensor))
            # Every long list's length is kept until the next sample only; a record keeps the
            # lists that grew, and those it already followed, so that the watch's own memory
            # does not grow with the number of lists in the process.
            previous = self._list_lengths
            followed = self.samples[-1].lists if self.samples else {}
            lengths, growing = {}, {}
            for obj in [o for o in objects if type(o) is list and len(o) >= LONG_LIST]:
                key = id(obj)
                if key == own:
                    continue
                lengths[key] = len(obj)
                if len(obj) > previous.get(key, len(obj)) and len(growing) < 64:
                    growing[key] = obj
                if key in growing or key in followed:
                    record.lists[key] = len(obj)
            self._list_lengths = lengths
            if self.track_types:
                wanted = set(self.track_types)
                for obj in objects:
                    name = type(obj).__name__
                    if name in wanted:
                        record.instances[name] = record.instances.get(name, 0) + 1
            self._growing_lists = growing
            if growing:
                import sys

                from .holders import name_in_frames

                # Locals can only be named while their function runs, that is, now.
                caller = sys._getframe(3)
                for list_id, growing_list in growing.items():
                    if list_id not in self._list_names:
                        named = name_in_frames(growing_list, caller)
                        if named:
                            self._list_names[list_id] = named

        sample = self._sampler.sample(census=census, **observed)
        sample.step = self.steps
        record.probes = sample.to_dict()
        self.samples.append(record)

    # -- results --------------------------------------------------------------------------
    def report(self) -> WatchReport:
        phases = []
        for name in dict.fromkeys(s.phase for s in self.samples):
            phases.append(phase_trend(name, self.samples, self.warmup, self._phase_steps.get(name, 0),
                                      self.track_types))
        for trend in phases:
            for finding in trend.findings:
                if finding.kind == "list":
                    _name_list(finding, self._growing_lists, self._list_names)
        return WatchReport(self.label, self.steps, self.warmup, phases,
                           [dict(s.probes, phase=s.phase) for s in self.samples])

    def print_report(self, console=None) -> WatchReport:
        from .render import print_report

        report = self.report()
        print_report(report, console)
        return report

    def to_json(self) -> str:
        return json.dumps(self.report().to_dict(), indent=1, default=str)

    def plot(self, path) -> None:
        from .render import plot_report

        plot_report(self.report(), path)


def _nbytes(tensor) -> int:
    try:
        return int(tensor.untyped_storage().nbytes())
    except (RuntimeError, NotImplementedError, AttributeError):
        return 0


def _name_list(finding, growing: dict, names: dict) -> None:
    from .holders import name_by_referrers, rule_for, source_line

    list_id = int(finding.what.split()[-1])
    target = growing.get(list_id)
    if target is None:
        finding.what = "a list (it did not grow between the last two samples)"
        return
    holder, site = names.get(list_id) or name_by_referrers(target)
    element = type(target[-1]).__name__ if target else "?"
    finding.what = f"list {holder} (of {element})"
    if site is not None:
        finding.site, finding.line = site, source_line(site)
        match = rule_for(site, "list")
        if match:
            finding.rule, finding.rule_line = match


def watch(label: str = "run", **options) -> Watch:
    """A watch over the steps of a loop; use it as a context manager."""
    return Watch(label=label, **options)


def watch_steps(func: Optional[Callable] = None, **options):
    """Decorator: every call of the function is one watched step; the watch is ``func.watch``."""

    def decorate(step_function: Callable) -> Callable:
        w = Watch(label=options.pop("label", step_function.__name__), **options)

        @functools.wraps(step_function)
        def wrapper(*args, **kwargs):
            if w._sampler is None:
                w.__enter__()
            try:
                return step_function(*args, **kwargs)
            finally:
                w.step()

        wrapper.watch = w
        return wrapper

    return decorate(func) if func is not None else decorate
