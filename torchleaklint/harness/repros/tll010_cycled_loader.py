"""A step-based pretraining loop draws batches from ``itertools.cycle(loader)``.

``cycle`` saves every batch it yields during its first pass over the loader, so host memory
grows by one batch (96 x 1024 floats, 384 KiB) per step until a whole epoch is held."""

import itertools

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

# What the harness compares before and after the fix (see torchleaklint.harness.growth).
SIGNAL = "bytes"


class Synthetic(Dataset):
    """Samples made on demand: the dataset itself holds nothing."""

    def __len__(self):
        return 100_000

    def __getitem__(self, index):
        generator = torch.Generator().manual_seed(index)
        return torch.randn(1024, generator=generator)


def main(steps, device, monitor):
    torch.manual_seed(0)
    model = nn.Linear(1024, 1).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    loader = DataLoader(Synthetic(), batch_size=96, shuffle=False)
    batches = itertools.cycle(loader)
    losses = []
    for step in range(steps):
        x = next(batches).to(device)
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        monitor.step()
    return {"losses": losses}
