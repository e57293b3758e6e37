"""`gangplan config show`: the scheduler conf a run uses, in Volcano's file format."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from clients._exit import fail
from clients._options import Output, OutputFormat
from clients.render import write_data
from solver import GangplanError, load_conf
from solver.config import plugin_status

__all__ = ["config_app"]

config_app = typer.Typer(help="The scheduler conf.", no_args_is_help=True)


@config_app.command("show")
def show_cmd(
    config: Annotated[
        str | None,
        typer.Option("--config", help="A conf file; without it, the default conf."),
    ] = None,
    output: OutputFormat = Output.yaml,
) -> None:
    """Print the effective conf (the default one without --config): YAML as Volcano's file
    format, JSON, or a table of its actions and plugins (with whether gangplan acts on
    each; what it does not act on is noted on stderr)."""
    try:
        conf = load_conf(config)
    except GangplanError as err:
        fail(err)
        return
    for note in conf.notes:
        sys.stderr.write(f"note: {note}\n")
    data = conf.to_dict()
    if output is not Output.table:
        write_data(data, output)
        return
    table = Table(title=f"actions: {data.get('actions', '')}")
    for column in ("tier", "plugin", "arguments", "gangplan"):
        table.add_column(column)
    for number, tier in enumerate(data.get("tiers", []), start=1):
        for plugin in tier.get("plugins", []):
            arguments = {k: v for k, v in plugin.items() if k != "name"}
            name = str(plugin.get("name", ""))
            table.add_row(
                str(number), name, json.dumps(arguments) if arguments else "", plugin_status(name)
            )
    Console().print(table)
