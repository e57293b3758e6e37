"""The exceptions gangplan raises, and nothing else escapes the library.

Unschedulable is never an exception: it is a Decision with counted reasons.
Exceptions are for input that cannot be read and for internal faults::

    GangplanError                      base class; the CLI exits 2 and prints str(err)
    ├── InputError                     the caller's input is wrong (gRPC: INVALID_ARGUMENT)
    │   ├── ManifestError              a Kubernetes manifest: names the file, document and field
    │   └── ConfigError                the scheduler conf (Volcano format): names the file and field
    └── InternalError                  a bug in gangplan, e.g. a Decision that fails verify (gRPC: INTERNAL)
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "FieldError",
    "GangplanError",
    "InputError",
    "InternalError",
    "ManifestError",
]


class GangplanError(Exception):
    """Base class of every error gangplan raises on purpose."""


class InputError(GangplanError):
    """The input cannot be used as given; the message says where and why."""


class FieldError(InputError):
    """One field of an input is wrong: `field` is its path in the input's own names (a
    front end with other names, like the gRPC service, renames it)."""

    def __init__(self, source: str, field: str, reason: str) -> None:
        super().__init__(f"{source}: {field}: {reason}")
        self.source = source
        self.field = field
        self.reason = reason


class ManifestError(InputError):
    """A Kubernetes manifest is malformed or inconsistent.

    `source` is the file name (`<stdin>` for standard input), `document` the 1-based
    position of the YAML document in that file (items of a `kind: List` are
    `3.items[4]`), `obj` the object's `Kind ns/name` when known, `field` a dotted path.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str,
        document: str | int | None = None,
        obj: str | None = None,
        field: str | None = None,
    ) -> None:
        self.source = source
        self.document = None if document is None else str(document)
        self.obj = obj
        self.field = field
        self.message = message
        where = source
        if self.document is not None:
            where += f": document {self.document}"
        if obj:
            where += f" ({obj})"
        if field:
            where += f": {field}"
        super().__init__(f"{where}: {message}")


class ConfigError(InputError):
    """The scheduler configuration (Volcano conf format) is invalid."""

    def __init__(self, message: str, *, source: str, field: str | None = None) -> None:
        self.source = source
        self.field = field
        self.message = message
        where = source + (f": {field}" if field else "")
        super().__init__(f"{where}: {message}")


class InternalError(GangplanError):
    """A fault inside gangplan; please report it with the input that caused it."""
