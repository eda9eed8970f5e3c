"""What ``torchleaklint.watch`` finds in a short loop with its default settings, and what it costs.

``python bench/watch_overhead.py`` runs a small MLP's training step padded to ~1 ms, ~2 ms,
~50 ms (and with ``--slow`` ~1 s) per step, and prints one table:

- *detected at*: in a loop that keeps ``losses.append(loss)`` after ``backward()`` (about 6
  autograd nodes and one tensor per step), the first step after which the default watch's
  report names a growing graph or tensors; *line* and *holder* say whether that report points
  at the line that created the loss and at the list ``losses`` that keeps it;
- *overhead*: in the same loop with ``losses.append(loss.item())`` (clean), the loop's time
  watched with the defaults and with ``every=1`` over unwatched, interleaved in one run and
  repeated ``--rounds`` times (median). The loop time includes entering the watch.

Timings on a shared machine are noisy: compare the ratios within one run. Needs the
``harness`` extra. ``PYTHONPATH=<a checkout>`` measures another version of the watcher.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import torchleaklint


def make_step(step_ms: float, keep: str):
    """A training step of at least ``step_ms`` (computation, then sleep for the rest, as a
    loop that waits for a device or a data loader would) that keeps its loss or its float."""
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
    losses = []

    def compute():
        loss = F.cross_entropy(model(x), y)  # the line that creates the graph
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    for _ in range(20):
        compute()
    started = time.perf_counter()
    for _ in range(50):
        compute()
    pad = max(step_ms / 1000 - (time.perf_counter() - started) / 50, 0.0)

    def step():
        started = time.perf_counter()
        loss = compute()
        losses.append(loss if keep == "tensor" else loss.item())
        while pad and time.perf_counter() - started < pad:
            time.sleep(min(pad / 4, 0.002))

    return step


def detection(step_ms: float, max_steps: int) -> tuple:
    """(step at which the default watch first reports the leak or None, line named, holder named)."""
    step = make_step(step_ms, "tensor")
    seen = 0
    with torchleaklint.watch(label="leak") as w:
        for number in range(1, max_steps + 1):
            step()
            w.step()
            if len(w.samples) == seen:
                continue  # the report can only change when a sample was taken
            seen = len(w.samples)
            findings = w.report().findings
            if any(f.kind in ("graph", "tensors") for f in findings):
                line = any(f.kind == "graph" and "cross_entropy" in f.line for f in findings)
                holder = any(f.kind == "list" and "losses" in f.what for f in findings)
                return number, line, holder
    return None, False, False


def timed(step_ms: float, steps: int, **options) -> float:
    step = make_step(step_ms, "float")
    started = time.perf_counter()
    if options.pop("off", False):
        for _ in range(steps):
            step()
    else:
        with torchleaklint.watch(label="bench", **options) as w:
            for _ in range(steps):
                step()
                w.step()
    return time.perf_counter() - started


LOOPS = [(1.0, 600), (2.0, 600), (50.0, 100)]  # (ms per step, steps timed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--slow", action="store_true", help="also the ~1 s/step loop (detection only)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"{'loop':>9}{'detected at':>13}{'line':>6}{'holder':>8}{'steps timed':>13}"
          f"{'unwatched':>11}{'default':>9}{'every=1':>9}")
    loops = LOOPS + ([(1000.0, 0)] if args.slow else [])
    for step_ms, steps in loops:
        found, line, holder = detection(step_ms, 50 if step_ms >= 1000 else 600)
        at = f"{found}" if found else ("> 50" if step_ms >= 1000 else "> 600")
        row = f"{step_ms:>6.0f} ms{at:>13}{'yes' if line else 'no':>6}{'yes' if holder else 'no':>8}"
        if not steps:
            print(row + f"{'-':>13}{'-':>11}{'-':>9}{'-':>9}")
            continue
        variants = {"unwatched": {"off": True}, "default": {}}
        if step_ms <= 2:
            variants["every=1"] = {"every": 1}
        results = {name: [] for name in variants}
        for _ in range(args.rounds):
            for name, options in variants.items():
                results[name].append(timed(step_ms, steps, **options))
        base = statistics.median(results["unwatched"])
        cells = [f"{base / steps * 1000:>8.2f} ms"]
        for name in ("default", "every=1"):
            cells.append(f"{(statistics.median(results[name]) / base - 1) * 100:>+8.0f}%" if name in results
                         else f"{'-':>9}")
        print(row + f"{steps:>13}" + "".join(cells))


if __name__ == "__main__":
    main()
