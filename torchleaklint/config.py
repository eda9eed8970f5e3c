"""Settings: rule selection, fix options and per-rule options, from the command line and
``[tool.torchleaklint]`` in pyproject.toml (or a standalone ``.torchleaklint.toml`` /
``torchleaklint.toml``). Every mistake is one clear line."""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field, replace
from typing import Dict, Iterable, Optional, Set, Tuple

from . import rules as registry
from .rules import OPT_IN, PARSE_ERROR, RULE_CODES, UNUSED_NOQA

DEFAULT_EXCLUDE = (".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", ".eggs", "build", "dist",
                   "__pycache__", "site-packages", "node_modules", ".mypy_cache", ".pytest_cache",
                   ".ruff_cache", ".torchleaklint_cache", "__pypackages__", ".ipynb_checkpoints")

TOP_LEVEL_KEYS = {"select", "extend-select", "ignore", "exclude", "extend-exclude", "unsafe-fixes",
                  "respect-gitignore", "per-file-ignores", "force-exclude", "model-names", "loss-names",
                  "max-file-size-mb"}

# Files larger than this are reported as TLL000 and not read: parsing a generated 5 MB
# literal takes tens of seconds and gigabytes. ``max-file-size-mb = 0`` lifts the limit.
DEFAULT_MAX_FILE_SIZE_MB = 4


# Looked for in each folder, first found wins (as ruff's .ruff.toml, ruff.toml, pyproject.toml);
# a pyproject.toml counts only when it has a [tool.torchleaklint] table.
CONFIG_NAMES = (".torchleaklint.toml", "torchleaklint.toml", "pyproject.toml")


class ConfigError(Exception):
    """A user error in options or configuration; the message is one line."""


@dataclass(frozen=True)
class Settings:
    select: Tuple[str, ...] = ("ALL",)
    extend_select: Tuple[str, ...] = ()
    ignore: Tuple[str, ...] = ()
    unsafe_fixes: bool = False
    exclude: Tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: Tuple[str, ...] = ()
    respect_gitignore: bool = True
    per_file_ignores: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    rule_options: Dict[str, Dict[str, object]] = field(default_factory=dict)
    force_exclude: bool = False
    # Extra names (identifiers or words of identifiers) that mean an nn.Module / a loss.
    model_names: Tuple[str, ...] = ()
    loss_names: Tuple[str, ...] = ()
    max_file_size_mb: float = DEFAULT_MAX_FILE_SIZE_MB  # 0: no limit
    # The configuration file these settings came from (None: defaults only).
    origin: Optional[str] = None

    def enabled_codes(self) -> Set[str]:
        codes: Set[str] = set()
        for selector in self.select + self.extend_select:
            codes |= expand_selector(selector)
        for selector in self.ignore:
            codes -= expand_selector(selector, opt_in=True)
        return codes

    def options_for(self, code: str) -> Dict[str, object]:
        rule = registry.RULES_BY_CODE[code]
        merged = dict(rule.default_options)
        merged.update(self.rule_options.get(code.lower(), {}))
        return merged

    def with_overrides(self, **changes) -> "Settings":
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def fingerprint(self) -> str:
        """What the findings depend on, for cache keys."""
        return repr((sorted(self.enabled_codes()), sorted((k, sorted(v.items())) for k, v in self.rule_options.items()),
                     sorted(self.model_names), sorted(self.loss_names)))


def all_codes() -> Set[str]:
    return set(RULE_CODES)


def expand_selector(selector: str, opt_in: bool = False) -> Set[str]:
    """``ALL``, a full code, or a code prefix like ``TLL0``; unknown selectors are errors.
    ``ALL`` and prefixes leave out the opt-in rules (``rules.OPT_IN``) unless ``opt_in``
    (what an ignore list means: silencing ``TLL0`` silences every rule under it)."""
    sel = selector.strip().upper()
    if sel == "ALL":
        return all_codes() if opt_in else all_codes() - OPT_IN
    if sel == PARSE_ERROR:
        return set()
    if len(sel) > 3 and UNUSED_NOQA.startswith(sel) and sel.startswith("TLL1"):
        # Unused-noqa reports are on only when selected by (a prefix of) their own code.
        return {UNUSED_NOQA}
    matched = {code for code in all_codes() if code.startswith(sel)}
    if not sel or not matched:
        raise ConfigError(f"unknown rule selector '{selector}' (see `torchleaklint rules`)")
    return matched if opt_in or sel in matched else matched - OPT_IN  # opt-in rules: by their full code only


def parse_selectors(values: Iterable[str]) -> Tuple[str, ...]:
    out = []
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if part:
                expand_selector(part)
                out.append(part)
    return tuple(out)


def load_settings(path: "Optional[str | os.PathLike[str]]") -> Settings:
    """Read ``[tool.torchleaklint]`` from a pyproject.toml (or a torchleaklint.toml)."""
    if path is None:
        return Settings()
    table = read_table(path)
    if table is None:
        return Settings()
    return settings_from_table(table, os.fspath(path))


def read_table(path: "str | os.PathLike[str]") -> Optional[Dict[str, object]]:
    """The ``[tool.torchleaklint]`` table of a pyproject.toml, or None when it has none; for
    another name, the whole file (or its ``[tool.torchleaklint]`` table, see
    :func:`standalone_table`)."""
    if sys.version_info >= (3, 11):  # imported here: runs without a pyproject.toml read no TOML
        import tomllib
    else:  # pragma: no cover - exercised on older interpreters
        import tomli as tomllib
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not valid UTF-8, as TOML files must be (byte 0x{exc.object[exc.start]:02x} "
                          f"at offset {exc.start})") from None
    if os.path.basename(path) != "pyproject.toml":
        return standalone_table(data, os.fspath(path))
    tool = data.get("tool")
    table = tool.get("torchleaklint") if isinstance(tool, dict) else None
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.torchleaklint] must be a table")
    return table


def standalone_table(data: Dict[str, object], path: str) -> Dict[str, object]:
    """A standalone file holds the options at its top level, or, shaped like a
    pyproject.toml, in a ``[tool.torchleaklint]`` table beside other tables (``[project]``,
    ``[tool.black]``), which are not ours to read; options at the top level beside that
    table are a mistake."""
    tool = data.get("tool")
    if not (isinstance(tool, dict) and "torchleaklint" in tool):
        return data
    table = tool["torchleaklint"]
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.torchleaklint] must be a table")
    loose = sorted(k for k, v in data.items() if k != "tool" and not isinstance(v, dict))
    if loose:
        raise ConfigError(f"{path}: {loose[0]}: unknown option (the options are in [tool.torchleaklint])")
    return table


def config_in(folder: str) -> Optional[str]:
    """The first of CONFIG_NAMES that is a file in ``folder``."""
    for name in CONFIG_NAMES:
        candidate = os.path.join(folder, name)
        if os.path.isfile(candidate):
            return candidate
    return None


class SettingsResolver:
    """The settings that govern each path: the nearest ``.torchleaklint.toml``,
    ``torchleaklint.toml`` or pyproject.toml with a ``[tool.torchleaklint]`` table above it
    (as in ruff), or the file given by ``--config`` for all paths; the command line's
    options go on top. Looked up once per folder."""

    def __init__(self, overrides: Optional[Dict[str, object]] = None, config_path: Optional[str] = None) -> None:
        self.overrides = overrides or {}
        self.fixed: Optional[Settings] = None
        if config_path is not None:
            if not os.path.isfile(config_path):
                raise ConfigError(f"{config_path}: config file not found")
            self.fixed = self._apply(load_settings(config_path), os.path.realpath(config_path))
        self._by_folder: Dict[str, Settings] = {}
        self._by_file: Dict[str, Settings] = {}

    def for_path(self, path: str) -> Settings:
        if self.fixed is not None:
            return self.fixed
        folder = os.path.abspath(path if os.path.isdir(path) else os.path.dirname(path) or ".")
        visited = []
        found = None
        while True:
            found = self._by_folder.get(folder)
            if found is not None:
                break
            visited.append(folder)
            candidate = config_in(folder)
            if candidate is not None:
                found = self._load(candidate)
                if found is not None:
                    break
            parent = os.path.dirname(folder)
            if parent == folder:
                found = self._load(None)
                break
            folder = parent
        for seen in visited:
            self._by_folder[seen] = found
        return found

    def _load(self, candidate: Optional[str]) -> Optional[Settings]:
        key = candidate or ""
        if key not in self._by_file:
            if candidate is None:
                settings: Optional[Settings] = Settings()
            else:
                table = read_table(candidate)
                settings = None if table is None else settings_from_table(table, candidate)
            self._by_file[key] = settings if settings is None else self._apply(settings, candidate)
        return self._by_file[key]

    def _apply(self, settings: Settings, origin: Optional[str]) -> Settings:
        o = self.overrides
        changes: Dict[str, object] = {"origin": origin}
        if o.get("select"):
            changes["select"] = tuple(o["select"])
        if o.get("extend_select"):
            changes["extend_select"] = settings.extend_select + tuple(o["extend_select"])
        if o.get("ignore"):
            changes["ignore"] = settings.ignore + tuple(o["ignore"])
        if o.get("exclude"):
            changes["exclude"] = tuple(o["exclude"])
        if o.get("extend_exclude"):
            changes["extend_exclude"] = settings.extend_exclude + tuple(o["extend_exclude"])
        for flag in ("unsafe_fixes", "force_exclude", "respect_gitignore"):
            if o.get(flag) is not None:
                changes[flag] = o[flag]
        return settings.with_overrides(**changes)


def settings_from_table(table: Dict[str, object], origin: str) -> Settings:
    settings = Settings()
    rule_options: Dict[str, Dict[str, object]] = {}
    # A standalone file holds its keys at the top level (or a table copied from a pyproject).
    label = "[tool.torchleaklint] " if os.path.basename(origin) == "pyproject.toml" else ""
    for key, value in table.items():
        where = f"{origin}: {label}{key}"
        if isinstance(value, dict) and key.upper() in RULE_CODES:
            rule_options[key.lower()] = _rule_options(key.upper(), value, where)
            continue
        if isinstance(value, dict) and re.fullmatch(r"tll\d{3}", key, re.IGNORECASE):
            raise ConfigError(f"{where}: unknown rule code {key.upper()} (see `torchleaklint rules`)")
        if key not in TOP_LEVEL_KEYS:
            raise ConfigError(f"{where}: unknown option")
        if key in ("select", "extend-select", "ignore"):
            codes = _string_list(value, where)
            try:
                parsed = parse_selectors(codes)
            except ConfigError as exc:
                raise ConfigError(f"{where}: {exc}") from None
            settings = replace(settings, **{key.replace("-", "_"): parsed})
        elif key in ("exclude", "extend-exclude"):
            settings = replace(settings, **{key.replace("-", "_"): tuple(_string_list(value, where))})
        elif key in ("unsafe-fixes", "respect-gitignore", "force-exclude"):
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: expected true or false, got {value!r}")
            settings = replace(settings, **{key.replace("-", "_"): value})
        elif key in ("model-names", "loss-names"):
            names = _string_list(value, where)
            bad = [n for n in names if not n.isidentifier()]
            if bad:
                raise ConfigError(f"{where}: {bad[0]!r} is not a Python identifier")
            settings = replace(settings, **{key.replace("-", "_"): tuple(names)})
        elif key == "max-file-size-mb":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1 << 20:
                raise ConfigError(f"{where}: expected a number of megabytes from 0 (no limit) to {1 << 20}, "
                                  f"got {value!r}")
            settings = replace(settings, max_file_size_mb=value)
        elif key == "per-file-ignores":
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: expected a table of glob = [codes]")
            pfi = {}
            for glob, codes in value.items():
                try:
                    pfi[glob] = parse_selectors(_string_list(codes, f"{where}.{glob}"))
                except ConfigError as exc:
                    raise ConfigError(f"{where}.{glob}: {exc}") from None
            settings = replace(settings, per_file_ignores=pfi)
    return replace(settings, rule_options=rule_options, origin=origin)


def _rule_options(code: str, value: Dict[str, object], where: str) -> Dict[str, object]:
    rule = registry.RULES_BY_CODE[code]
    out = {}
    for option, setting in value.items():
        if option not in rule.default_options:
            known = ", ".join(sorted(rule.default_options)) or "none"
            raise ConfigError(f"{where}.{option}: unknown option for {code} (known: {known})")
        problem = rule.validate_option(option, setting)
        if problem:
            raise ConfigError(f"{where}.{option}: {problem}")
        out[option] = setting
    return out


def _string_list(value: object, where: str):
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    raise ConfigError(f"{where}: expected a list of strings, got {value!r}")
