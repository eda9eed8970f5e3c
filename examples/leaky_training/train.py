"""A training script with the leaks from the incident write-ups. Run it with
``python train.py`` to watch memory grow; run ``torchleaklint --fix .`` to fix it."""

import numpy as np
import torch
import torch.nn as nn

from agent import Agent
from meters import AverageMeter

GRADIENT_STEPS = 32
ACCUMULATION_STEPS = 6


def make_batch(batch_size=64, obs_dim=32, act_dim=4):
    return torch.randn(batch_size, obs_dim), torch.rand(batch_size, act_dim) * 2 - 1, torch.randn(batch_size, 1)


def train_population(population, generations=3):
    for generation in range(generations):
        actor_losses, critic_losses = [], []
        for agent in population:
            for step in range(GRADIENT_STEPS):
                for accum_step in range(ACCUMULATION_STEPS):
                    is_last_accum = accum_step == ACCUMULATION_STEPS - 1
                    critic_loss, actor_loss = agent.update(make_batch(), accumulate=not is_last_accum)
                    actor_losses.append(actor_loss)
                    critic_losses.append(critic_loss)
        print(f"generation {generation}: actor {np.mean([float(l) for l in actor_losses]):.4f} "
              f"critic {np.mean([float(l) for l in critic_losses]):.4f}")


def train_classifier(epochs=2, steps=200):
    model = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 10))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = AverageMeter("loss")
    for epoch in range(epochs):
        total_loss = 0.0
        for _ in range(steps):
            x, y = torch.randn(256, 128), torch.randint(0, 10, (256,))
            loss = criterion(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.update(loss, x.size(0))
            total_loss += loss
        print(f"epoch {epoch}: mean loss {total_loss / steps:.4f} (meter {losses.avg:.4f})")


if __name__ == "__main__":
    train_population([Agent() for _ in range(2)])
    train_classifier()
