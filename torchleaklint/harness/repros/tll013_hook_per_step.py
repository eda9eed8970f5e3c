"""A training loop registers its activation-statistics hook on every step and drops the handle.

Each step adds one more hook to the module; every hook keeps its closure, here a
per-step weighting tensor (4096 floats, 16 KiB), and every forward pass runs all of them."""

import torch
import torch.nn as nn

# What the harness compares before and after the fix (see torchleaklint.harness.growth).
SIGNAL = "tensors"


def main(steps, device, monitor):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 4096), nn.ReLU(), nn.Linear(4096, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    stats = {}
    losses = []
    for step in range(steps):
        weight = torch.full((4096,), 1.0 / (step + 1), device=device)

        def record(module, inputs, output, weight=weight):
            stats["activation"] = float((output.detach() * weight).sum())

        model[1].register_forward_hook(record)
        x = torch.randn(32, 256, device=device)
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        monitor.step()
    return {"losses": losses}
