"""An epoch loop sums the loss and the hidden activations' scale for its progress report.

The sums keep every step's graph: the loss's nodes, and for the activation scale, which was
never backpropagated, the saved hidden activations (64 x 1024 floats per step)."""

import torch
import torch.nn as nn

# What the harness compares before and after the fix (see torchleaklint.harness.growth).
SIGNAL = "nodes"


def main(steps, device, monitor):
    encoder = nn.Sequential(nn.Linear(256, 1024), nn.ReLU()).to(device)
    classifier = nn.Linear(1024, 10).to(device)
    params = list(encoder.parameters()) + list(classifier.parameters())
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(params, lr=1e-3)
    total_loss = 0.0
    total_activation = 0.0
    for step in range(steps):
        x = torch.randn(64, 256, device=device)
        y = torch.randint(0, 10, (64,), device=device)
        hidden = encoder(x)
        loss = criterion(classifier(hidden), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total_loss += loss
        total_activation += hidden.abs().mean()
        monitor.step()
    return {"average_loss": total_loss / steps, "average_activation": total_activation / steps}
