"""Input rules are written once, on the model's own types; this module says them in the
words both readers use.

The YAML reader (`solver.kube`) and the gRPC codec (`solver.codec`) each read their own
shape (YAML types, protobuf enums) and then build the model's objects, which check the
rules the API server checks (a `Field` bound, or a validator on the type). A broken rule
is a `ValidationError`; `field_problems` turns it into (location, words) pairs, the
location in the model's field names, and each reader names it at its own path: the codec
as written (its fields are the proto's, which share the model's names), the YAML reader in
the API's camelCase (`camel_path`).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from pydantic.alias_generators import to_camel

__all__ = ["Loc", "camel_path", "field_problems", "snake_path"]

Loc = tuple[str | int, ...]


def field_problems(exc: ValidationError) -> list[tuple[Loc, str]]:
    """Every broken rule of `exc`: where (model field names) and what, in gangplan's words."""
    return [(tuple(err["loc"]), _words(err)) for err in exc.errors(include_url=False)]


def _words(err: Any) -> str:
    kind, ctx, got = err["type"], err.get("ctx") or {}, err.get("input")
    if kind == "greater_than_equal":
        return f"must be at least {ctx['ge']}, got {got}"
    if kind == "less_than_equal":
        return f"must be at most {ctx['le']}, got {got}"
    if kind == "string_too_short" and ctx.get("min_length") == 1:
        return "must not be empty"
    if kind == "string_too_long":
        return f"must be at most {ctx['max_length']} characters"
    if kind == "too_long":
        return f"at most {ctx['max_length']} items, got {ctx.get('actual_length')}"
    if kind == "missing":
        return "missing required field"
    if kind == "value_error":
        return str(ctx.get("error") or err["msg"].removeprefix("Value error, "))
    return str(err["msg"])


def _join(path: str, loc: Loc, name: Any) -> str:
    out = path
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{name(part)}" if out else name(part)
    return out


def snake_path(path: str, loc: Loc, names: dict[str, str] | None = None) -> str:
    """`loc` under `path`, in the model's (and the proto's) names; `names` renames fields
    whose wire name differs."""
    return _join(path, loc, lambda part: (names or {}).get(part, part))


def camel_path(path: str, loc: Loc, names: dict[str, str] | None = None) -> str:
    """`loc` under `path`, in the Kubernetes API's camelCase; `names` renames fields whose
    manifest name is not their camelCase."""
    return _join(path, loc, lambda part: (names or {}).get(part) or to_camel(part))
