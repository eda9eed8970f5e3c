"""Settings: rule selection, fix options and per-rule options, from the command line and
``[tool.torchleaklint]`` in pyproject.toml. Every mistake is one clear line."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Dict, Iterable, Optional, Set, Tuple

from .rules import ALL_RULES, PARSE_ERROR, RULES_BY_CODE

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on older interpreters
    import tomli as tomllib

DEFAULT_EXCLUDE = (".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", ".eggs", "build", "dist",
                   "__pycache__", "site-packages", "node_modules", ".mypy_cache", ".pytest_cache",
                   ".ruff_cache", ".torchleaklint_cache", "__pypackages__", ".ipynb_checkpoints")

TOP_LEVEL_KEYS = {"select", "extend-select", "ignore", "exclude", "extend-exclude", "unsafe-fixes",
                  "respect-gitignore", "per-file-ignores", "force-exclude"}


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

    def enabled_codes(self) -> Set[str]:
        codes: Set[str] = set()
        for selector in self.select + self.extend_select:
            codes |= expand_selector(selector)
        for selector in self.ignore:
            codes -= expand_selector(selector)
        return codes

    def options_for(self, code: str) -> Dict[str, object]:
        rule = RULES_BY_CODE[code]
        merged = dict(rule.default_options)
        merged.update(self.rule_options.get(code.lower(), {}))
        return merged

    def with_overrides(self, **changes) -> "Settings":
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def fingerprint(self) -> str:
        """What the findings depend on, for cache keys."""
        return repr((sorted(self.enabled_codes()), sorted((k, sorted(v.items())) for k, v in self.rule_options.items())))


def all_codes() -> Set[str]:
    return {rule.code for rule in ALL_RULES}


def expand_selector(selector: str) -> Set[str]:
    """``ALL``, a full code, or a code prefix like ``TLL0``; unknown selectors are errors."""
    sel = selector.strip().upper()
    if sel == "ALL":
        return all_codes()
    if sel == PARSE_ERROR:
        return set()
    matched = {code for code in all_codes() if code.startswith(sel)}
    if not sel or not matched:
        raise ConfigError(f"unknown rule selector '{selector}' (see `torchleaklint rules`)")
    return matched


def parse_selectors(values: Iterable[str]) -> Tuple[str, ...]:
    out = []
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if part:
                expand_selector(part)
                out.append(part)
    return tuple(out)


def find_pyproject(start: Path) -> Optional[Path]:
    start = start.resolve()
    for folder in [start] + list(start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_settings(path: Optional[Path]) -> Settings:
    """Read ``[tool.torchleaklint]`` from a pyproject.toml (or a torchleaklint.toml)."""
    if path is None:
        return Settings()
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    table = data.get("tool", {}).get("torchleaklint") if path.name == "pyproject.toml" else data
    if table is None:
        return Settings()
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.torchleaklint] must be a table")
    return settings_from_table(table, str(path))


def settings_from_table(table: Dict[str, object], origin: str) -> Settings:
    settings = Settings()
    rule_options: Dict[str, Dict[str, object]] = {}
    for key, value in table.items():
        where = f"{origin}: [tool.torchleaklint] {key}"
        if isinstance(value, dict) and key.upper() in RULES_BY_CODE:
            rule_options[key.lower()] = _rule_options(key.upper(), value, where)
            continue
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
            if key != "force-exclude":
                settings = replace(settings, **{key.replace("-", "_"): value})
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
    return replace(settings, rule_options=rule_options)


def _rule_options(code: str, value: Dict[str, object], where: str) -> Dict[str, object]:
    rule = RULES_BY_CODE[code]
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
