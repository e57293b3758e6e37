"""Options every subcommand shares: the manifests it reads and how it prints its answer."""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Annotated

import typer

from solver import InputError
from solver.model import ClusterModel, epoch_seconds

__all__ = [
    "Context",
    "Files",
    "Kubeconfig",
    "LiveFiles",
    "Now",
    "Output",
    "OutputFormat",
    "observed_at",
]

Files = Annotated[
    list[str],
    typer.Option("-f", "--filename", help="Manifest file, directory, or - for stdin. Repeatable."),
]
LiveFiles = Annotated[
    list[str] | None,
    typer.Option(
        "-f",
        "--filename",
        help="Manifest file, directory, or - for stdin. Repeatable. With --kubeconfig: added "
        "to the live cluster's objects (one the cluster has by the same name is replaced).",
    ),
]
Kubeconfig = Annotated[
    str | None,
    typer.Option(
        "--kubeconfig",
        help="Read the live cluster's current state through this kubeconfig (read-only: "
        "nothing is submitted), as `gangplan dump` writes it.",
    ),
]
Context = Annotated[str | None, typer.Option("--context", help="Kubeconfig context.")]


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

Now = Annotated[
    str | None,
    typer.Option(
        "--now",
        help="The cluster's time (RFC 3339; default: now): queues' usage and KAI's minimum "
        "runtimes count to it (and `why`'s start estimate from it).",
    ),
]


def observed_at(cluster: ClusterModel, now: str | None) -> ClusterModel:
    """The cluster seen at `--now` (checked), or as read."""
    if now is None:
        return cluster
    if not math.isfinite(epoch_seconds(now)):
        raise InputError(f"--now {now[:64]!r}: not an RFC 3339 time")
    return cluster.model_copy(update={"observed": now})
