"""Overhead of ``torchleaklint.watch`` on a small model's training step.

``python bench/watch_overhead.py [--steps 2000]`` times the same loop unwatched, watched with
the default (budgeted) sampling, and watched with ``every=1000``, interleaved in one run, and
prints milliseconds per step and the overhead ratios. Needs the ``harness`` extra.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import torchleaklint


def make_step():
    model = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(64, 128), torch.randint(0, 10, (64,))

    def step():
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    return step


def timed(steps: int, **watch_options) -> float:
    step = make_step()
    for _ in range(20):
        step()
    started = time.perf_counter()
    if watch_options is None or watch_options.get("off"):
        for _ in range(steps):
            step()
    else:
        with torchleaklint.watch(label="bench", **watch_options) as w:
            for _ in range(steps):
                step()
                w.step()
    return (time.perf_counter() - started) / steps * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    variants = {"unwatched": {"off": True}, "watch (default budget)": {}, "watch every=1000": {"every": 1000}}
    results = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, options in variants.items():
            results[name].append(timed(args.steps, **options))
    base = statistics.median(results["unwatched"])
    print(f"{'variant':<26}{'ms/step (median)':>18}{'overhead':>10}")
    for name, values in results.items():
        ms = statistics.median(values)
        print(f"{name:<26}{ms:>18.3f}{(ms / base - 1) * 100:>9.1f}%")


if __name__ == "__main__":
    main()
