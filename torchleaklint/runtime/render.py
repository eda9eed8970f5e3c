"""The watcher's trend table (rich) and memory-vs-step plot per phase (matplotlib, Agg)."""

from __future__ import annotations

from typing import Optional

from rich.console import Console
from rich.table import Table

from ..harness.growth import KIB, kib
from .trend import WatchReport


def _rate(value: Optional[float], unit: str) -> str:
    if value is None:
        return "-"
    return kib(value) if unit == "bytes" else f"{value:+.2f}"


def print_report(report: WatchReport, console: Optional[Console] = None) -> None:
    if console is None:
        console = Console(stderr=True, highlight=False)
        if not console.is_terminal:
            console.width = max(console.width, 120)  # logs: one row per phase
    table = Table(title=f"torchleaklint watch '{report.label}': growth per step after {report.warmup} warm-up steps")
    for column in ("Phase", "Steps", "Autograd nodes", "Tensors", "Tensor bytes", "Heap", "RSS", "Figures",
                   "Trend"):
        table.add_column(column, no_wrap=True)
    for p in report.phases:
        r = p.per_step
        if p.growing:
            trend = "[red]GROWING[/red]"
        elif not p.judged:
            trend = f"[yellow]too few samples (needs ~{p.needs_steps} more steps)[/yellow]"
        else:
            trend = "[green]stable[/green]"
        table.add_row(p.phase, str(p.steps), _rate(r["nodes"], "n"), _rate(r["tensors"], "n"),
                      _rate(r["tensor_bytes"], "bytes"), _rate(r["heap"], "bytes"), _rate(r["rss"], "bytes"),
                      _rate(r["figures"], "n"), trend)
    console.print(table)
    for p in report.phases:
        if not p.judged and not p.growing:
            console.print(f"{p.phase}: too few samples to judge (needs ~{p.needs_steps} more steps)",
                          markup=False, highlight=False)
        for finding in p.findings:
            console.print(f"{p.phase}: {finding.message()}", markup=False, highlight=False)


def plot_report(report: WatchReport, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    key = "heap" if report.samples and report.samples[0].get("heap") is not None else "rss"
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for phase in dict.fromkeys(s["phase"] for s in report.samples):
        points = [(s["step"], s[key] / (1024 * KIB)) for s in report.samples if s["phase"] == phase]
        ax.plot([x for x, _ in points], [y for _, y in points], marker=".", label=phase)
    ax.set(xlabel="step", ylabel=f"{key} (MiB)", title=f"torchleaklint watch '{report.label}'")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
