"""The `gangplan` command line.

    gangplan schedule -f FILE... [--config CONF] [--engine auto|cpsat|greedy]
                      [--time-limit S] [--workers N] [--seed N] [-o json|yaml|table]
    gangplan explain  -f FILE... [--config CONF] --pod NS/NAME [-o json|table]

`-f -` reads standard input; a directory reads its *.yaml, *.yml and *.json files.
Invalid input exits 2 with one message naming the file, document and field, and prints
nothing on standard output. Notes (skipped kinds, ignored plugins) go to standard error.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Annotated

import typer
from rich.console import Console

from clients.render import dump, explain_table, schedule_table
from solver import GangplanError, explain, load_conf, load_manifests, schedule
from solver.engines import ENGINES

__all__ = ["app", "main"]

app = typer.Typer(
    help="gangplan: placement optimizer for gang-scheduled AI and HPC jobs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
stderr = Console(stderr=True, highlight=False)


class Output(StrEnum):
    json = "json"
    yaml = "yaml"
    table = "table"


class ExplainOutput(StrEnum):
    json = "json"
    table = "table"


Files = Annotated[
    list[str],
    typer.Option("-f", "--filename", help="Manifest file, directory, or - for stdin. Repeatable."),
]
Config = Annotated[
    str | None,
    typer.Option(
        "--config", help="Scheduler conf in the Volcano format (actions, tiers, plugins)."
    ),
]


def _fail(err: GangplanError) -> None:
    stderr.print(f"[red]error:[/red] {err}", markup=True, soft_wrap=True)
    raise typer.Exit(2)


def _notes(notes: tuple[str, ...]) -> None:
    for note in notes:
        stderr.print(f"note: {note}", markup=False, soft_wrap=True)


@app.command("schedule")
def schedule_cmd(
    files: Files,
    config: Config = None,
    engine: Annotated[
        str, typer.Option("--engine", help=f"Engine: {', '.join(sorted(ENGINES))}.")
    ] = "auto",
    time_limit: Annotated[
        float,
        typer.Option("--time-limit", min=0.05, help="Seconds for the engine (greedy + CP-SAT)."),
    ] = 10.0,
    workers: Annotated[
        int,
        typer.Option(
            "--workers", min=0, help="CP-SAT workers; 0 = the machine's cores (capped at 8)."
        ),
    ] = 0,
    seed: Annotated[int, typer.Option("--seed", help="CP-SAT random seed.")] = 0,
    output: Annotated[Output, typer.Option("-o", "--output")] = Output.json,
) -> None:
    """Simulate one scheduling cycle for every pending pod in the manifests."""
    try:
        conf = load_conf(config)
        model = load_manifests(*files)
        decision = schedule(
            model, conf, engine=engine, time_limit=time_limit, workers=workers, seed=seed
        )
    except GangplanError as err:
        _fail(err)
        return
    _notes(decision.notes)
    if output is Output.table:
        schedule_table(decision, Console())
    else:
        sys.stdout.write(dump(decision.to_dict(), output.value) + "\n")


@app.command("explain")
def explain_cmd(
    files: Files,
    pod: Annotated[str, typer.Option("--pod", help="The pending pod, as namespace/name.")],
    config: Config = None,
    output: Annotated[ExplainOutput, typer.Option("-o", "--output")] = ExplainOutput.json,
) -> None:
    """Every node's verdict and scores for one pending pod."""
    try:
        conf = load_conf(config)
        model = load_manifests(*files)
        data = explain(model, conf, pod if "/" in pod else f"default/{pod}")
    except GangplanError as err:
        _fail(err)
        return
    if output is ExplainOutput.table:
        explain_table(data, Console())
    else:
        sys.stdout.write(dump(data, "json") + "\n")


def main() -> None:
    app()
