"""`gangplan queues validate` and `gangplan queues tree` (Volcano hierarchical queues)."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Console
from rich.tree import Tree

from clients._exit import fail
from clients._options import Files, Now, Output, OutputFormat, observed_at
from clients.render import amounts, human, write_data
from solver import GangplanError, InputError, load_conf, load_manifests, snapshot_of
from solver.quantity import UNLIMITED
from solver.views import (
    DEFAULT_MAX_DEPTH,
    KaiMode,
    QueueTree,
    hdrf_tree,
    kai_queue_tree,
    kueue_tree,
    queue_tree,
    validate_queues,
)

__all__ = ["queues_app"]

queues_app = typer.Typer(
    help="Volcano, KAI-Scheduler and Kueue queues: validate a queue tree, draw it.",
    no_args_is_help=True,
)
stderr = Console(stderr=True, highlight=False)


@queues_app.command("validate")
def validate_cmd(
    files: Files,
    output: OutputFormat = Output.table,
    max_depth: Annotated[
        int, typer.Option("--max-depth", min=1, help="Deepest allowed queue (root = 0).")
    ] = DEFAULT_MAX_DEPTH,
    delete: Annotated[
        str | None,
        typer.Option("--delete", help="Also check whether deleting this queue is admitted."),
    ] = None,
) -> None:
    """Apply Volcano's queue admission rules to every queue (KAI's checks to KAI Queues);
    exit 1 when any is invalid."""
    try:
        model = load_manifests(*files)
    except GangplanError as err:
        fail(err)
        return
    verdicts = validate_queues(snapshot_of(model), max_depth=max_depth, delete=delete)
    if output is not Output.table:
        data = {
            "queues": {
                name: {"valid": v.valid, "reason": v.reason, "warnings": v.warnings}
                for name, v in verdicts.items()
            }
        }
        write_data(data, output)
    else:
        console = Console()
        for name, v in verdicts.items():
            mark = "[green]valid[/green]" if v.valid else "[red]invalid[/red]"
            console.print(
                f"{name}: {mark}" + (f" — {v.reason}" if v.reason else ""), soft_wrap=True
            )
            for w in v.warnings:
                console.print(f"  [yellow]warning:[/yellow] {w}", soft_wrap=True)
        if not verdicts:
            console.print("no Queue objects in the input")
    if not all(v.valid for v in verdicts.values()):
        raise typer.Exit(1)


def _view(tree: QueueTree) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, q in sorted(tree.queues.items()):
        out[name] = {
            "parent": q.parent,
            "children": q.children,
            "state": q.state,
            "capability": {
                r: (None if v >= UNLIMITED else v) for r, v in sorted(q.capability.items())
            },
            "realCapability": {
                r: (None if v >= UNLIMITED else v) for r, v in sorted(q.real_capability.items())
            },
            "deserved": dict(sorted(q.deserved.items())),
            "guarantee": dict(sorted(q.guarantee.items())),
            "allocated": dict(sorted(q.allocated.items())),
        }
    return out


@queues_app.command("tree")
def tree_cmd(
    files: Files,
    config: Annotated[
        str | None, typer.Option("--config", help="Scheduler conf (Volcano format).")
    ] = None,
    output: OutputFormat = Output.table,
    now: Now = None,
) -> None:
    """Draw the queue tree with capability / deserved / guarantee / allocated per queue
    (and, with drf's enableHierarchy, the hDRF tree of the queues' annotated paths)."""
    try:
        conf = load_conf(config)
        model = observed_at(load_manifests(*files), now)
        kai = kai_queue_tree(snapshot_of(model), conf)
        if kai is not None:
            _kai_tree(*kai, output)
            return
        kueue = kueue_tree(snapshot_of(model))
        if kueue is not None and kueue.get("broken"):
            raise InputError(f"the Kueue cohort tree is not drawn: {kueue['broken']}")
        if kueue is not None:
            _kueue_tree(kueue, output)
            return
        hdrf = hdrf_tree(snapshot_of(model), conf)
        tree = queue_tree(snapshot_of(model), conf)
        if hdrf is not None and tree is None:
            _hdrf_tree(hdrf, output)
            return
        if tree is None:
            raise InputError(
                "no queues in the input (or no quota plugin: capacity, capacity-card or "
                "proportion, in the conf)"
            )
        if tree.broken:
            raise InputError(f"the queue tree cannot be built: {tree.broken}")
    except GangplanError as err:
        fail(err)
        return
    if output is not Output.table:
        write_data({"queues": _view(tree), **({"hdrf": hdrf} if hdrf else {})}, output)
        return
    if hdrf is not None:
        _hdrf_tree(hdrf, output)

    def label(name: str) -> str:
        q = tree.queues[name]
        extra = " (implicit)" if q.implicit else ""
        return (
            f"[bold]{name}[/bold]{extra} [{q.state}]\n"
            f"capability {amounts(q.capability)} | real {amounts(q.real_capability)}\n"
            f"deserved {amounts(q.deserved)} | guarantee {amounts(q.guarantee)} | allocated {amounts(q.allocated)}"
        )

    root = Tree(label("root"))

    def grow(node: Tree, name: str) -> None:
        for child in tree.queues[name].children:
            grow(node.add(label(child)), child)

    grow(root, "root")
    Console().print(root)


def _hdrf_tree(view: dict[str, Any], output: Output) -> None:
    """Hierarchical DRF (`drf` with `enableHierarchy`): each part of the annotated paths
    with its weight, its share of the running pods (rescaled as hDRF does), whether it is
    saturated, and the queues whose path ends there."""
    if output is not Output.table:
        write_data({"hdrf": view}, output)
        return

    def label(n: dict[str, Any]) -> str:
        queues = f" queues {', '.join(n['queues'])}" if n["queues"] else ""
        saturated = " saturated" if n["saturated"] else ""
        return f"[bold]{n['name']}[/bold] weight {n['weight']:g} share {n['share']:g}{saturated}{queues}"

    root = Tree("[bold]hDRF[/bold] " + label(view))

    def grow(node: Tree, n: dict[str, Any]) -> None:
        for child in n["children"]:
            grow(node.add(label(child)), child)

    grow(root, view)
    Console().print(root)


def _kai_tree(tree: QueueTree, mode: KaiMode, output: Output) -> None:
    """KAI Queues: quota, limit, over-quota weight and priority as given; the fair share
    divided for the input's pending jobs; what the running pods hold (cpu in cores, memory
    in bytes, GPUs; -1 unlimited); with `usageDBConfig` in the conf, each queue's
    normalised historical usage (time-based fair share)."""

    def numbers(name: str) -> dict[str, Any]:
        q = tree.queues[name]
        return {
            "parent": q.parent if q.parent != "root" else None,
            "priority": q.priority,
            "quota": mode.kai_numbers(tree, name, "quota"),
            "limit": mode.kai_numbers(tree, name, "limit"),
            "overQuotaWeight": mode.kai_numbers(tree, name, "over_quota_weight"),
            "fairShare": {r: round(v, 6) for r, v in mode.fair.get(name, {}).items()},
            "allocated": mode.from_dims(q.allocated),
            **(
                {"usage": {r: round(v, 6) for r, v in mode.history.get(name, {}).items()}}
                if mode.usage_params is not None
                else {}
            ),
        }

    names = [n for n in tree.queues if n != "root"]
    if output is not Output.table:
        write_data({"queues": {n: numbers(n) for n in sorted(names)}}, output)
        return

    def short(values: dict[str, float]) -> str:
        return ", ".join(f"{r} {v:g}" for r, v in values.items())

    def label(name: str) -> str:
        n = numbers(name)
        return (
            f"[bold]{name}[/bold] priority {n['priority']}\n"
            f"quota {short(n['quota'])} | limit {short(n['limit'])}\n"
            f"over-quota weight {short(n['overQuotaWeight'])}\n"
            f"fair share {short(n['fairShare'])} | allocated {short(n['allocated'])}"
            + (f"\nusage {short(n['usage'])}" if "usage" in n else "")
        )

    root = Tree("[bold]KAI queues[/bold] (cpu milli, memory bytes, GPUs; -1 unlimited)")

    def grow(node: Tree, name: str) -> None:
        for child in tree.queues[name].children:
            grow(node.add(label(child)), child)

    grow(root, "root")
    Console().print(root)


def _kueue_tree(view: dict[str, Any], output: Output) -> None:
    """Kueue's cohorts and ClusterQueues: per flavor-resource the nominal quota (with its
    borrowing / lending limits), the subtree quota, what the running pods use and, for a
    ClusterQueue, what it may still be given; each node's dominant resource share."""
    if output is not Output.table:
        write_data({"kueue": view}, output)
        return

    def label(n: dict[str, Any]) -> str:
        share = "∞" if n["share"] is None else f"{n['share']:g}"
        head = f"[bold]{n['name']}[/bold] {n['kind']} weight {n['weight']:g} share {share}"
        if n.get("strategy"):
            head += f" {n['strategy']}"
        if n["localQueues"]:
            head += f" ← {', '.join(n['localQueues'])}"
        lines = [head]
        for fr, r in n["resources"].items():
            limits = "".join(
                f" {key} {human(fr, r[key])}" for key in ("borrowingLimit", "lendingLimit")
                if r[key] is not None
            )  # fmt: skip
            line = (
                f"{fr}: nominal {human(fr, r['nominal'])}{limits} | subtree "
                f"{human(fr, r['subtree'])} | used {human(fr, r['usage'])}"
            )
            if "available" in r:
                line += f" | available {human(fr, r['available'])} of {human(fr, r['potential'])}"
            lines.append(line)
        return "\n".join(lines)

    for root in view["roots"]:
        tree = Tree(label(root))

        def grow(node: Tree, n: dict[str, Any]) -> None:
            for child in n["children"]:
                grow(node.add(label(child)), child)

        grow(tree, root)
        Console().print(tree)
