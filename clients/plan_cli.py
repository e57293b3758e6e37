"""`gangplan plan`: capacity planning and what-if sweeps.

    gangplan plan -f WORKLOAD... --catalog CATALOG.yaml [--cluster FILE... | --kubeconfig F]
                  [--trace CSV [--trace-mapping FIELD=COLUMN,...]]
                  [-o json|yaml|table] [--plot out.png] [--time-limit S] [--workers N] [--seed N]
    gangplan plan --sweep sweep.yaml [--executor process|ray|dask] [--max-workers N]
                  [--address ADDR] [--out DIR | --results FILE] [--plot sweep.png] [-q]

Invalid input (catalogue, CSV columns, manifests, sweep file) exits 2 with one message
naming the file and field; nothing is printed on standard output then.
"""

from __future__ import annotations

import functools
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from clients._exit import fail
from clients._options import Context, Kubeconfig, Output, OutputFormat
from clients.render import human, write_data
from clients.scheduler_cli import live_model
from solver import GangplanError, InputError, load_manifests
from solver.plan import (
    PlanInput,
    PlanOptions,
    PlanResult,
    Workload,
    cluster_from_csv,
    cluster_from_model,
    load_catalog,
    make_input,
    parse_mapping,
    plan,
    valued,
    workload_from_model,
    workload_from_trace,
)
from solver.plan.plot import plot_plan, plot_sweep
from solver.plan.sweep import load_sweep, read_results, results_path, run_sweep

__all__ = ["build_plan_input", "plan_cmd"]

stderr = Console(stderr=True, highlight=False)


class PlanValue(StrEnum):
    """What placing a job is worth (`solver.plan.valued`)."""

    pods = "pods"
    gpu = "gpu"


def build_plan_input(
    files: list[str],
    catalog: str | None,
    cluster: list[str],
    trace: str | None,
    trace_mapping: str | None,
    kubeconfig: str | None = None,
    context: str | None = None,
) -> PlanInput:
    """Workload (manifests and/or a trace) + current cluster (files, or the live one with
    `kubeconfig`) + catalogue -> PlanInput."""
    manifests = [*files, *(c for c in cluster if not c.endswith(".csv"))]
    workload = Workload()
    existing = []
    if manifests or kubeconfig is not None:
        model = (
            live_model(manifests, kubeconfig, context)
            if kubeconfig is not None
            else load_manifests(*manifests)
        )
        workload_from_model(model, workload)
        existing.extend(cluster_from_model(model))
        workload.notes.extend(model.notes)
    for c in cluster:
        if c.endswith(".csv"):
            existing.extend(cluster_from_csv(c))
    if trace:
        workload_from_trace(trace, parse_mapping(trace_mapping), workload)
    if not manifests and not trace and kubeconfig is None:
        raise InputError("name a workload: -f manifests and/or --trace CSV")
    return make_input(workload, None if catalog is None else load_catalog(catalog), existing)


def _progress(quiet: bool) -> tuple[Progress | None, Any]:
    if quiet or not stderr.is_terminal:
        return None, None
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TimeElapsedColumn(),
        console=stderr,
        transient=True,
    )
    return bar, bar.add_task("planning", total=1.0)


def plan_table(result: PlanResult, console: Console) -> None:
    add = Table(title="Nodes to add")
    add.add_column("node type")
    add.add_column("nodes", justify="right")
    for name, n in sorted(result.add.items()):
        add.add_row(name, str(n))
    if not result.add:
        add.add_row("[dim](none)[/dim]", "0")
    console.print(add)
    if result.use:
        # `existing:<node>[+k]`: the planner's class of a current node and k identical ones
        # (`solver.plan.cluster._classes`); the count is how many of the class the plan uses
        used = Table(title="Existing nodes used", min_width=24)
        used.add_column("node (+ identical)")
        used.add_column("nodes", justify="right")
        for name, n in sorted(result.use.items()):
            used.add_row(name.removeprefix("existing:"), str(n))
        console.print(used)
    util = Table(title="Utilisation of the planned cluster")
    for col in ("resource", "used", "capacity", "ratio"):
        util.add_column(col, justify="left" if col == "resource" else "right")
    for name, u in result.utilisation.items():
        used_text, capacity_text = (
            human(name, u[k], memory_unit=2**20, cores=True) for k in ("used", "capacity")
        )  # the planner counts memory in MiB
        util.add_row(name, used_text, capacity_text, f"{100 * u['ratio']:.1f}%")
    console.print(util)
    if result.unplaced:
        left = Table(title="Still cannot run")
        left.add_column("jobs", justify="right")
        left.add_column("pods", justify="right")
        left.add_column("reason", overflow="fold")
        left.add_column("e.g.", overflow="fold")
        for job in result.unplaced:
            left.add_row(str(job.count), str(job.pods), job.reason, ", ".join(job.jobs[:3]))
        console.print(left)
    bounds = ", ".join(f"{k} {v:g}" for k, v in result.bounds.items() if v is not None)
    console.print(
        f"status [bold]{result.status}[/bold]  cost {result.cost:g}  objective "
        f"{result.objective:g}  bound {result.bound:g} ({bounds})  gap "
        f"{100 * result.gap:.2f}%  placed {result.placed_pods}/{result.total_pods} pods  "
        f"{result.seconds:.1f} s",
        soft_wrap=True,
    )


def plan_cmd(
    files: Annotated[
        list[str] | None,
        typer.Option("-f", "--filename", help="Workload manifests (pending pods). Repeatable."),
    ] = None,
    catalog: Annotated[
        str | None, typer.Option("--catalog", help="Node-type catalogue (YAML).")
    ] = None,
    cluster: Annotated[
        list[str] | None,
        typer.Option("--cluster", help="Current cluster: manifests or an openb node CSV."),
    ] = None,
    kubeconfig: Kubeconfig = None,
    context: Context = None,
    trace: Annotated[str | None, typer.Option("--trace", help="Pod-list CSV.")] = None,
    trace_mapping: Annotated[
        str | None,
        typer.Option(
            "--trace-mapping",
            help="FIELD=COLUMN,... for name,cpu,memory,gpu,gpu_milli,gpu_spec (openb defaults).",
        ),
    ] = None,
    output: OutputFormat = Output.table,
    plot: Annotated[str | None, typer.Option("--plot", help="Write a PNG here.")] = None,
    time_limit: Annotated[
        float, typer.Option("--time-limit", min=0.1, help="Seconds per plan.")
    ] = 10.0,
    workers: Annotated[int, typer.Option("--workers", min=1, max=64, help="CP-SAT workers.")] = 1,
    seed: Annotated[
        int, typer.Option("--seed", min=0, max=2**31 - 1, help="CP-SAT random seed.")
    ] = 0,
    parts: Annotated[
        int,
        typer.Option("--parts", min=1, max=64, help="POP-style split of the integer master."),
    ] = 1,
    value: Annotated[
        PlanValue,
        typer.Option(
            "--value",
            help="What a job is worth when not all can run: its pods, or its GPU milli "
            "(pack a fixed cluster for the most GPU work).",
        ),
    ] = PlanValue.pods,
    sweep: Annotated[
        str | None, typer.Option("--sweep", help="Run the scenarios of a sweep file.")
    ] = None,
    executor: Annotated[
        str, typer.Option("--executor", help="Sweep executor: process, ray or dask.")
    ] = "process",
    max_workers: Annotated[
        int | None, typer.Option("--max-workers", min=1, help="Concurrent scenarios.")
    ] = None,
    results: Annotated[
        str | None,
        typer.Option(
            "--results", help="Sweep JSONL file (default: the sweep's `output` in --out)."
        ),
    ] = None,
    out_dir: Annotated[
        str | None,
        typer.Option(
            "--out",
            help="Folder for sweep results (default: $XDG_CACHE_HOME/gangplan/sweeps, "
            "~/.cache/gangplan/sweeps without it).",
        ),
    ] = None,
    address: Annotated[
        str | None,
        typer.Option(
            "--address",
            help="Attach to a running Ray cluster (ray://host:10001 or host:6379) or Dask "
            "scheduler (tcp://host:8786) instead of starting a local one.",
        ),
    ] = None,
    quiet: Annotated[
        bool,
        typer.Option("--quiet", "-q", help="No progress bar; only errors from Ray and Dask."),
    ] = False,
) -> None:
    """Plan capacity: nodes to add per type at minimum cost, what cannot run, the bound."""
    try:
        if sweep is not None:
            _sweep(sweep, executor, max_workers, address, results, out_dir, plot, output, quiet)
            return
        if catalog is None and not cluster and kubeconfig is None:
            raise InputError(
                "--catalog is required (or --cluster / --kubeconfig alone: what fits on the "
                "current cluster; or --sweep)"
            )
        inp = build_plan_input(
            files or [], catalog, cluster or [], trace, trace_mapping, kubeconfig, context
        )
        inp = valued(inp, value.value)
        options = PlanOptions(time_limit=time_limit, workers=workers, seed=seed, parts=parts)
        bar, task = _progress(quiet)
        if bar is not None:
            with bar:
                result = plan(
                    inp, options, progress=lambda s, f: bar.update(task, completed=f, description=s)
                )
        else:
            result = plan(inp, options)
        if plot:
            plot_plan(result, plot)
    except GangplanError as err:
        fail(err)
    for note in (*inp.notes, *result.notes):
        stderr.print(f"note: {note}", markup=False, soft_wrap=True)
    if output is not Output.table:
        write_data(result.to_dict(), output)
    else:
        plan_table(result, Console())


def _sweep(
    path: str,
    executor: str,
    max_workers: int | None,
    address: str | None,
    results: str | None,
    out_dir: str | None,
    plot: str | None,
    output: Output,
    quiet: bool,
) -> None:
    spec = load_sweep(path)
    base = build_plan_input(
        spec.workload, spec.catalog, spec.cluster, spec.trace, spec.trace_mapping
    )
    base = valued(base, spec.value)
    options = PlanOptions(time_limit=spec.time_limit, workers=spec.workers, seed=spec.seed)
    out = Path(results) if results else results_path(spec, out_dir)
    bar, task = _progress(quiet)
    if bar is not None:
        bar.update(task, total=len(spec.scenarios), description="scenarios")

    def tick(row: dict[str, Any], n: int, total: int) -> None:
        if bar is not None:
            bar.update(task, completed=n, total=total, description=f"scenario {row['scenario']}")

    run = functools.partial(
        run_sweep, base, spec.scenarios, options, out, executor=executor,
        max_workers=max_workers, address=address, quiet=quiet,
    )  # fmt: skip
    if bar is not None:
        with bar:
            solved = run(on_result=tick)
    else:
        solved = run()
    # a resumed sweep shows every scenario: the rows already in the file and the new ones
    rows = read_results(out, spec.scenarios)
    skipped = len(rows) - len(solved)
    if plot:
        plot_sweep(rows, plot, title=f"sweep {Path(path).name}")
    if output is not Output.table:
        summary = {"results": str(out), "solved": len(solved), "skipped": skipped, "rows": rows}
        write_data(summary, output)
        return
    table = Table(title=f"Sweep {Path(path).name} -> {out}")
    for col in ("scenario", "status", "cost", "gap", "add", "unplaced pods"):
        # fold, not ellipsize: grid names differ only at their end (`prices.h100x8=60`)
        table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(
            str(row["scenario"]),
            str(row["status"]),
            f"{row['cost']:g}",
            f"{100 * row['gap']:.2f}%",
            ", ".join(f"{k}={v}" for k, v in row["add"].items()),
            str(row["total_pods"] - row["placed_pods"]),
        )
    Console().print(table)
    if skipped:
        Console().print(f"{skipped} scenario(s) already in {out}: not solved again (resume)")
