"""Digests of settings, tables and answers that are the same in every process."""

from __future__ import annotations

from dataclasses import fields

try:  # CPython's own BLAKE2 (what hashlib.blake2b is), without loading OpenSSL at start-up
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - interpreters without the module
    from hashlib import blake2b


def canonical(value) -> str:
    """A repr that is the same in every process (sets and dicts in sorted order)."""
    if isinstance(value, (str, int, bool)) or value is None:
        return repr(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{canonical(k)}:{canonical(v)}" for k, v in
                              sorted(value.items(), key=lambda kv: repr(kv[0]))) + "}"
    if isinstance(value, (set, frozenset)):
        return "{" + ",".join(sorted(canonical(v) for v in value)) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(canonical(v) for v in value) + "]"
    if hasattr(value, "__dataclass_fields__"):
        return type(value).__name__ + canonical({f.name: getattr(value, f.name) for f in fields(value)})
    return repr(value)


def digest(value) -> str:
    return blake2b(canonical(value).encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()
