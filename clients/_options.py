"""Options every subcommand that reads manifests shares."""

from __future__ import annotations

from typing import Annotated

import typer

__all__ = ["Files"]

Files = Annotated[
    list[str],
    typer.Option("-f", "--filename", help="Manifest file, directory, or - for stdin. Repeatable."),
]
