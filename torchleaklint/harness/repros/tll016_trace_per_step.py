"""A training loop exports a TorchScript trace of its model after every step.

Each ``torch.jit.trace`` compiles a new graph and registers its type in TorchScript's global
compilation unit, which keeps it after the traced module is dropped (about 270 KiB per trace
of this model, measured on CPU)."""

import torch
import torch.nn as nn

# What the harness compares before and after the fix (see torchleaklint.harness.growth).
SIGNAL = "bytes"


def main(steps, device, monitor):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    example = torch.zeros(1, 64, device=device)
    losses = []
    exported = []
    for step in range(steps):
        x = torch.randn(32, 64, device=device)
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        traced = torch.jit.trace(model, example)
        exported.append(traced(example).item())
        losses.append(loss.item())
        monitor.step()
    return {"losses": losses, "exported": exported}
