"""Small leaking programs shared by the CLI, engine and config tests."""

import re

# TLL001 on line 7 (column 5); the safe fix appends `.item()`.
TLL001_SRC = """\
import torch
import torch.nn.functional as F
losses = []
for x, y in loader:
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    losses.append(loss)
print(sum(losses) / len(losses))
"""
TLL001_FIXED = TLL001_SRC.replace("losses.append(loss)", "losses.append(loss.item())")

# TLL002 on line 7 (column 5).
TLL002_SRC = """\
import torch
import torch.nn.functional as F
total = 0
for x, y in loader:
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    total += loss
print(total)
"""
TLL002_FIXED = TLL002_SRC.replace("total += loss", "total += loss.item()")

# TLL001 on line 8 and TLL002 on line 9.
BOTH_SRC = """\
import torch
import torch.nn.functional as F
losses = []
total = 0
for x, y in loader:
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    losses.append(loss)
    total += loss
print(sum(losses) / len(losses), total)
"""

CLEAN_SRC = TLL001_FIXED

# The only evidence that `loss` carries a graph is the name of the function that made it:
# the finding fires (a backward runs in the loop) but its fix is unsafe.
NAME_ONLY_SRC = """\
import torch
losses = []
for batch in data:
    loss = compute_loss(model(batch))
    other = net_out(batch)
    other.backward()
    losses.append(loss)
print(sum(losses))
"""

LINE_RE = re.compile(r"^(?P<path>[^\s:][^:]*):(?P<row>\d+):(?P<col>\d+): (?P<code>TLL\d{3}) (?P<fix>\[\*\] )?(?P<msg>\S.*)$")
