"""The command line: ``torchleaklint [check] PATHS``, ``rules``, ``explain CODE``.

Exit codes: 0 no findings, 1 findings remain, 2 usage, configuration or internal error.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import List, Optional

import click
from rich.console import Console
from rich.markdown import Markdown
from rich.table import Table

from . import __version__
from .config import ConfigError, Settings, find_pyproject, load_settings, parse_selectors
from .engine.cache import CACHE_DIR_NAME, clean as clean_cache, default_cache_dir
from .engine.discover import DiscoveryError
from .engine.parallel import default_jobs
from .report import FORMATS, TextReporter, render_json
from .rules import ALL_RULES, RULES_BY_CODE
from .runner import run

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2

# Deeply nested generated code (long elif chains, huge literals) exceeds CPython's default.
sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))


class _DefaultToCheck(click.Group):
    """``torchleaklint PATHS`` means ``torchleaklint check PATHS`` (like ruff)."""

    def parse_args(self, ctx, args):
        if not args or (args[0] not in self.commands and args[0] not in ("--help", "-h", "--version")):
            args.insert(0, "check")
        return super().parse_args(ctx, args)


def _fail(message: str) -> "click.exceptions.Exit":
    click.echo(f"torchleaklint: error: {message}", err=True)
    return click.exceptions.Exit(EXIT_ERROR)


def _console(no_color: bool, stderr: bool = False) -> Console:
    no_color = no_color or bool(os.environ.get("NO_COLOR"))
    return Console(stderr=stderr, highlight=False, soft_wrap=True, no_color=no_color, emoji=False,
                   color_system=None if no_color else "auto")


@click.group(cls=_DefaultToCheck, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="torchleaklint")
def main() -> None:
    """Find and fix the PyTorch memory anti-patterns that crash long training runs."""


@main.command()
@click.argument("paths", nargs=-1, type=str)
@click.option("--fix", is_flag=True, help="Apply safe fixes.")
@click.option("--unsafe-fixes/--no-unsafe-fixes", default=None, help="Also apply (or show) unsafe fixes.")
@click.option("--diff", is_flag=True, help="Print the diff that --fix would make; write nothing.")
@click.option("--select", multiple=True, help="Rule codes or prefixes to enable (comma-separated, or ALL).")
@click.option("--extend-select", multiple=True, help="Rule codes or prefixes to enable in addition.")
@click.option("--ignore", multiple=True, help="Rule codes or prefixes to disable.")
@click.option("--output-format", type=click.Choice(FORMATS), default="text", show_default=True)
@click.option("--show-evidence", is_flag=True, help="Explain why each finding fired.")
@click.option("--statistics", is_flag=True, help="Print a count per rule instead of each finding.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain.")
@click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary.")
@click.option("--config", "config_path", type=str, default=None, help="Path to a pyproject.toml to use.")
@click.option("--no-color", is_flag=True, help="Disable colours (also: NO_COLOR).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
              help="Worker processes for checking (default: the number of CPUs).")
@click.option("--no-cache", is_flag=True,
              help=f"Do not read or write the cache ({CACHE_DIR_NAME}/, or $TORCHLEAKLINT_CACHE_DIR).")
@click.version_option(__version__, prog_name="torchleaklint")
def check(paths, fix, unsafe_fixes, diff, select, extend_select, ignore, output_format, show_evidence,
          statistics, exit_zero, quiet, config_path, no_color, jobs, no_cache) -> None:
    """Lint PATHS (default: the current folder)."""
    paths = list(paths) or ["."]
    try:
        settings = _settings(paths, config_path, select, extend_select, ignore, unsafe_fixes)
        result = run(paths, settings, fix=fix, diff=diff, unsafe=settings.unsafe_fixes,
                     jobs=jobs or default_jobs(), cache=not no_cache)
    except (ConfigError, DiscoveryError) as exc:
        raise _fail(str(exc))
    out = _console(no_color)
    reporter = TextReporter(out, concise=output_format == "concise", show_evidence=show_evidence,
                            unsafe_fixes=settings.unsafe_fixes)
    diags = result.diagnostics
    if diff:
        for chunk in result.diffs:
            click.echo(chunk, nl=False)
    if output_format == "json":
        click.echo(render_json(diags))
    elif statistics:
        reporter.statistics(diags, {code: rule.name for code, rule in RULES_BY_CODE.items()})
    elif not diff:
        reporter.diagnostics(diags)
        if not quiet:
            reporter.summary(diags, fixed=result.fixed if fix else 0)
    elif not quiet:
        err = _console(no_color, stderr=True)
        n = result.fixed
        err.print(f"Would fix {n} error{'s' if n != 1 else ''} in {len(result.changed_files)} "
                  f"file{'s' if len(result.changed_files) != 1 else ''}.")
    for warning in result.warnings:
        click.echo(f"torchleaklint: warning: {warning}", err=True)
    for problem in result.internal_errors:
        click.echo(f"torchleaklint: error: {problem}", err=True)
    if result.internal_errors:
        raise click.exceptions.Exit(EXIT_ERROR)
    if exit_zero:
        raise click.exceptions.Exit(EXIT_OK)
    if diff:
        raise click.exceptions.Exit(EXIT_FINDINGS if result.changed_files else EXIT_OK)
    raise click.exceptions.Exit(EXIT_FINDINGS if diags else EXIT_OK)


def _settings(paths: List[str], config_path: Optional[str], select, extend_select, ignore,
              unsafe_fixes: Optional[bool]) -> Settings:
    if config_path is not None:
        if not os.path.isfile(config_path):
            raise ConfigError(f"{config_path}: config file not found")
        settings = load_settings(Path(config_path))
    else:
        anchor = Path(paths[0]) if paths else Path(".")
        anchor = anchor if anchor.is_dir() else anchor.parent
        settings = load_settings(find_pyproject(anchor if str(anchor) else Path(".")))
    changes = {}
    if select:
        changes["select"] = parse_selectors(select)
    if extend_select:
        changes["extend_select"] = settings.extend_select + parse_selectors(extend_select)
    if ignore:
        changes["ignore"] = settings.ignore + parse_selectors(ignore)
    if unsafe_fixes is not None:
        changes["unsafe_fixes"] = unsafe_fixes
    return settings.with_overrides(**changes)


@main.command()
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text")
def rules(output_format: str) -> None:
    """List every rule with its fix availability."""
    if output_format == "json":
        import json

        click.echo(json.dumps([
            {"code": r.code, "name": r.name, "summary": r.summary, "fix": r.fix_availability}
            for r in ALL_RULES
        ], indent=2))
        return
    table = Table(title=None)
    table.add_column("Code")
    table.add_column("Name")
    table.add_column("Fix")
    table.add_column("Summary")
    for rule in ALL_RULES:
        table.add_row(rule.code, rule.name, rule.fix_availability, rule.summary)
    _console(False).print(table)


@main.command()
def clean() -> None:
    """Remove the cache folder (.torchleaklint_cache, or $TORCHLEAKLINT_CACHE_DIR)."""
    folder = default_cache_dir()
    try:
        removed = clean_cache(folder)
    except OSError as exc:
        raise _fail(f"cannot remove {folder}: {exc.strerror or exc}")
    click.echo(f"Removed {folder}" if removed else f"No cache at {folder}")


@main.command()
@click.argument("code")
def explain(code: str) -> None:
    """Show a rule's documentation."""
    rule = RULES_BY_CODE.get(code.upper())
    if rule is None:
        raise _fail(f"unknown rule code '{code}' (see `torchleaklint rules`)")
    text = f"# {rule.code} {rule.name}\n\n{rule.summary}.\n\n{rule.docs()}\n"
    console = _console(False)
    if console.is_terminal:
        console.print(Markdown(text))
    else:
        click.echo(text)


# The harness command imports torch only when it runs, so the lint path stays light.
from .harness.command import verify  # noqa: E402

main.add_command(verify)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
