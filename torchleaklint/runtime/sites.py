"""Where tensors and autograd nodes were created, recorded only inside a watched window.

The watcher's torch function mode (``tracker.LiveTensors``) sees every torch call made from
Python; while it records sites, ``mark`` stores the first frame outside torch and
torchleaklint on each result's ``grad_fn`` (in the node's ``metadata`` dict, which lives and
dies with the node) or, for tensors without a graph, on the tensor itself.
"""

from __future__ import annotations

import os
import sys
from typing import Dict, Iterable, Iterator, Optional, Tuple

import torch

Site = Tuple[str, int, str]  # file, line, function
SITE_KEY = "torchleaklint_site"
# torch's own frames and the watcher's are not where a user's tensor was made; the harness's
# reproductions (torchleaklint/harness/repros) are user code and keep their frames.
_SKIP = (os.path.dirname(torch.__file__) + os.sep, os.path.dirname(__file__) + os.sep,
         os.path.join(os.path.dirname(os.path.dirname(__file__)), "harness", "probes.py"))


def _first_user_frame() -> Optional[Site]:
    frame = sys._getframe(2)  # the frames of mark() and the mode are skipped below anyway
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(_SKIP) and not filename.startswith("<frozen"):
            return filename, frame.f_lineno, frame.f_code.co_name
        frame = frame.f_back
    return None


def tensors_in(value) -> Iterator[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            if isinstance(item, torch.Tensor):
                yield item


def mark(tensors: Iterable[torch.Tensor]) -> None:
    """Record the calling user line on each tensor's ``grad_fn`` (or on the tensor itself)."""
    site = None
    for tensor in tensors:
        node = tensor.grad_fn
        try:
            if node is not None:
                metadata = node.metadata
                if SITE_KEY not in metadata:
                    site = site or _first_user_frame()
                    metadata[SITE_KEY] = site
            elif not hasattr(tensor, "_" + SITE_KEY):
                site = site or _first_user_frame()
                setattr(tensor, "_" + SITE_KEY, site)
        except (AttributeError, RuntimeError, TypeError):
            continue  # functional/wrapper tensors without metadata or attributes


def node_site(node) -> Optional[Site]:
    try:
        return node.metadata.get(SITE_KEY)
    except (AttributeError, RuntimeError):
        return None


def tensor_site(tensor) -> Optional[Site]:
    node = tensor.grad_fn
    if node is not None:
        return node_site(node)
    return getattr(tensor, "_" + SITE_KEY, None)


def nodes_by_site(tensors: Iterable[torch.Tensor]) -> Dict[Optional[Site], int]:
    """Reachable autograd nodes, counted by the line that created each."""
    counts: Dict[Optional[Site], int] = {}
    seen: Dict[int, object] = {}
    # One torch call can create several nodes (linear: addmm and a transpose); the ones it
    # did not return carry no site and take the site of the node that reached them.
    stack = [(t.grad_fn, None) for t in tensors if t.grad_fn is not None]
    while stack:
        node, inherited = stack.pop()
        if id(node) in seen:
            continue
        seen[id(node)] = node
        site = node_site(node) or inherited
        counts[site] = counts.get(site, 0) + 1
        for child, _ in node.next_functions:
            if child is not None and id(child) not in seen:
                stack.append((child, site))
    return counts
