"""A data-parallel training loop makes its gradient-averaging process group on every step.

``torch.distributed`` keeps every group until ``destroy_process_group(group)``; each gloo
group holds its own context, connections and threads (about 44 KiB of host memory, three
threads and a few file descriptors each, measured with one process on CPU)."""

import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn

# What the harness compares before and after the fix (see torchleaklint.harness.growth).
SIGNAL = "bytes"


def main(steps, device, monitor):
    torch.manual_seed(0)
    rendezvous = tempfile.NamedTemporaryFile(prefix="tll015-", delete=False)
    rendezvous.close()
    os.unlink(rendezvous.name)
    dist.init_process_group("gloo", init_method=f"file://{rendezvous.name}", rank=0, world_size=1)
    try:
        model = nn.Linear(64, 1).to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
        losses = []
        for step in range(steps):
            group = dist.new_group(ranks=[0])
            x = torch.randn(32, 64, device=device)
            loss = model(x).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            for p in model.parameters():
                dist.all_reduce(p.grad, group=group)
            optimizer.step()
            losses.append(loss.item())
            monitor.step()
        return {"losses": losses}
    finally:
        dist.destroy_process_group()
