"""Options every subcommand shares: the manifests it reads and how it prints its answer."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

__all__ = ["Files", "Output", "OutputFormat"]

Files = Annotated[
    list[str],
    typer.Option("-f", "--filename", help="Manifest file, directory, or - for stdin. Repeatable."),
]


class Output(StrEnum):
    json = "json"
    yaml = "yaml"
    table = "table"


OutputFormat = Annotated[
    Output,
    typer.Option(
        "-o",
        "--output",
        help="json or yaml for programs: the same data, in machine units (milli-CPU, bytes; "
        "`plan` counts memory in MiB). table for people: cores, GiB, GPU counts.",
    ),
]
