"""A training loop registers its activation-statistics hook on every step and drops the handle.

Each step adds one more hook to the module; every hook keeps its closure, here the step's
reference activations (96 x 1024 floats, 384 KiB), and every forward pass runs all of them."""

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
        reference = torch.randn(96, 1024, device=device)

        def record(module, inputs, output, reference=reference):
            stats["drift"] = float(output.detach().mean() - reference.mean())

        model[1].register_forward_hook(record)
        x = torch.randn(32, 256, device=device)
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        monitor.step()
    return {"losses": losses}
