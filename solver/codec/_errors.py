"""Field violations of a request, collected and raised together."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["MAX_VIOLATIONS", "ConvertError", "Violations"]

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
