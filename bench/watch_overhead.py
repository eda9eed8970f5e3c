"""What ``torchleaklint.watch`` finds in a short loop with its default settings, and what it costs.

``python bench/watch_overhead.py`` runs a small MLP's training step padded to ~1 ms, ~2 ms,
~50 ms (and with ``--slow`` ~1 s) per step, and prints one table:

- *leak*, *line*, *list*: in a loop that keeps ``losses.append(loss)`` after ``backward()``
  (about 6 autograd nodes and one tensor per step), the first step after which the default
  watch's report names a growing graph or tensors, the line that created the loss, and the
  list ``losses`` that keeps it (a variable of the step's closure, not of the loop's frame),
  up to 600 steps (50 for the ~1 s loop);
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
    """A training step of about ``step_ms`` unwatched that keeps its loss or its float: up to
    10 ms all computation (the batch grows until the step takes that long), above that a small
    step and a sleep for the rest, as a loop that waits for a device or a data loader would."""
    batch = 16
    while True:
        model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
        optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
        x, y = torch.randn(batch, 64), torch.randint(0, 10, (batch,))

        def compute():
            loss = F.cross_entropy(model(x), y)  # the line that creates the graph
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            return loss

        seconds = _per_call(compute)
        if step_ms > 10 or seconds * 1000 >= step_ms or batch >= 1 << 16:
            break
        batch = int(batch * 1.5)
    pad = 0.0
    if step_ms > 10:
        pad = step_ms / 1000 - seconds
        # A sleep overshoots by a roughly fixed amount: take it off the pad once.
        pad = max(pad - (_per_call(lambda: (compute(), time.sleep(pad))) - seconds - pad), 0.0)
    losses = []

    def step():
        loss = compute()
        losses.append(loss if keep == "tensor" else loss.item())
        if pad:
            time.sleep(pad)

    return step


def _per_call(function, calls: int = 20) -> float:
    for _ in range(5):
        function()
    started = time.perf_counter()
    for _ in range(calls):
        function()
    return (time.perf_counter() - started) / calls


def detection(step_ms: float, max_steps: int) -> tuple:
    """The steps after which the default watch's report first names (a) a growing graph or
    tensors, (b) the line that created the loss, (c) the list ``losses``; None if not seen."""
    step = make_step(step_ms, "tensor")
    seen, found = 0, [None, None, None]
    with torchleaklint.watch(label="leak") as w:
        for number in range(1, max_steps + 1):
            step()
            w.step()
            if len(w.samples) == seen:
                continue  # the report can only change when a sample was taken
            seen = len(w.samples)
            findings = w.report().findings
            checks = (any(f.kind in ("graph", "tensors") for f in findings),
                      any(f.kind == "graph" and "cross_entropy" in f.line for f in findings),
                      any((f.kind == "list" and "losses" in f.what) or "losses" in getattr(f, "kept_in", "")
                          for f in findings))
            found = [old or (number if check else None) for old, check in zip(found, checks)]
            if all(found):
                break
    return tuple(found)


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
    print("step at which the default watch's report first names the leak, its line, its list;")
    print("overhead of the watch on the clean loop over the same loop unwatched (median of rounds)")
    print(f"{'loop':>9}{'leak':>7}{'line':>7}{'list':>7}{'steps timed':>13}"
          f"{'unwatched':>11}{'default':>9}{'every=1':>9}")
    loops = LOOPS + ([(1000.0, 0)] if args.slow else [])
    for step_ms, steps in loops:
        limit = 50 if step_ms >= 1000 else 600
        found = detection(step_ms, limit)
        row = f"{step_ms:>6.0f} ms" + "".join(f"{at or f'>{limit}':>7}" for at in found)
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
