"""Seed 001: an evolutionary trainer clones agents by loading deep-copied state dicts."""

import copy

import torch
import torch.nn as nn

# What the harness compares before and after the fix (see torchleaklint.harness.growth).
SIGNAL = "peak"


class Agent:
    def __init__(self, device):
        self.actor = nn.Sequential(nn.Linear(512, 1024), nn.Tanh(), nn.Linear(1024, 512)).to(device)
        self.device = device

    def clone(self):
        new_agent = Agent(self.device)
        new_agent.actor.load_state_dict(copy.deepcopy(self.actor.state_dict()))
        return new_agent


def main(steps, device, monitor):
    elite = Agent(device)
    checksums = []
    for generation in range(steps):
        child = elite.clone()
        with torch.no_grad():
            for p in child.actor.parameters():
                p.add_(0.01)
            checksums.append(sum(float(p.sum()) for p in child.actor.parameters()))
        elite = child
        monitor.step()
    return {"checksums": checksums}
