"""The command line: ``torchleaklint [check] PATHS``, ``rules``, ``explain CODE`` (alias
``rule CODE``), ``version``, ``server`` (the language server), ``clean``, ``verify``.

Exit codes: 0 no findings, 1 findings remain, 2 usage, configuration or internal error.
"""

from __future__ import annotations

import os
import sys

import click

from . import __version__
from . import rules as registry
from .config import ConfigError, SettingsResolver, parse_selectors
from .engine.cache import CACHE_DIR_NAME, default_cache_dir
from .engine.cache_folder import CacheFolderError, clean as clean_cache, folder_problem
from .engine.discover import DiscoveryError
from .engine.jobs import default_jobs
from .entry import check_finished
from .report import FORMATS, RENDERERS, renderer
from .report.destination import OutputFileError, ReportDestination
from .report.text import PlainOutput, StyledOutput, TextReporter, wants_styles
from .workspace import add_noqa_comments, excluded, plan, run_plan

# Only what a check needs is imported here: the analysis, rich and the machine formats are
# imported when they are used, so that a run answered by the cache starts quickly.

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
NO_FILES_WARNING = "No Python files found under the given path(s)"  # ruff's wording

# Deeply nested generated code (long elif chains, huge literals) exceeds CPython's default.
sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))


class _DefaultToCheck(click.Group):
    """``torchleaklint PATHS`` means ``torchleaklint check PATHS`` (like ruff)."""

    def parse_args(self, ctx, args):
        if not args or (args[0] not in self.commands and args[0] not in ("--help", "-h", "--version", "-V")):
            args.insert(0, "check")
        return super().parse_args(ctx, args)


def _fail(message: str) -> "click.exceptions.Exit":
    click.echo(f"torchleaklint: error: {message}", err=True)
    return click.exceptions.Exit(EXIT_ERROR)


def _console(no_color: bool, stderr: bool = False):
    from rich.console import Console

    no_color = no_color or bool(os.environ.get("NO_COLOR"))
    return Console(stderr=stderr, highlight=False, soft_wrap=True, no_color=no_color, emoji=False,
                   color_system=None if no_color else "auto")


@click.group(cls=_DefaultToCheck, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="torchleaklint", message="%(prog)s %(version)s")
def main() -> None:
    """Find and fix the PyTorch memory anti-patterns that crash long training runs."""


@main.command()
@click.argument("paths", nargs=-1, type=str)
@click.option("--fix", is_flag=True, help="Apply safe fixes.")
@click.option("--unsafe-fixes/--no-unsafe-fixes", default=None, help="Also apply (or show) unsafe fixes.")
@click.option("--diff", is_flag=True, help="Print the diff that --fix would make; write nothing.")
@click.option("--select", multiple=True, help="Rule codes or prefixes to enable (comma-separated, or ALL).")
@click.option("--extend-select", multiple=True, help="Rule codes or prefixes to enable in addition (TLL100: unused noqa).")
@click.option("--ignore", multiple=True, help="Rule codes or prefixes to disable.")
@click.option("--exclude", multiple=True, help="Glob patterns of files and folders to skip (replaces `exclude`).")
@click.option("--extend-exclude", multiple=True, help="Glob patterns to skip in addition to `exclude`.")
@click.option("--output-format", type=click.Choice(FORMATS), default="text", show_default=True)
@click.option("-o", "--output-file", type=str, default=None, help="Write the report to this file instead of stdout.")
@click.option("--show-evidence", is_flag=True, help="Explain why each finding fired.")
@click.option("--show-fixes", is_flag=True, help="Show each finding's fix, and what --fix fixed.")
@click.option("--statistics", is_flag=True, help="Print a count per rule instead of each finding.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain.")
@click.option("--exit-non-zero-on-fix", is_flag=True, help="With --fix, exit 1 when files were changed.")
@click.option("--add-noqa", is_flag=True, help="Add `# noqa: CODE` comments on the lines with findings.")
@click.option("--stdin-filename", type=str, default=None,
              help="Read the code from standard input and report it under this name.")
@click.option("--force-exclude/--no-force-exclude", default=None,
              help="Apply exclusions also to files named on the command line (for pre-commit).")
@click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary.")
@click.option("--config", "config_path", type=str, default=None,
              help="Configuration file for all paths (pyproject.toml, torchleaklint.toml or any TOML file).")
@click.option("--show-files", is_flag=True, help="List the files that would be checked, and exit.")
@click.option("--show-settings", is_flag=True, help="Print the settings of the first file to check, and exit.")
@click.option("--no-color", is_flag=True, help="Disable colours (also: NO_COLOR).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
              help="Worker processes for checking (default: the number of CPUs).")
@click.option("--no-cache", is_flag=True,
              help=f"Do not read or write the cache ({CACHE_DIR_NAME}/, or $TORCHLEAKLINT_CACHE_DIR).")
@click.version_option(__version__, "-V", "--version", prog_name="torchleaklint", message="%(prog)s %(version)s")
def check(paths, fix, unsafe_fixes, diff, select, extend_select, ignore, exclude, extend_exclude, output_format,
          output_file, show_evidence, show_fixes, statistics, exit_zero, exit_non_zero_on_fix, add_noqa,
          stdin_filename, force_exclude, quiet, config_path, show_files, show_settings, no_color, jobs,
          no_cache) -> None:
    """Lint PATHS (default: the current folder; `-` reads standard input)."""
    paths = list(paths)
    try:
        overrides = {"select": parse_selectors(select), "extend_select": parse_selectors(extend_select),
                     "ignore": parse_selectors(ignore), "unsafe_fixes": unsafe_fixes, "force_exclude": force_exclude,
                     "exclude": _patterns(exclude), "extend_exclude": _patterns(extend_exclude)}
        resolver = SettingsResolver(overrides, config_path)
        if stdin_filename is not None or paths == ["-"]:
            if [p for p in paths if p != "-"] or add_noqa:
                raise ConfigError("standard input (`-`, --stdin-filename) cannot be combined with paths or --add-noqa")
            report = ReportDestination(output_file)
            code = _check_stdin(stdin_filename or "-", resolver, fix, diff, output_format, show_evidence, show_fixes,
                                exit_zero, quiet, no_color, report)
            report.close()
            raise click.exceptions.Exit(code)
        if "-" in paths:
            raise ConfigError("`-` (standard input) cannot be combined with other paths")
        paths = paths or ["."]
        work = plan(paths, resolver)
        settings = resolver.for_path(paths[0])
        if show_files or show_settings:
            from .report.introspect import render_files, render_settings

            files = [path for _, group in work.groups for path in group]
            first = files[0] if files else paths[0]
            click.echo(render_files(files) if show_files else render_settings(first, resolver.for_path(first)), nl=False)
            raise click.exceptions.Exit(EXIT_OK)
        if add_noqa:
            if fix or diff:
                raise ConfigError("--add-noqa cannot be combined with --fix or --diff")
            added, files, problems = add_noqa_comments(work)
            for problem in problems:
                click.echo(f"torchleaklint: error: {problem}", err=True)
            click.echo(f"Added {added} noqa directive{'s' if added != 1 else ''} in {files} "
                       f"file{'s' if files != 1 else ''}.", err=True)
            raise click.exceptions.Exit(EXIT_ERROR if problems else EXIT_OK)
        if not (no_cache or fix or diff):
            problem = folder_problem(default_cache_dir())
            if problem is not None:
                raise ConfigError(f"cannot use the cache folder: {problem} "
                                  f"(set TORCHLEAKLINT_CACHE_DIR to another folder, or use --no-cache)")
        from .report.progress import progress_bar

        with progress_bar(work.files, no_color or bool(os.environ.get("NO_COLOR")), enabled=not quiet) as progress:
            result = run_plan(work, fix=fix, diff=diff, progress=progress,
                              jobs=jobs or default_jobs(), cache=not no_cache)
    except (ConfigError, DiscoveryError, OutputFileError) as exc:
        raise _fail(str(exc))
    diags = result.diagnostics
    nothing_found = result.files == 0 and not diags
    report = ReportDestination(output_file)
    reporter = _reporter(output_format, no_color, show_evidence, show_fixes, settings.unsafe_fixes,
                         stream=report.stream if report.to_file else None)
    if diff:
        for chunk in result.diffs:
            click.echo(chunk, nl=False)
    if output_format in RENDERERS:
        report.write(renderer(output_format)(diags))
    elif statistics:
        reporter.statistics(diags, _rule_names())
    elif not diff:
        reporter.diagnostics(diags)
        if fix and show_fixes:
            reporter.fixed(result.fixed_codes, _rule_names())
        if not quiet and not nothing_found:
            reporter.summary(diags, fixed=result.fixed if fix else 0)
    elif not quiet:
        err = _console(no_color, stderr=True)
        n = result.fixed
        err.print(f"Would fix {n} error{'s' if n != 1 else ''} in {len(result.changed_files)} "
                  f"file{'s' if len(result.changed_files) != 1 else ''}.")
    try:
        report.close()
    except OutputFileError as exc:
        raise _fail(str(exc))
    if nothing_found and not quiet:
        result.warnings.append(NO_FILES_WARNING)
    for warning in result.warnings:
        click.echo(f"torchleaklint: warning: {warning}", err=True)
    for problem in result.internal_errors:
        click.echo(f"torchleaklint: error: {problem}", err=True)
    check_finished()  # the report is out: the console script may end the process at once
    if result.internal_errors:
        raise click.exceptions.Exit(EXIT_ERROR)
    if exit_zero:
        raise click.exceptions.Exit(EXIT_OK)
    if diff:
        raise click.exceptions.Exit(EXIT_FINDINGS if result.changed_files else EXIT_OK)
    if fix and exit_non_zero_on_fix and result.changed_files:
        raise click.exceptions.Exit(EXIT_FINDINGS)
    raise click.exceptions.Exit(EXIT_FINDINGS if diags else EXIT_OK)


def _rule_names() -> dict:
    names = {code: rule.name for code, rule in registry.RULES_BY_CODE.items()}
    names.update({"TLL000": "parse-error", "TLL100": "unused-noqa"})
    return names


def _patterns(values) -> tuple:
    """``--exclude a,b --exclude c``: glob patterns, comma-separated as in ruff."""
    return tuple(p.strip() for value in values for p in value.split(",") if p.strip())


def _reporter(output_format: str, no_color: bool, show_evidence: bool, show_fixes: bool, unsafe: bool,
              stderr: bool = False, stream=None) -> TextReporter:
    if stream is not None:
        out = PlainOutput(stream)
    elif wants_styles(no_color, stderr):
        out = StyledOutput(_console(no_color, stderr=stderr))
    else:
        out = PlainOutput(stderr=stderr)
    return TextReporter(out, concise=output_format == "concise",
                        full=output_format == "full", show_evidence=show_evidence, show_fixes=show_fixes,
                        unsafe_fixes=unsafe)


def _check_stdin(name: str, resolver, fix: bool, diff: bool, output_format: str, show_evidence: bool,
                 show_fixes: bool, exit_zero: bool, quiet: bool, no_color: bool, report: ReportDestination) -> int:
    """Editors: lint code from standard input as the file ``name``; with --fix the fixed
    code goes to stdout and the remaining findings to stderr (or to the -o file)."""
    to_file = report.stream if report.to_file else None
    settings = resolver.for_path(name if name != "-" else ".")
    data = click.get_binary_stream("stdin").read()
    out = click.get_binary_stream("stdout")
    if settings.force_exclude and name != "-" and excluded(name, settings):
        if fix:
            out.write(data)
        return EXIT_OK
    from .engine.stdin import lint_code
    from .engine.notebook import NotebookSource
    from .runner import unified_diff

    result = lint_code(data, name, settings, fix=fix or diff, unsafe=settings.unsafe_fixes, neighbours=True)
    changed = result.source is not None and result.text != result.source.text
    diags = result.diagnostics
    if diff:
        if changed:
            chunk = (result.source.diff(name, result.text) if isinstance(result.source, NotebookSource)
                     else unified_diff(name, result.source.text, result.text))
            click.echo(chunk, nl=False)
    elif fix:
        out.write(result.output() if result.source is not None else data)
        out.flush()
        if diags and to_file is not None and output_format in RENDERERS:
            report.write(renderer(output_format)(diags))
        elif diags:
            _reporter("concise" if output_format in RENDERERS else output_format, no_color, show_evidence,
                      show_fixes, settings.unsafe_fixes, stderr=True, stream=to_file).diagnostics(diags)
    elif output_format in RENDERERS:
        report.write(renderer(output_format)(diags))
    else:
        reporter = _reporter(output_format, no_color, show_evidence, show_fixes, settings.unsafe_fixes,
                             stream=to_file)
        reporter.diagnostics(diags)
        if not quiet:
            reporter.summary(diags)
    for problem in result.internal_errors:
        click.echo(f"torchleaklint: error: {problem}", err=True)
    if result.internal_errors:
        return EXIT_ERROR
    if exit_zero:
        return EXIT_OK
    if diff:
        return EXIT_FINDINGS if changed else EXIT_OK
    return EXIT_FINDINGS if diags else EXIT_OK


@main.command()
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text")
def rules(output_format: str) -> None:
    """List every rule with its fix availability and whether it is on by default (opt-in
    rules run only when selected by their full code)."""
    if output_format == "json":
        import json

        click.echo(json.dumps([
            {"code": r.code, "name": r.name, "summary": r.summary, "fix": r.fix_availability,
             "default": r.code not in registry.OPT_IN}
            for r in registry.ALL_RULES
        ], indent=2))
        return
    console = _console(False)
    if not console.is_terminal:
        from .report.introspect import render_rule_list

        click.echo(render_rule_list(registry.ALL_RULES), nl=False)
        return
    from rich.table import Table

    table = Table(title=None)
    table.add_column("Code", no_wrap=True)
    table.add_column("Name", no_wrap=True)
    table.add_column("Fix")
    table.add_column("Summary")
    for rule in registry.ALL_RULES:
        summary = f"{rule.summary} (opt-in)" if rule.code in registry.OPT_IN else rule.summary
        table.add_row(rule.code, rule.name, rule.fix_availability, summary)
    console.print(table)


@main.command()
def clean() -> None:
    """Remove the cache folder (.torchleaklint_cache, or $TORCHLEAKLINT_CACHE_DIR)."""
    folder = default_cache_dir()
    try:
        removed = clean_cache(folder)
    except CacheFolderError as exc:
        raise _fail(str(exc))
    click.echo(f"Removed {folder}" if removed else f"No cache at {folder}")


@main.command()
@click.argument("code")
def explain(code: str) -> None:
    """Show a rule's documentation (also: `rule CODE`)."""
    from .engine.noqa import UNUSED_NOQA, UNUSED_NOQA_DOCS, UNUSED_NOQA_SUMMARY

    rule = registry.RULES_BY_CODE.get(code.upper())
    if rule is not None:
        text = f"# {rule.code} {rule.name}\n\n{rule.summary}.\n\n{rule.docs()}\n"
    elif code.upper() == UNUSED_NOQA:
        text = f"# {UNUSED_NOQA} unused-noqa\n\n{UNUSED_NOQA_SUMMARY}.\n\n{UNUSED_NOQA_DOCS.strip()}\n"
    else:
        raise _fail(f"unknown rule code '{code}' (see `torchleaklint rules`)")
    console = _console(False)
    if console.is_terminal:
        from rich.markdown import Markdown

        console.print(Markdown(text))
    else:
        click.echo(text)


main.add_command(click.Command("rule", callback=explain.callback, params=explain.params,
                               help="Show a rule's documentation (alias of `explain`, as in ruff)."))


@main.command()
def version() -> None:
    """Print the version."""
    click.echo(f"torchleaklint {__version__}")


@main.command()
def server() -> None:
    """Run the language server over stdio (needs the `lsp` extra)."""
    from .server import missing_dependency

    problem = missing_dependency()
    if problem is not None:
        raise _fail(problem)
    from .server.protocol import serve

    serve()


# The harness command imports torch only when it runs, so the lint path stays light.
from .harness.command import verify  # noqa: E402

main.add_command(verify)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
