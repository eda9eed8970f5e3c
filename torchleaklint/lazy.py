"""Importing a registered name on first use: the rule registry and the machine formats
map a key to ``"module.attribute"`` within their package, so that a run imports only what
it uses."""

from __future__ import annotations

import importlib


def load(package: str, target: str):
    """The attribute ``target`` (``"module.attribute"``) of a module of ``package``."""
    module_name, _, attribute = target.rpartition(".")
    return getattr(importlib.import_module(f"{package}.{module_name}"), attribute)
