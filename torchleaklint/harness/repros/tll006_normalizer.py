"""Seed 004: a feature normalizer updates its running statistics from encoder outputs."""

import torch
import torch.nn as nn

# What the harness compares before and after the fix (see torchleaklint.harness.growth).
SIGNAL = "nodes"


class RunningNormalizer:
    def __init__(self, dim, device):
        self.count = 0
        self.mean = torch.zeros(dim, device=device)
        self.var = torch.ones(dim, device=device)

    def update(self, batch):
        self.count += 1
        delta = batch.mean(0) - self.mean
        self.mean = self.mean + delta / self.count
        self.var = 0.99 * self.var + 0.01 * batch.var(0)

    def __call__(self, batch):
        return (batch - self.mean.detach()) / (self.var.detach().sqrt() + 1e-5)


def main(steps, device, monitor):
    encoder = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024)).to(device)
    head = nn.Linear(1024, 1).to(device)
    optimizer = torch.optim.SGD(list(encoder.parameters()) + list(head.parameters()), lr=1e-3)
    normalizer = RunningNormalizer(1024, device)
    losses = []
    for step in range(steps):
        x = torch.randn(64, 256, device=device)
        features = encoder(x)
        normalizer.update(features)
        loss = head(normalizer(features)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        monitor.step()
    return {"losses": losses, "mean": normalizer.mean}
