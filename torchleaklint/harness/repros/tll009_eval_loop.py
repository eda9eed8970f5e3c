"""An evaluation pass over the validation set sums the loss with autograd recording."""

import torch
import torch.nn as nn

# What the harness compares before and after the fix (see torchleaklint.harness.growth).
SIGNAL = "nodes"


def validation_batches(steps, device):
    generator = torch.Generator().manual_seed(1)
    for _ in range(steps):
        yield (torch.randn(64, 256, generator=generator).to(device),
               torch.randint(0, 10, (64,), generator=generator).to(device))


def evaluate(model, batches, criterion, monitor):
    model.eval()
    val_loss = 0.0
    count = 0
    for x, y in batches:
        val_loss += criterion(model(x), y)
        count += 1
        monitor.step()
    return val_loss / count


def main(steps, device, monitor):
    model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 10)).to(device)
    batches = validation_batches(steps, device)
    return {"val_loss": evaluate(model, batches, nn.CrossEntropyLoss(), monitor)}
