"""Reading the planner's input files: every error is an `InputError` naming the file and,
where there is one, the field or the line (`catalog.yaml: budget: must be a number ...`)."""

from __future__ import annotations

import io
import math
from collections.abc import Collection
from pathlib import Path
from typing import Any, TextIO

import yaml

from solver.errors import FieldError, InputError
from solver.yaml_limits import not_text, one_line, safe_load

__all__ = ["MAX_CELL", "field_error", "int_cell", "open_csv", "read_yaml", "reject_unknown"]

MAX_CELL = 10**12
"""The largest number a CSV cell may hold (cores, MiB, GPUs, milli-GPUs, counts): beyond it a
value is a typo or an attack, and the arrays it goes into are int64."""


def field_error(source: str, field: str, message: str) -> FieldError:
    return FieldError(source, field, message)


def reject_unknown(
    source: str, where: str, data: dict[Any, Any], known: Collection[str], listed: str = ""
) -> None:
    """An InputError for the first field of `data` (at `where`) that is not `known`;
    `listed` names the known ones in the message."""
    unknown = sorted(set(data) - set(known))
    if unknown:
        field = f"{where}.{unknown[0]}" if where else unknown[0]
        raise field_error(
            source, field, "unknown field" + (f" (known: {listed})" if listed else "")
        )


def read_yaml(path: str | Path) -> Any:
    """The parsed YAML document of `path`."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: cannot read file: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: {not_text(exc)}") from None
    try:
        return safe_load(text)
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: malformed YAML: {one_line(exc)}") from None


def open_csv(path: str | Path) -> TextIO:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read file: {exc.strerror or exc}") from exc
    try:
        return io.StringIO(data.decode("utf-8"), newline="")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: {not_text(exc)}") from None


def int_cell(row: dict[str, str], column: str, source: str, line: int) -> int:
    """A CSV cell as a non-negative integer, rounded up (an empty cell is 0)."""
    text = (row.get(column) or "").strip()
    if not text:
        return 0
    try:
        value = float(text)
    except ValueError:
        raise InputError(
            f"{source}: line {line}: column {column!r}: not a number: {text!r}"
        ) from None
    if value < 0 or math.isnan(value):
        raise InputError(f"{source}: line {line}: column {column!r}: must be >= 0, got {text!r}")
    if value > MAX_CELL:
        raise InputError(
            f"{source}: line {line}: column {column!r}: at most {MAX_CELL:,}, got {text!r}"
        )
    return int(-(-value // 1))
