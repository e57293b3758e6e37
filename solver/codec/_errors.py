"""Field violations of a request, collected and raised together."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from solver.model import Loc, field_problems, snake_path

__all__ = ["MAX_VIOLATIONS", "ConvertError", "Violations", "build", "report"]

M = TypeVar("M", bound=BaseModel)

MAX_VIOLATIONS = 50


class ConvertError(Exception):
    """The request is invalid; `violations` are (field path, description) pairs."""

    def __init__(self, violations: list[tuple[str, str]]) -> None:
        self.violations = violations
        first = "; ".join(f"{f}: {d}" for f, d in violations[:3])
        more = f" (and {len(violations) - 3} more)" if len(violations) > 3 else ""
        super().__init__(f"invalid request: {first}{more}")


@dataclass
class Violations:
    """Collects field violations; `check()` raises them all at once."""

    items: list[tuple[str, str]] = field(default_factory=list)

    def add(self, path: str, description: str) -> None:
        if len(self.items) < MAX_VIOLATIONS:
            self.items.append((path, description))

    @property
    def paths(self) -> set[str]:
        return {path for path, _ in self.items}

    def check(self) -> None:
        if self.items:
            raise ConvertError(self.items)


def build(
    model: type[M], path: str, out: Violations, names: dict[str, str] | None = None, **fields: Any
) -> M | None:
    """The model's `model(**fields)`, its rules checked by the model itself (`solver.model`);
    each broken one a violation at `path` (proto names; `names` renames the fields whose
    wire name differs). None when one is broken."""
    try:
        return model(**fields)
    except ValidationError as exc:
        report(field_problems(exc), path, out, names)
        return None


def report(
    problems: list[tuple[Loc, str]], path: str, out: Violations, names: dict[str, str] | None = None
) -> None:
    """A model rule's problems (`solver.model`), each a violation under `path`."""
    for loc, words in problems:
        out.add(snake_path(path, loc, names), words)
