"""``torchleaklint.watch``: sample what a training loop keeps alive, step by step.

    with torchleaklint.watch(label="train", track_types=["ReplayBuffer"]) as w:
        for batch in w.track(loader):        # or call w.step() at the end of each iteration
            with w.phase("train"):
                ...
    w.print_report()

Inside the window a torch function mode (``tracker.LiveTensors``) remembers every tensor that
torch calls return, by weak reference. A sample reads the ones still alive and walks their
autograd graphs, the long lists the loop's function holds, memory and open figures: well
under a millisecond in a small loop, so the watch samples every step at first and backs off
geometrically (``schedule.py``; ``every=k`` samples every k-th step). A census of every object
the garbage collector tracks (tens of milliseconds with torch loaded) finds lists held deeper,
instances of ``track_types`` and graphs made where the mode cannot see; it runs as often as
``budget`` (a fraction of the loop's time) allows, or every ``census_every``-th sample.
Creation sites cost a frame walk per torch call and are recorded from the moment graphs or
tensors start to grow (``trace_sites=True`` from the start, ``False`` never).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import os
import sys
import time
from typing import Callable, Iterable, Iterator, List, Optional, Sequence, Union

from ..harness import probes
from . import options
from .schedule import Schedule
from .trend import WatchReport, WatchSample, phase_trend

LONG_LIST = 8  # lists shorter than this are not followed
KEEPER_CANDIDATES = 3  # the newest tensors of a growing site whose container is looked up
FULL_COLLECTION_EVERY = 10  # censuses; the others collect the young generations only
# Before the first census is timed, its cost is guessed from the interpreter's allocated
# blocks, on the high side: 0.1 us per block on an idle machine with torch loaded (60 ms for
# 560,000 blocks), up to 0.9 us on a loaded one. A first census that overshot the budget
# would cost a short loop more than all its samples.
CENSUS_SECONDS_PER_BLOCK = 1e-6
_HERE = os.path.dirname(__file__) + os.sep


class Watch:
    def __init__(self, label: str = "run", every: Optional[int] = None, warmup: int = 3,
                 track_types: Sequence[str] = (), trace_sites: Union[bool, str] = "auto",
                 device: Optional[str] = None, budget: float = 0.05,
                 census_every: Optional[int] = None) -> None:
        self.label = options.label(label)
        self.every = options.every(every)
        self.warmup = options.warmup(warmup)
        self.track_types = options.track_types(track_types)
        self.trace_sites = options.trace_sites(trace_sites)
        self.device = options.device(device)
        self.budget = options.budget(budget)
        self.census_every = options.census_every(census_every)
        self.schedule = Schedule(self.every)
        self._next_sample = 1
        self._last_sample = (0, 0.0)  # (step, time) when the previous sample ended
        self.sampling_seconds = 0.0
        self.census_seconds = 0.0
        self.loop_seconds = 0.0  # time spent between samples, in the user's loop
        self._census_cost: Optional[float] = None
        self._censuses = self._since_census = 0
        self.steps = 0
        self.samples: List[WatchSample] = []
        self._phase = self.label
        self._phase_steps: dict = {}
        self._sampler = None
        self._tracker = None
        self._pushed = False
        # Long lists by id, held until the next sample (frames) or census (the others) so that
        # the report can name them: an id alone may be reused once a list dies.
        self._frame_lists: dict = {}
        self._census_lists: dict = {}
        self._list_lengths: dict = {}  # id -> length of every long list at the last census
        self._list_names: dict = {}  # id -> (description, append site), named while sampling
        self._keepers: dict = {}  # creation site -> the container its tensors are kept in

    # -- the window ---------------------------------------------------------------------
    def __enter__(self) -> "Watch":
        if self._sampler is None:  # entering again continues the same watch
            self._open()
        self._push()
        return self

    def __exit__(self, *exc) -> None:
        self._pop()

    def _open(self) -> None:
        import torch

        from .tracker import LiveTensors

        self._torch = torch
        device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
        self._sampler = probes.Sampler(device)
        self._tracker = LiveTensors()
        self._tracker.record_sites = self.trace_sites is True
        self._sampler.begin(collect=False)
        self._last_sample = (0, time.perf_counter())

    def _push(self) -> None:
        if not self._pushed:
            self._tracker.__enter__()
            self._pushed = True

    def _pop(self) -> None:
        if self._pushed:
            self._pushed = False
            self._tracker.__exit__(None, None, None)

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
        self.loop_seconds += started - self._last_sample[1]
        census = self._census_due()
        # The watch's own reads of tensors (grad_fn, storages) must not pass through its mode.
        with self._torch._C.DisableTorchFunction():
            self._take_sample(observed, census, _user_frame())
        ended = time.perf_counter()
        self.sampling_seconds += ended - started
        if census:
            self.census_seconds += ended - started
            self._census_cost = ended - started
        self._next_sample = self.steps + self.schedule.interval(self.steps)
        self._last_sample = (self.steps, ended)
        if self.trace_sites == "auto" and not self._tracker.record_sites and self._starts_growing():
            self._tracker.record_sites = True

    def _census_due(self) -> bool:
        if self.census_every is not None:
            return self._since_census + 1 >= self.census_every
        cost = self._census_cost
        if cost is None:
            cost = sys.getallocatedblocks() * CENSUS_SECONDS_PER_BLOCK
        return self.census_seconds + cost <= self.budget * self.loop_seconds

    def _starts_growing(self) -> bool:
        recent = [s.probes for s in self.samples if s.step > self.warmup][-3:]
        if len(recent) < 3:
            return False
        return any(recent[0][key] < recent[1][key] < recent[2][key] for key in ("nodes", "tensors"))

    def steps_to_judge(self, samples: int) -> int:
        """Steps until ``samples`` more samples after the warm-up will have been taken."""
        return self.schedule.steps_until(self.steps, self._next_sample, samples, self.warmup)

    def _take_sample(self, observed: dict, census: bool, frame) -> None:
        record = WatchSample(self.steps, self._phase, {}, traced=self._tracker.record_sites, census=census)

        def by_site(_, tensors) -> None:
            from .sites import nodes_by_site, tensor_site

            record.nodes_by_site = nodes_by_site(tensors)
            for tensor in tensors:
                if tensor.grad_fn is None:
                    site = tensor_site(tensor)
                    count, size = record.tensors_by_site.get(site, (0, 0))
                    record.tensors_by_site[site] = (count + 1, size + _nbytes(tensor))

        sample = self._sampler.sample(census=by_site if record.traced else None, tensors=self._tracker.tensors,
                                      **observed)
        sample.step = self.steps
        record.probes = sample.to_dict()
        own = {id(value) for value in vars(self).values() if type(value) is list}
        frame_lists = {id(obj): obj for obj in _lists_in(frame) if id(obj) not in own}
        self._name_lists(frame_lists, frame)
        record.lists.update((key, len(obj)) for key, obj in frame_lists.items())
        self._frame_lists = frame_lists
        if census:
            self._census(record, own, frame)
            self._since_census = 0
        else:
            self._since_census += 1
        self.samples.append(record)

    def _census(self, record: WatchSample, own: set, frame) -> None:
        """Every object the collector tracks: all tensors and their graphs, every long list,
        the instances of ``track_types``."""
        self._censuses += 1
        if self._censuses % FULL_COLLECTION_EVERY == 0:
            gc.collect()  # the rare cycle that reached the oldest generation
        objects = gc.get_objects()
        every_tensor = probes.live_tensors(objects)
        record.probes["census_nodes"] = probes.autograd_nodes(every_tensor)
        record.probes["census_tensors"] = len(every_tensor)
        del every_tensor
        # Every long list's length is kept until the next census only; a record keeps the
        # lists that grew, and those it already followed, so that the watch's own memory does
        # not grow with the number of lists in the process.
        previous = self._list_lengths
        followed = next((s.lists for s in reversed(self.samples) if s.census), {})
        lengths, growing = {}, {}
        for obj in objects:
            if type(obj) is not list or len(obj) < LONG_LIST or id(obj) in own:
                continue
            key = id(obj)
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
        del objects
        self._census_lists = growing
        self._name_lists(growing, frame)

    def _name_lists(self, lists: dict, frame) -> None:
        # Locals can only be named while their function runs, that is, now.
        from .holders import name_in_frames

        for list_id, found in lists.items():
            if list_id not in self._list_names:
                named = name_in_frames(found, frame)
                if named:
                    self._list_names[list_id] = named

    # -- results --------------------------------------------------------------------------
    def report(self) -> WatchReport:
        phases = []
        for name in dict.fromkeys(s.phase for s in self.samples):
            phases.append(phase_trend(name, self.samples, self.warmup, self._phase_steps.get(name, 0),
                                      self.track_types, self.steps_to_judge))
        held = {**self._census_lists, **self._frame_lists}
        for trend in phases:
            for finding in trend.findings:
                if finding.kind == "list":
                    _name_list(finding, held, self._list_names)
                elif finding.kind in ("graph", "tensors") and finding.site is not None:
                    finding.kept_in = self._kept_in(finding.site)
        return WatchReport(self.label, self.steps, self.warmup, phases,
                           [dict(s.probes, phase=s.phase) for s in self.samples])

    def _kept_in(self, site) -> str:
        """The list that holds the newest live tensors made at ``site``, named once per site."""
        if site in self._keepers:
            return self._keepers[site]
        from .holders import container_of, name_by_referrers, name_in_frames
        from .sites import tensor_site

        with self._torch._C.DisableTorchFunction():
            made = [t for t in self._tracker.tensors() if tensor_site(t) == site][-KEEPER_CANDIDATES:]
        found = container_of(made, ignore=[made]) if made else None
        named = ""
        if found is not None:
            holder, _ = name_in_frames(found, _user_frame()) or name_by_referrers(found)
            named = f"{type(found).__name__} {holder}"
        del made, found
        self._keepers[site] = named
        return named

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


def _user_frame():
    """The innermost frame outside the watcher: the loop that called ``step()``."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_HERE):
        frame = frame.f_back
    return frame


def _lists_in(frame) -> List[list]:
    if frame is None:
        return []
    from .holders import lists_in_frame

    return list(lists_in_frame(frame, LONG_LIST))


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
    last = target[-1] if target else None
    finding.what = f"list {holder} (of {type(last).__name__ if target else '?'})"
    if target and not type(last).__module__.startswith("torch"):
        # Python objects: the list's slot and the item itself (a tensor's memory is elsewhere).
        finding.bytes_per_step = finding.per_step * (8 + sys.getsizeof(last))
    if site is not None:
        finding.site, finding.line = site, source_line(site)
        match = rule_for(site, "list")
        if match:
            finding.rule, finding.rule_line = match


def watch(label: str = "run", **settings) -> Watch:
    """A watch over the steps of a loop; use it as a context manager."""
    return Watch(label=label, **settings)


def watch_steps(func: Optional[Callable] = None, **settings):
    """Decorator: every call of the function is one watched step; the watch is ``func.watch``."""

    def decorate(step_function: Callable) -> Callable:
        w = Watch(label=settings.pop("label", step_function.__name__), **settings)

        @functools.wraps(step_function)
        def wrapper(*args, **kwargs):
            if w._sampler is None:
                w._open()
            # The mode is on the stack during each call only: what the caller does between
            # calls is not the step's.
            w._push()
            try:
                return step_function(*args, **kwargs)
            finally:
                w._pop()
                w.step()

        wrapper.watch = w
        return wrapper

    return decorate(func) if func is not None else decorate
