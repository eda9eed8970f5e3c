"""The runtime harness: proves on a real PyTorch program that each autofix removes a leak.

``torchleaklint verify`` lints a reproduction of each rule's leak, applies the rule's real
autofix, runs both programs in fresh processes and compares how their memory grows.
Needs the ``harness`` extra (torch, psutil, matplotlib); the linter never imports it.
"""

from __future__ import annotations

import importlib.util
from typing import List

REQUIRED = ("torch", "psutil", "matplotlib")


def missing_requirements() -> List[str]:
    return [name for name in REQUIRED if importlib.util.find_spec(name) is None]
