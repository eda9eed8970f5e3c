"""The measured child process: ``python -m torchleaklint.harness.child PROGRAM --steps N``.

Loads PROGRAM (a file defining ``main(steps, device, monitor)``), seeds torch, runs it with a
monitor that samples every probe after each step, and writes one JSON document: the device,
every sample, and the program's result made plain (tensors become nested floats) so that the
parent can compare the original and the fixed program. A failure is one line in ``error``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
import traceback
from typing import List, Optional

from .probes import Sample, Sampler


class Monitor:
    """What a program calls once per iteration: ``monitor.step(**observed)``."""

    def __init__(self, sampler: Sampler) -> None:
        self.sampler = sampler
        self.samples: List[Sample] = []

    def step(self, **observed: float) -> None:
        self.samples.append(self.sampler.sample(**observed))


def resolve_device(requested: str) -> str:
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError("CUDA was requested but torch.cuda.is_available() is False")
    return requested


def plain(value):
    """The program's result as JSON: tensors as (nested) floats, containers element-wise."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().cpu().double().tolist()
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return float(value)
    return repr(value)


def load_program(path: str):
    spec = importlib.util.spec_from_file_location("measured_program", path)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not callable(getattr(module, "main", None)):
        raise RuntimeError(f"{path} defines no main(steps, device, monitor)")
    return module


def run(path: str, steps: int, device: str) -> dict:
    import torch

    torch.manual_seed(0)
    torch.set_num_threads(1)
    device = resolve_device(device)
    program = load_program(path)
    sampler = Sampler(device)
    monitor = Monitor(sampler)
    started = time.perf_counter()
    sampler.begin()
    result = program.main(steps, device, monitor)
    seconds = time.perf_counter() - started
    if len(monitor.samples) != steps:
        raise RuntimeError(f"the program called monitor.step() {len(monitor.samples)} times for {steps} steps")
    return {"device": device, "torch": torch.__version__, "steps": steps, "seconds": seconds,
            "samples": [s.to_dict() for s in monitor.samples], "result": plain(result), "error": None}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m torchleaklint.harness.child")
    parser.add_argument("program")
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    try:
        document = run(args.program, args.steps, args.device)
        status = 0
    except Exception as exc:  # the parent reports it; the child must always write its answer
        last = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
        where = f" ({last.filename.rsplit('/', 1)[-1]}:{last.lineno})" if last else ""
        document = {"error": f"{type(exc).__name__}: {exc}{where}".replace("\n", " ")}
        status = 1
    with open(args.out, "w") as fh:
        json.dump(document, fh)
    return status


if __name__ == "__main__":
    sys.exit(main())
