"""Append-only string interning shared by every generation of one snapshot lineage.

Columns of running pods hold small integers instead of strings (pod keys aside): gang ids,
queue names, card types, annotation values. An `Interner` only ever grows, so an id handed
out to one generation means the same string in every later one, and older generations can
read it without a copy.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

__all__ = ["NONE", "Interner"]

NONE = -1
"""The id of "no value" in every interned column."""


class Interner:
    """str <-> int, append-only and safe to share between threads."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._ids: dict[str, int] = {}
        self._values: list[str] = []
        for value in values:
            self.add(value)

    def __len__(self) -> int:
        return len(self._values)

    def add(self, value: str) -> int:
        found = self._ids.get(value)
        if found is not None:
            return found
        with self._lock:
            found = self._ids.get(value)
            if found is None:
                found = self._ids[value] = len(self._values)
                self._values.append(value)
            return found

    def add_optional(self, value: str | None) -> int:
        """The id of `value`, or NONE for None and the empty string."""
        return self.add(value) if value else NONE

    def get(self, value: str) -> int:
        """The id of `value`, NONE when it was never interned."""
        return self._ids.get(value, NONE)

    def value(self, ident: int) -> str:
        return self._values[ident]

    def values(self) -> list[str]:
        """A copy of every value, in id order."""
        return list(self._values)

    def copy(self) -> Interner:
        return Interner(self._values)
