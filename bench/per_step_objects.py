"""What grows when an object is made again on every step, measured side by side.

Each case runs in a fresh process and makes its object once per step (or per epoch) for
N steps, sampling glibc's in-use bytes (``mallinfo2``) and, for data loaders, the number
of worker processes alive after each epoch. The per-step growth is the slope over the
second half. These are the measurements behind TLL015 and TLL016 (which grow), and behind
the decision not to report ``torch.jit.script`` per step or a ``DataLoader(num_workers>0)``
rebuilt per epoch (which do not).

Run: ``python bench/per_step_objects.py [--steps 200]`` (needs the ``harness`` extra).
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import subprocess
import sys
import tempfile
import time

CASES = ("baseline", "trace_module", "trace_function", "script_module", "script_function", "new_group",
         "new_group_destroyed", "loader_reused", "loader_rebuilt", "loader_persistent_reused",
         "loader_persistent_rebuilt")


def _heap() -> int:
    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in
                    "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]

    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = MallInfo2
    gc.collect()
    return libc.mallinfo2().uordblks


def _slope(values):
    half = values[len(values) // 2:]
    n = len(half)
    mean_x, mean_y = (n - 1) / 2, sum(half) / n
    num = sum((i - mean_x) * (y - mean_y) for i, y in enumerate(half))
    den = sum((i - mean_x) ** 2 for i in range(n)) or 1
    return num / den


def run_case(case: str, steps: int) -> dict:
    import psutil
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
    example = torch.zeros(8, 64)

    def function(x):
        return torch.relu(x) * 2 + 1

    samples, workers = [], []
    started = time.perf_counter()
    if case.startswith("loader"):
        from torch.utils.data import DataLoader, TensorDataset

        data = TensorDataset(torch.randn(256, 16))
        persistent = "persistent" in case
        shared = DataLoader(data, batch_size=64, num_workers=2, persistent_workers=persistent)
        epochs = max(steps // 20, 6)
        for _ in range(epochs):
            loader = shared if "reused" in case else DataLoader(data, batch_size=64, num_workers=2,
                                                                persistent_workers=persistent)
            for _batch in loader:
                pass
            samples.append(_heap())
            workers.append(len(psutil.Process().children(recursive=True)))
        return {"case": case, "unit": "epoch", "bytes_per_unit": _slope(samples), "workers": workers,
                "seconds": time.perf_counter() - started}
    if case.startswith("new_group"):
        import torch.distributed as dist

        rendezvous = tempfile.mktemp(prefix="per-step-objects-")
        dist.init_process_group("gloo", init_method=f"file://{rendezvous}", rank=0, world_size=1)
    for _ in range(steps):
        if case == "trace_module":
            torch.jit.trace(model, example)
        elif case == "trace_function":
            torch.jit.trace(function, example)
        elif case == "script_module":
            torch.jit.script(model)
        elif case == "script_function":
            torch.jit.script(function)
        elif case.startswith("new_group"):
            group = dist.new_group([0])
            dist.all_reduce(torch.ones(4), group=group)
            if case == "new_group_destroyed":
                dist.destroy_process_group(group)
        samples.append(_heap())
    result = {"case": case, "unit": "step", "bytes_per_unit": _slope(samples), "seconds": time.perf_counter() - started}
    if case.startswith("new_group"):
        result["threads"] = psutil.Process().num_threads()
        result["open_files"] = psutil.Process().num_fds()
        dist.destroy_process_group()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--case", choices=CASES)
    args = parser.parse_args()
    if args.case:
        print(json.dumps(run_case(args.case, args.steps)))
        return
    env = dict(os.environ, OMP_NUM_THREADS="1")
    for case in CASES:
        proc = subprocess.run([sys.executable, __file__, "--case", case, "--steps", str(args.steps)],
                              capture_output=True, text=True, env=env, timeout=900)
        if proc.returncode != 0:
            print(f"{case:28s} failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
            continue
        row = json.loads(proc.stdout.strip().splitlines()[-1])
        extra = {k: v for k, v in row.items() if k in ("workers", "threads", "open_files")}
        print(f"{case:28s} {row['bytes_per_unit'] / 1024:+9.1f} KiB/{row['unit']:5s} {row['seconds']:6.1f} s  "
              f"{json.dumps(extra) if extra else ''}")


if __name__ == "__main__":
    main()
