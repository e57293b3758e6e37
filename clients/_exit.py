"""How every `gangplan` command ends on an error: one line on standard error, then exit 2
for input the user can fix, 3 for a fault inside gangplan (a bug to report)."""

from __future__ import annotations

from typing import NoReturn

import typer
from rich.console import Console

from solver import GangplanError, InternalError

__all__ = ["INPUT_ERROR", "INTERNAL_ERROR", "fail"]

INPUT_ERROR = 2
INTERNAL_ERROR = 3

_stderr = Console(stderr=True)


def fail(err: GangplanError) -> NoReturn:
    _stderr.print(f"[red]error:[/red] {err}", markup=True, soft_wrap=True, highlight=False)
    raise typer.Exit(INTERNAL_ERROR if isinstance(err, InternalError) else INPUT_ERROR)
