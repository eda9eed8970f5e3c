"""Showing verdicts: a rich table, a JSON document with every sample, one PNG per rule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Sequence

from rich.console import Console
from rich.table import Table

from . import growth as g
from .verify import RuleVerdict


def _bytes_cell(verdict: RuleVerdict, variant: str) -> str:
    signals = verdict.growth.get(variant)
    if not signals:
        return "-"
    if verdict.signal == "peak":
        level = signals["peak"].level
        return "-" if level is None else f"peak {level / g.KIB:,.0f} KiB"
    per_step = signals["bytes"].per_step
    return "-" if per_step is None else g.kib(per_step)


def _count_cell(verdict: RuleVerdict, variant: str) -> str:
    signals = verdict.growth.get(variant)
    if not signals:
        return "-"
    name = verdict.signal if verdict.signal in ("nodes", "figures") else "nodes"
    per_step = signals[name].per_step
    return "-" if per_step is None else f"{per_step:+.1f} {name}"


def floors_note() -> str:
    return (f"Noise floors: {g.NOISE_FLOORS['nodes']:g} autograd nodes/step, {g.NOISE_FLOORS['figures']:g} "
            f"figures/step, {g.NOISE_FLOORS['bytes'] / g.KIB:g} KiB/step; transient peaks must drop by "
            f"{g.PEAK_DROP:.0%} from at least {g.PEAK_FLOOR / g.KIB:g} KiB.")


def render_table(console: Console, verdicts: Sequence[RuleVerdict], steps: int) -> None:
    table = Table(title=f"torchleaklint verify: {steps} and {2 * steps} steps per program, growth per step")
    for column in ("Rule", "Device", "Signal", "Bytes before", "Bytes after", "Count before",
                   "Count after", "Verdict"):
        table.add_column(column, no_wrap=True)
    for v in verdicts:
        verdict = "[green]CONFIRMED[/green]" if v.confirmed else "[red]NOT CONFIRMED[/red]"
        table.add_row(v.code, v.device, v.signal, _bytes_cell(v, "before"), _bytes_cell(v, "after"),
                      _count_cell(v, "before"), _count_cell(v, "after"), verdict)
    console.print(table)
    for v in verdicts:
        if not v.confirmed:
            console.print(f"{v.code}: {v.reason}", highlight=False, markup=False)
    console.print(floors_note(), highlight=False)


def render_json(verdicts: Sequence[RuleVerdict], steps: int) -> str:
    return json.dumps({"steps": steps, "floors": {**g.NOISE_FLOORS, "peak": g.PEAK_FLOOR},
                       "rules": [v.to_dict() for v in verdicts]}, indent=1)


def write_plots(verdicts: Sequence[RuleVerdict], folder: Path, steps: int) -> List[Path]:
    """One PNG per rule: the 2N-step runs' bytes and count signals, before and after the fix."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for v in verdicts:
        before, after = v.runs.get(f"before-{2 * steps}"), v.runs.get(f"after-{2 * steps}")
        if not before or not after or before.get("error") or after.get("error"):
            continue
        key = g.bytes_key(v.device, before["samples"])
        count = v.signal if v.signal in ("nodes", "figures") else "nodes"
        fig, (ax_bytes, ax_count) = plt.subplots(1, 2, figsize=(9, 3.4))
        for label, doc, style in (("before fix", before, "-"), ("after fix", after, "--")):
            xs = [s["step"] for s in doc["samples"]]
            base = doc["samples"][0][key] or 0
            ax_bytes.plot(xs, [((s[key] or 0) - base) / g.KIB for s in doc["samples"]], style, label=label)
            ax_count.plot(xs, [s[count] or 0 for s in doc["samples"]], style, label=label)
        ax_bytes.set(xlabel="step", ylabel=f"{key} since step 1 (KiB)", title=f"{v.code} memory ({v.device})")
        ax_count.set(xlabel="step", ylabel=count, title=f"{v.code} {count}")
        ax_bytes.legend()
        fig.tight_layout()
        path = folder / f"{v.code}.png"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written.append(path)
    return written
