"""Seed 004: a simulation records the population's ability level per step with torch.cat.

The recorded norm is never backpropagated: its graph keeps the step's ability tensor
(64 x 1024 floats), and each new history references the previous one."""

import torch
import torch.nn as nn

# What the harness compares before and after the fix (see torchleaklint.harness.growth).
SIGNAL = "nodes"


def main(steps, device, monitor):
    dynamics = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024)).to(device)
    optimizer = torch.optim.SGD(dynamics.parameters(), lr=1e-3)
    ability = torch.randn(64, 1024, device=device)
    ability_history = torch.zeros(0, 1024, device=device)
    losses = []
    for t in range(steps):
        ability_next = dynamics(ability)
        loss = (ability_next - ability).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        ability_history = torch.cat([ability_history, ability_next.norm(dim=0, keepdim=True)], dim=0)
        ability = ability_next.detach()
        losses.append(loss.item())
        monitor.step()
    return {"losses": losses, "history_sum": ability_history.sum()}
