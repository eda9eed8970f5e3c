"""Seed 001: a trainer plots its progress every generation and never closes the figure."""

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# What the harness compares before and after the fix (see torchleaklint.harness.growth).
SIGNAL = "figures"


def plot_progress(history, sink):
    fig, ax = plt.subplots(figsize=(4, 3), dpi=50)
    ax.plot(history)
    ax.set_title("fitness")
    fig.savefig(sink, format="png")


def main(steps, device, monitor):
    history = []
    sizes = []
    for generation in range(steps):
        history.append(generation * 0.5)
        sink = io.BytesIO()
        plot_progress(history, sink)
        sizes.append(len(history))
        monitor.step()
    return {"points_plotted": sizes}
