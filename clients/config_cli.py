"""`gangplan config show`: the scheduler conf a run uses, in Volcano's file format."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from clients._exit import fail
from clients.render import dump
from solver import GangplanError, load_conf

__all__ = ["config_app"]

config_app = typer.Typer(help="The scheduler conf.", no_args_is_help=True)


@config_app.command("show")
def show_cmd(
    config: Annotated[
        str | None,
        typer.Option("--config", help="A conf file; without it, the default conf."),
    ] = None,
) -> None:
    """Print the effective conf (the default one without --config) as YAML."""
    try:
        conf = load_conf(config)
    except GangplanError as err:
        fail(err)
        return
    for note in conf.notes:
        sys.stderr.write(f"note: {note}\n")
    sys.stdout.write(dump(conf.to_dict(), "yaml"))
