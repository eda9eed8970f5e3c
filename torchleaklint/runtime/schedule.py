"""When the watcher samples: at every step at first, then at intervals that grow with the step.

A leak shows within a few steps, so the first steps are all sampled; from ``DENSE_STEPS``
the interval is ``BACK_OFF`` of the step count, at least one (step 100 -> every 10th step,
step 10,000 -> every 1,000th): 63 samples in the first 1,000 steps and about 24 more per
tenfold growth of the run. ``every=k`` samples every k-th step instead.
"""

from __future__ import annotations

from typing import Optional

DENSE_STEPS = 16
BACK_OFF = 0.1


class Schedule:
    def __init__(self, every: Optional[int] = None) -> None:
        self.every = every

    def interval(self, step: int) -> int:
        """Steps from a sample taken at ``step`` to the next one."""
        if self.every is not None:
            return self.every
        return 1 if step < DENSE_STEPS else max(1, int(step * BACK_OFF))

    def steps_until(self, step: int, next_sample: int, samples: int, after: int) -> int:
        """Steps from ``step`` until ``samples`` more samples were taken at steps above ``after``."""
        at, taken = next_sample, 0
        while True:
            taken += at > after
            if taken >= samples:
                return at - step
            at += self.interval(at)
