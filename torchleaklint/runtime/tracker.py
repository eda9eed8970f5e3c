"""Live tensors counted as they are made, so that a sample needs no scan of every object.

``LiveTensors`` is a torch function mode: every torch call made from Python inside the
watched window passes through it, and each tensor it returns is remembered by a weak
reference that removes itself when the tensor dies. A sample then reads the tensors made
inside the window that are still alive (a kept loss, a loop-carried hidden state, a cache
of activations) and walks the autograd graphs they own, instead of asking the garbage
collector for every object it tracks (tens of milliseconds with torch loaded).

Tensors made where the mode cannot see them (C++ code, other threads) are left to the
watcher's rare full census.
"""

from __future__ import annotations

import functools
import weakref
from typing import Dict, List

import torch
from torch.overrides import TorchFunctionMode

from .sites import mark, tensors_in


class LiveTensors(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self._live: Dict[int, weakref.ref] = {}
        self.record_sites = False  # creation sites cost a frame walk per call: off until asked

    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        if isinstance(result, torch.Tensor):
            made = (result,)
        elif isinstance(result, (tuple, list)):
            made = tuple(tensors_in(result))
        else:
            return result  # sizes, numbers, nodes: most property reads end here
        live = self._live
        for tensor in made:
            key = id(tensor)
            if key not in live:
                try:
                    # The reference removes its own entry when the tensor dies.
                    live[key] = weakref.ref(tensor, functools.partial(live.pop, key))
                except TypeError:
                    continue  # a tensor type that cannot be weakly referenced
        if self.record_sites and made:
            mark(made)
        return result

    def __len__(self) -> int:
        return len(self._live)

    def tensors(self) -> List[torch.Tensor]:
        """The tensors made inside the window that are alive now."""
        found = []
        for ref in list(self._live.values()):
            tensor = ref()
            if tensor is not None:
                found.append(tensor)
        return found
