"""Decisions and explanations for people (`-o table`, rich) and programs (`-o json|yaml`)."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table

from solver import Decision
from solver.quantity import CPU, UNLIMITED, dim_resource

__all__ = [
    "amounts",
    "dump",
    "explain_table",
    "human",
    "schedule_table",
    "why_table",
    "write_data",
]


def dump(data: dict[str, Any], fmt: str) -> str:
    if fmt == "yaml":
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    return json.dumps(data, indent=2, ensure_ascii=False)


def write_data(data: dict[str, Any], fmt: str) -> None:
    """`-o json` / `-o yaml` on standard output: the same data either way."""
    text = dump(data, fmt)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


# The resources counted in bytes: `solver.quantity` formats the same ones in Ki/Mi/Gi.
_BYTE_RESOURCES = ("memory", "ephemeral-storage", "hugepages-")
_BYTE_UNITS = (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))


def _decimal(value: float) -> str:
    """One decimal below 100, none above, thousands separated, no trailing `.0`."""
    return (f"{value:,.1f}" if value < 100 else f"{value:,.0f}").removesuffix(".0")


def human(resource: str, value: float, *, memory_unit: int = 1, cores: bool = False) -> str:
    """A quantity for a table (json/yaml keep the machine units): milli-CPU as cores
    (`2500` -> `2.5`, `2.5 cores` with `cores`), bytes (counted in `memory_unit` bytes) as
    GiB (`3 GiB`; MiB or KiB below one GiB), anything else (GPUs, pods, extended
    resources) as a count; an unlimited amount (`solver.quantity.UNLIMITED`) as `∞`."""
    if value >= UNLIMITED:
        return "∞"
    resource = dim_resource(resource)
    if resource == CPU:
        text = f"{value / 1000:,.3f}".rstrip("0").rstrip(".")
        return f"{text} cores" if cores else text
    if resource.startswith(_BYTE_RESOURCES):
        size = value * memory_unit
        for unit, scale in _BYTE_UNITS:
            if size >= scale:
                return f"{_decimal(size / scale)} {unit}"
        return f"{size:,.0f} B"
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}".rstrip("0")


def amounts(values: Mapping[str, float]) -> str:
    """`cpu 2.5 cores, memory 3 GiB, nvidia.com/gpu 8`: the non-zero amounts, or `-`."""
    shown = [f"{r} {human(r, v, cores=True)}" for r, v in sorted(values.items()) if v]
    return ", ".join(shown) or "-"


def schedule_table(decision: Decision, console: Console) -> None:
    pods = Table(title="Placements", show_lines=False)
    pods.add_column("pod")
    pods.add_column("node")
    pods.add_column("reason (see PodGroups for gangs)", overflow="fold")
    group_reasons = {g.reason for g in decision.podgroups.values() if g.reason}
    for key, p in decision.placements.items():
        reason = "as its PodGroup" if p.reason in group_reasons else p.reason
        pods.add_row(key, p.node or "[red]pending[/red]", reason)
    console.print(pods)
    if decision.podgroups:
        groups = Table(title="PodGroups")
        groups.add_column("podgroup")
        groups.add_column("placed")
        groups.add_column("reason", overflow="fold")
        for key, g in decision.podgroups.items():
            groups.add_row(key, "[green]yes[/green]" if g.placed else "[red]no[/red]", g.reason)
        console.print(groups)
    if decision.victims:
        victims = Table(title="Victims")
        for column in ("pod", "node", "cause"):
            victims.add_column(column, overflow="fold")
        for v in decision.victims:
            cause = f"reclaim for queue {v.queue}" if v.cause == "reclaim" else v.cause
            victims.add_row(v.pod, v.node, cause)
        console.print(victims)
    if decision.moves:
        moves = Table(title="Moves (consolidation), in order")
        for column in ("pod", "its gang", "from", "to"):
            moves.add_column(column, overflow="fold")
        for m in decision.moves:
            moves.add_row(m.pod, m.unit, m.source, m.target)
        console.print(moves)
    if decision.queues:
        queues = Table(
            title="Queues (limit: deserved under proportion, limit under KAI, else realCapability)"
        )
        for column in ("queue", "limit", "held", "placed", "share"):
            queues.add_column(column, overflow="fold")
        for q in decision.queues:
            share = f"{q.share():.2f} → {q.share(after=True):.2f}" if q.limit else "-"
            queues.add_row(
                q.queue, amounts(q.limit), amounts(q.allocated), amounts(q.placed), share
            )
        console.print(queues)
    placed = sum(1 for p in decision.placements.values() if p.node)
    nominated = sum(1 for p in decision.placements.values() if p.nominated)
    console.print(
        f"engine [bold]{decision.engine}[/bold]  status {decision.status}  "
        f"placed {placed}/{len(decision.placements)} pods  "
        + (f"nominated {nominated}  evicted {len(decision.victims)}  " if nominated else "")
        + f"objective {decision.objective}  {decision.seconds * 1000:.1f} ms"
    )


def explain_table(data: dict[str, Any], console: Console) -> None:
    table = Table(title=f"{data['pod']} (gang {data['gang']}) -> {data['placement'] or 'pending'}")
    table.add_column("node")
    table.add_column("feasible")
    table.add_column("reasons", overflow="fold")
    table.add_column("scores")
    table.add_column("total", justify="right")
    for name, v in data["nodes"].items():
        table.add_row(
            name,
            "[green]yes[/green]" if v["feasible"] else "[red]no[/red]",
            "; ".join(v["reasons"]),
            ", ".join(f"{k} {s:g}" for k, s in v["scores"].items()),
            f"{v['total']:g}",
        )
    console.print(table)
    if data["reason"]:
        console.print(f"not placed: {data['reason']}")


def why_table(data: dict[str, Any], console: Console) -> None:
    """`gangplan why -o table`: the certificate first, then what proves it and the pods."""
    gang = data["gang"]
    cert = data["certificate"]
    if data["placed"]:
        console.print(f"gang {gang} is [green]placed[/green] in this cycle.")
    elif cert is None:
        console.print(f"gang {gang} is not placed: {data['reason'] or 'no pending pods'}")
    else:
        proof = "[green]proven[/green]" if cert["proven"] else "[yellow]not proven[/yellow]"
        console.print(f"[bold]{cert['kind']}[/bold] ({proof}): {cert['sentence']}", soft_wrap=True)
        if cert["places"]:
            unit = cert["unit"]
            best = ", ".join(
                f"{p['name']} {human(unit, p['offers']) if unit else p['offers']}"
                for p in cert["places"]
            )
            console.print(f"  best places ({cert['constraint']}): {best}", soft_wrap=True)
        if cert["rivals"]:
            how = "admitted" if cert["constraint"] == "enqueue" else "placed"
            console.print(f"  {how} ahead of it: {', '.join(cert['rivals'])}", soft_wrap=True)
        rest = data["reason"].removeprefix(cert["sentence"]).removeprefix("; ")
        if rest:
            console.print(f"  counted: {rest}", soft_wrap=True, markup=False)
    if data.get("start"):
        console.print(f"when: {data['start']['text']}", soft_wrap=True, markup=False)
    if data.get("changes"):
        console.print("what would let it run (each checked; one unit less does not):")
        for change in data["changes"]:
            console.print(f"  {change['kind']}: {change['change']}", soft_wrap=True, markup=False)
    pods = Table(title=f"pods of {gang}")
    pods.add_column("pod")
    pods.add_column("node")
    for key, node in data["pods"].items():
        pods.add_row(key, node or "[red]pending[/red]")
    console.print(pods)
