"""JSON inside annotations and conf values, read within limits: `read_json` is `json.loads`
whose every failure — bad syntax, and nesting deeper than Python's recursion allows (`[`
× 100,000 in a gang-groups annotation raised RecursionError, a traceback) — is a
`json.JSONDecodeError`, so each reader's one `except` turns it into its own one-line
error or note. Go's encoding/json refuses nesting past 10,000 levels as a syntax error too.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

__all__ = ["read_json"]


def read_json(text: str, parse_constant: Callable[[str], Any] | None = None) -> Any:
    try:
        return json.loads(text, parse_constant=parse_constant)
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", text[:100], 0) from None
