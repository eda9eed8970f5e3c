"""Seed 001: a trading environment records every observation of the run."""

import torch

# What the harness compares before and after the fix (see torchleaklint.harness.growth).
SIGNAL = "bytes"
# Lint options for the fix under test: a bound that the run exceeds.
LINT_OPTIONS = {"tll004": {"history-maxlen": 4}}


class TradingEnvironment:
    def __init__(self, n_assets, window, device):
        self.prices = torch.ones(n_assets, window, device=device)
        self.history = []

    def step(self, action):
        self.prices = self.prices * (1.0 + 0.001 * action.unsqueeze(1))
        observation = self.prices.clone()
        self.history.append(observation)
        return observation, float(observation.mean())


def main(steps, device, monitor):
    env = TradingEnvironment(256, 256, device)
    generator = torch.Generator(device="cpu").manual_seed(0)
    rewards = []
    for step in range(steps):
        action = torch.randn(256, generator=generator).to(device)
        _, reward = env.step(action)
        rewards.append(reward)
        monitor.step()
    return {"rewards": rewards}
