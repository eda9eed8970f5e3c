"""What the tool would do, without linting anything: ``--show-files`` and
``--show-settings`` (ruff's spellings), and the rule list of ``torchleaklint rules``."""

from __future__ import annotations

import json
import os
from typing import Iterable, List

from ..config import Settings


def render_files(paths: Iterable[str]) -> str:
    """The files a check would lint, as absolute paths, sorted (one per line, as ruff)."""
    return "".join(f"{path}\n" for path in sorted({os.path.abspath(p) for p in paths}))


def render_settings(path: str, settings: Settings) -> str:
    """The settings that govern ``path``, with the configuration keys' names and TOML
    values, so that any line can be pasted into a configuration file."""
    origin = settings.origin or "(none: defaults)"
    lines: List[str] = [
        f"Resolved settings for: {json.dumps(os.path.abspath(path))}",
        f"Settings path: {json.dumps(origin) if settings.origin else origin}",
        "",
        f"select = {_toml(settings.select)}",
        f"extend-select = {_toml(settings.extend_select)}",
        f"ignore = {_toml(settings.ignore)}",
        f"exclude = {_toml(settings.exclude)}",
        f"extend-exclude = {_toml(settings.extend_exclude)}",
        f"force-exclude = {_toml(settings.force_exclude)}",
        f"respect-gitignore = {_toml(settings.respect_gitignore)}",
        f"unsafe-fixes = {_toml(settings.unsafe_fixes)}",
        f"model-names = {_toml(settings.model_names)}",
        f"loss-names = {_toml(settings.loss_names)}",
        f"max-file-size-mb = {_toml(settings.max_file_size_mb)}",
        f"# enabled rules: {', '.join(sorted(settings.enabled_codes())) or 'none'}",
    ]
    if settings.per_file_ignores:
        lines += ["", "[per-file-ignores]"]
        lines += [f"{json.dumps(glob)} = {_toml(codes)}" for glob, codes in settings.per_file_ignores.items()]
    from .. import rules as registry

    for code in sorted(registry.RULES_BY_CODE):
        options = settings.options_for(code)
        if options:
            lines += ["", f"[{code.lower()}]"]
            lines += [f"{key} = {_toml(value)}" for key, value in sorted(options.items())]
    return "\n".join(lines) + "\n"


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def render_rule_list(rules) -> str:
    """``torchleaklint rules`` outside a terminal: aligned columns, never cut to a width
    (a pipe has none), so that ``rules | grep`` sees whole names and summaries."""
    from ..rules import OPT_IN

    rows = [("Code", "Name", "Fix", "Summary")] + [
        (r.code, r.name, r.fix_availability, f"{r.summary} (opt-in)" if r.code in OPT_IN else r.summary)
        for r in rules]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return "".join("  ".join([*(cell.ljust(w) for cell, w in zip(row[:3], widths)), row[3]]).rstrip() + "\n"
                   for row in rows)
