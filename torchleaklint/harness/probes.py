"""What the harness (and the runtime watcher) measures in a running PyTorch process.

Signals, cheapest and most deterministic first:

- ``nodes``: autograd nodes reachable from live tensors (every tensor the garbage collector
  knows, walked through ``grad_fn.next_functions``). Exact and allocator-independent: a kept
  graph shows up here on any device.
- ``tensors`` / ``tensor_bytes``: live tensors and the bytes of their distinct storages.
- ``heap``: glibc ``mallinfo2()`` bytes in use (small blocks + mmapped blocks) on Linux.
  Deterministic on the CPU once the child runs with ``MALLOC_MMAP_THRESHOLD_`` fixed.
- ``rss`` and ``step_peak``: resident set size, and the peak resident size reached during
  the step above the level at its end (``VmHWM`` reset through ``/proc/self/clear_refs``).
- ``cuda_allocated`` / ``cuda_reserved`` / ``cuda_step_peak``: the caching allocator's
  counters after ``synchronize()``, on CUDA only.
- ``figures``: open pyplot figures, when matplotlib's pyplot is loaded.

torch is imported lazily: the linter itself never imports this module.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
import re
import sys
from dataclasses import asdict, dataclass, field
from typing import Callable, Dict, Iterable, List, Optional

# glibc returns freed blocks above this size to the OS at once; without a fixed value its
# dynamic threshold keeps freed memory in the process and RSS stops tracking use.
MMAP_THRESHOLD_ENV = {"MALLOC_MMAP_THRESHOLD_": "65536"}


@dataclass
class Sample:
    step: int
    nodes: int
    tensors: int
    tensor_bytes: int
    heap: Optional[int]
    rss: Optional[int]
    step_peak: Optional[int]
    figures: Optional[int]
    cuda_allocated: Optional[int] = None
    cuda_reserved: Optional[int] = None
    cuda_step_peak: Optional[int] = None
    observed: Dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def _load_mallinfo2():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        fn = libc.mallinfo2  # glibc >= 2.33
    except (OSError, AttributeError):
        return None
    fn.restype = _MallInfo2
    fn.argtypes = []
    return fn


_MALLINFO2 = _load_mallinfo2()


def heap_in_use() -> Optional[int]:
    """Bytes malloc has handed out and not taken back (glibc only), else None."""
    if _MALLINFO2 is None:
        return None
    info = _MALLINFO2()
    return int(info.uordblks + info.hblkhd)


_STATUS = "/proc/self/status"


def _status_kib(key: str) -> Optional[int]:
    try:
        with open(_STATUS) as fh:
            match = re.search(rf"^{key}:\s+(\d+) kB", fh.read(), re.M)
    except OSError:
        return None
    return int(match.group(1)) * 1024 if match else None


def rss() -> Optional[int]:
    value = _status_kib("VmRSS")
    if value is not None:
        return value
    try:
        import psutil
    except ImportError:
        return None
    return int(psutil.Process().memory_info().rss)


def reset_peak_rss() -> bool:
    """Start a new high-water mark for the resident size (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def peak_rss() -> Optional[int]:
    return _status_kib("VmHWM")


_TENSOR_TYPES: Dict[type, bool] = {}


def live_tensors(objects: Optional[List[object]] = None) -> List[object]:
    """Every tensor the garbage collector tracks (one type check per distinct type)."""
    import torch

    if objects is None:
        objects = gc.get_objects()
    known = _TENSOR_TYPES
    for kind in set(map(type, objects)) - known.keys():
        # issubclass on the type: isinstance would consult proxies that warn when touched.
        known[kind] = issubclass(kind, torch.Tensor)
    tensor_types = {kind for kind, is_tensor in known.items() if is_tensor}
    return [obj for obj in objects if type(obj) in tensor_types]


def autograd_nodes(tensors: Iterable[object]) -> int:
    """Distinct autograd nodes reachable from the tensors' ``grad_fn``."""
    seen: Dict[int, object] = {}  # holding the nodes keeps their ids unique during the walk
    stack = [t.grad_fn for t in tensors if getattr(t, "grad_fn", None) is not None]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen[id(node)] = node
        for child, _ in getattr(node, "next_functions", ()):
            if child is not None and id(child) not in seen:
                stack.append(child)
    return len(seen)


def tensor_bytes(tensors: Iterable[object]) -> int:
    """Bytes of the distinct storages behind the tensors (views share their base's)."""
    storages: Dict[tuple, int] = {}
    for t in tensors:
        try:
            storage = t.untyped_storage()
            key = (str(t.device), storage.data_ptr())
            storages[key] = max(storages.get(key, 0), storage.nbytes())
        except (RuntimeError, NotImplementedError, AttributeError):
            continue  # sparse, meta or functional tensors have no plain storage
    return sum(storages.values())


def open_figures() -> Optional[int]:
    pyplot = sys.modules.get("matplotlib.pyplot")
    return None if pyplot is None else len(pyplot.get_fignums())


class CudaCounters:
    """The CUDA caching allocator's counters; every read synchronises the device first."""

    def __init__(self, device) -> None:
        import torch

        self.cuda = torch.cuda
        self.device = device

    def reset_peak(self) -> None:
        self.cuda.synchronize(self.device)
        self.cuda.reset_peak_memory_stats(self.device)

    def read(self) -> Dict[str, int]:
        cuda = self.cuda
        cuda.synchronize(self.device)
        allocated = int(cuda.memory_allocated(self.device))
        peak = int(cuda.max_memory_allocated(self.device))
        # Cached but unused blocks would make `reserved` lag behind frees by an arbitrary amount.
        cuda.empty_cache()
        return {"cuda_allocated": allocated, "cuda_reserved": int(cuda.memory_reserved(self.device)),
                "cuda_step_peak": max(peak - allocated, 0)}


class Sampler:
    """Takes one ``Sample`` per step; ``begin()`` marks where the first step starts."""

    def __init__(self, device: str = "cpu", full_collection_every: int = 0) -> None:
        self.cuda = CudaCounters(device) if str(device).startswith("cuda") else None
        self.step_index = 0
        self.samples_taken = 0
        self.full_collection_every = full_collection_every

    def begin(self, collect: bool = True) -> None:
        if collect:
            gc.collect()
        reset_peak_rss()
        if self.cuda is not None:
            self.cuda.reset_peak()

    def sample(self, census: Optional[Callable[[Optional[List[object]], List[object]], None]] = None,
               tensors: Optional[Callable[[], List[object]]] = None, **observed: float) -> Sample:
        """One sample of the tensors the collector tracks, where ``census(objects, tensors)``
        may look at the same object scan; or, given ``tensors()`` (the watcher counts tensors
        as they are made), a sample of the tensors it returns after the collection, without a
        scan (``census`` then sees ``None`` for the objects)."""
        self.step_index += 1
        scan = tensors is None
        # Garbage cycles would make every count depend on when the collector last ran. The
        # young generations hold a step's garbage; a full pass (~0.1-0.5 s with torch loaded)
        # also frees the rare cycle that reached the oldest generation, which a watcher of an
        # arbitrary program does now and then, and a run of a known reproduction never needs.
        every = self.full_collection_every
        gc.collect() if scan and every and self.samples_taken % every == 0 else gc.collect(1)
        self.samples_taken += scan
        # Memory first: the census below allocates a list of every tracked object.
        heap, resident, peak = heap_in_use(), rss(), peak_rss()
        objects = gc.get_objects() if scan else None
        tensors = live_tensors(objects) if scan else tensors()
        if census is not None:
            census(objects, tensors)
        del objects
        sample = Sample(
            step=self.step_index, nodes=autograd_nodes(tensors), tensors=len(tensors),
            tensor_bytes=tensor_bytes(tensors), heap=heap, rss=resident,
            step_peak=None if peak is None or resident is None else max(peak - resident, 0),
            figures=open_figures(), observed={k: float(v) for k, v in observed.items()})
        del tensors
        if self.cuda is not None:
            for key, value in self.cuda.read().items():
                setattr(sample, key, value)
            self.cuda.reset_peak()
        reset_peak_rss()
        return sample


def child_environment(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """The environment for a measured child process."""
    env = dict(os.environ)
    env.update(MMAP_THRESHOLD_ENV)
    env.setdefault("MPLBACKEND", "Agg")
    env.setdefault("OMP_NUM_THREADS", "1")
    env["PYTHONHASHSEED"] = "0"
    env.update(extra or {})
    return env
