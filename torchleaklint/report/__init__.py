"""Reporters turn diagnostics into text; they never analyse."""

from __future__ import annotations

from .json_format import render_json
from .text import TextReporter

FORMATS = ("text", "concise", "json")

__all__ = ["FORMATS", "TextReporter", "render_json"]
