"""Seed 000: an actor-critic update loop keeps every step's loss and feature scale for logging.

After ``backward()`` a stored loss keeps its graph's nodes; the feature scale was never
backpropagated, so its graph also keeps the saved features (64 x 1024 floats per step)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

# What the harness compares before and after the fix (see torchleaklint.harness.growth).
SIGNAL = "nodes"


class Critic(nn.Module):
    def __init__(self, obs_dim, hidden):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(obs_dim, hidden), nn.ReLU())
        self.value = nn.Linear(hidden, 1)

    def forward(self, obs):
        features = self.encoder(obs)
        return self.value(features), features


def main(steps, device, monitor):
    critic = Critic(256, 1024).to(device)
    optimizer = torch.optim.SGD(critic.parameters(), lr=1e-3)
    critic_losses = []
    feature_scales = []
    for step in range(steps):
        obs = torch.randn(64, 256, device=device)
        target = torch.randn(64, 1, device=device)
        value, features = critic(obs)
        critic_loss = F.mse_loss(value, target)
        optimizer.zero_grad()
        critic_loss.backward()
        optimizer.step()
        critic_losses.append(critic_loss)
        feature_scales.append(features.abs().mean())
        monitor.step()
    return {"mean_loss": sum(critic_losses) / len(critic_losses),
            "feature_scale": sum(feature_scales) / len(feature_scales)}
