"""``torchleaklint verify``: run every fixable rule's reproduction before and after its fix."""

from __future__ import annotations

import os
import sys

import click

from .. import rules as registry
from . import missing_requirements

EXIT_OK, EXIT_NOT_CONFIRMED, EXIT_ERROR = 0, 1, 2


def _fail(message: str) -> click.exceptions.Exit:
    click.echo(f"torchleaklint: error: {message}", err=True)
    return click.exceptions.Exit(EXIT_ERROR)


def _codes(rules) -> list:
    codes = []
    for item in rules:
        if not item.strip(" ,"):
            raise _fail(f"--rule needs a rule code, got {item!r} (see `torchleaklint rules`)")
        for code in filter(None, (c.strip().upper() for c in item.split(","))):
            rule = registry.RULES_BY_CODE.get(code)
            if rule is None:
                raise _fail(f"unknown rule code '{code}' (see `torchleaklint rules`)")
            if rule.repro is None:
                raise _fail(f"{code} has no autofix, so there is nothing to verify")
            codes.append(code)
    return codes or [r.code for r in registry.ALL_RULES if r.repro]


MAX_TIMEOUT = 86_400.0  # a day: beyond it a wait is a hang, and time arithmetic overflows


def _timeout(text: str) -> float:
    """``--timeout``: a finite number of seconds from 1 to a day (``nan``, ``inf`` and
    ``1e300`` are refused here, not by a traceback in the middle of a run)."""
    import math

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 1 <= value <= MAX_TIMEOUT):
        raise _fail(f"--timeout must be a number of seconds from 1 to {MAX_TIMEOUT:.0f}, got {text!r}")
    return value


def _device(requested: str) -> str:
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        raise _fail("--device cuda: no CUDA device is available (torch.cuda.is_available() is False)")
    return requested


@click.command()
@click.option("--rule", "rules", multiple=True, help="Rule codes to verify (default: every rule with a fix).")
@click.option("--steps", type=click.IntRange(4, 10_000), default=12, show_default=True,
              help="Steps of the short run; the long run makes twice as many.")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True)
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--plot", "plot_dir", type=click.Path(file_okay=False), default=None,
              help="Write one PNG per rule (memory vs step, before and after) into this folder.")
@click.option("--jobs", type=click.IntRange(1, 64), default=None, help="Programs measured at once (default: CPUs).")
@click.option("--timeout", type=str, default="300", show_default=True,
              help=f"Seconds before a measured program is stopped (1 to {MAX_TIMEOUT:.0f}).")
def verify(rules, steps, device, output_format, plot_dir, jobs, timeout) -> None:
    """Prove on real PyTorch programs that each autofix removes its leak."""
    missing = missing_requirements()
    if missing:
        raise _fail(f"verify needs the harness extra: pip install 'torchleaklint[harness]' "
                    f"(missing: {', '.join(missing)})")
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from .report import render_json, render_table, write_plots
    from .verify import child_runs, reproductions, verify as run_verify

    codes = _codes(rules)
    timeout = _timeout(timeout)
    device = _device(device)
    repros = reproductions(codes)
    console = Console(stderr=True, highlight=False)
    jobs = jobs or os.cpu_count() or 1
    if console.is_terminal and output_format == "text":
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=console, transient=True) as progress:
            task = progress.add_task("measuring", total=child_runs(repros))
            verdicts = run_verify(repros, steps, device, timeout, jobs,
                                  on_run_done=lambda label: progress.update(task, advance=1, description=label))
    else:
        verdicts = run_verify(repros, steps, device, timeout, jobs)
    if output_format == "json":
        click.echo(render_json(verdicts, steps))
    else:
        out = Console(highlight=False, no_color=bool(os.environ.get("NO_COLOR")))
        if not out.is_terminal:
            out.width = max(out.width, 120)  # logs and pipes: keep each rule on one row
        render_table(out, verdicts, steps)
    if plot_dir:
        from pathlib import Path

        for path in write_plots(verdicts, Path(plot_dir), steps):
            click.echo(f"wrote {path}", err=True)
    sys.stdout.flush()
    raise click.exceptions.Exit(EXIT_OK if all(v.confirmed for v in verdicts) else EXIT_NOT_CONFIRMED)
