"""`gangplan defrag`: the running pods to move so that whole nodes or domains become free.

    gangplan defrag -f cluster.yaml --level cloud.com/topology-rack --max-pods 100
    gangplan defrag -f cluster.yaml --count 4 --shape nvidia.com/gpu=8 -o yaml

Reads the cluster (manifests, or the live one with --kubeconfig), plans here or on
`--server` (the Defragment RPC), and prints the plan: the freed domains with what each
cost, the moves in order, the bound and the gap. `-o json|yaml` add `apply`: per move the
Eviction and the replacement's `nominatedNodeName` a front end applies, in order.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from clients._exit import fail
from clients._options import Context, Kubeconfig, LiveFiles, Output, OutputFormat
from clients.client import Client, ClientError
from clients.render import write_data
from clients.schedule_cli import Config, Seed, Server, TimeLimit, Workers, model_of, notes
from solver import GangplanError, InputError, load_conf, snapshot_of
from solver.codec import cluster_to_proto, goal_to_proto, plan_from_proto
from solver.defrag import ENGINES, MAX_PODS, DefragGoal, DefragPlan, GoalError, defragment, goal_of

__all__ = ["defrag_cmd"]

_stderr = Console(stderr=True)


def _opt(flag: str, help_text: str, low: int | None = None, high: int | None = None) -> Any:
    return typer.Option(flag, help=help_text, min=low, max=high)


Level = Annotated[
    str,
    _opt(
        "--level",
        "The domains to free: a node label key (a rack label, say), or `node` for single nodes.",
    ),
]
Count = Annotated[
    int | None,
    _opt(
        "--count",
        "Free this many domains (already free ones count) with the fewest pods moved; default: as many as --max-pods allows.",
        1,
        MAX_PODS,
    ),
]
MaxPods = Annotated[
    int,
    _opt("--max-pods", "Pods moved, at most (a moved gang counts all its pods).", 0, MAX_PODS),
]
MaxGangs = Annotated[
    int | None,
    _opt("--max-gangs", "Units moved (gangs and pods of their own), at most.", 0, MAX_PODS),
]
MaxCost = Annotated[
    int | None,
    _opt(
        "--max-cost-per-domain",
        "Leave a domain whose freeing moves more pods than this (cost-to-value).",
        0,
        MAX_PODS,
    ),
]
Shape = Annotated[
    list[str] | None,
    _opt(
        "--shape",
        "RESOURCE=QUANTITY: only domains whose every node has this allocatable, e.g. nvidia.com/gpu=8. Repeatable.",
    ),
]
ProtectPriority = Annotated[
    int | None, _opt("--protect-priority", "Pods at or above this priority never move.")
]
ProtectNamespace = Annotated[
    list[str] | None,
    _opt(
        "--protect-namespace",
        "Pods of this namespace never move (kube-system never does). Repeatable.",
    ),
]
ProtectLabel = Annotated[
    list[str] | None,
    _opt("--protect-label", "KEY=VALUE: pods with this label never move. Repeatable."),
]
TopologyKey = Annotated[
    list[str] | None,
    _opt(
        "--topology-key",
        "A node label that says where a node is, not what it is: pods may move across its values (hostname and keys with `topology` in them always may). Repeatable.",
    ),
]
Engine = Annotated[str, _opt("--engine", f"Engine: {', '.join(ENGINES)}.")]
Gang = Annotated[
    str | None,
    _opt(
        "--gang",
        "NS/NAME: room for this pending gang instead of freeing domains: the fewest pods "
        "moved so that it is placed (consolidation).",
    ),
]


def defrag_cmd(
    files: LiveFiles = None,
    level: Level = "node",
    count: Count = None,
    max_pods: MaxPods = 100,
    max_gangs: MaxGangs = None,
    max_cost_per_domain: MaxCost = None,
    shape: Shape = None,
    protect_priority: ProtectPriority = None,
    protect_namespace: ProtectNamespace = None,
    protect_label: ProtectLabel = None,
    topology_key: TopologyKey = None,
    gang: Gang = None,
    config: Config = None,
    engine: Engine = "auto",
    time_limit: TimeLimit = 10.0,
    workers: Workers = 0,
    seed: Seed = 0,
    server: Server = None,
    output: OutputFormat = Output.table,
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """Plan moves of running pods that free whole nodes or topology domains (racks,
    blocks, NVL72 domains): the emptiest first, then CP-SAT for the proven best within the
    budget. Nothing is moved: the plan says what to evict and where each pod goes."""
    started = time.perf_counter()
    try:
        goal = goal_of(
            level=level, count=count, max_pods=max_pods, max_gangs=max_gangs,
            max_cost_per_domain=max_cost_per_domain, shape=_pairs("--shape", shape),
            protect_priority=protect_priority, protect_namespaces=tuple(protect_namespace or ()),
            protect_labels=_pairs("--protect-label", protect_label),
            topology_keys=tuple(topology_key or ()),
            gang=gang,
        )  # fmt: skip
        if engine not in ENGINES:
            raise InputError(f"--engine: {engine!r} is not one of {', '.join(ENGINES)}")
        conf = load_conf(config)  # the scheduler's, for --gang: a bad conf before the input
        cluster = model_of(files, kubeconfig, context)
        left = max(0.05, time_limit - (time.perf_counter() - started))
        if server is not None:
            conf_text = Path(config).read_text(encoding="utf-8") if config else ""
            plan = _remote(server, cluster, goal, (engine, conf_text), left, workers, seed)
        else:
            plan = defragment(
                snapshot_of(cluster), goal, engine=engine, time_limit=left,
                workers=workers or min(os.cpu_count() or 1, 8), seed=seed, conf=conf,
            )  # fmt: skip
    except GoalError as err:
        flag = "--" + err.field.split("[")[0].replace("_", "-")
        fail(InputError(f"{flag}: {err.reason}"))
    except GangplanError as err:
        fail(err)
    notes(plan.notes)
    if output is Output.table:
        defrag_table(plan, Console())
    else:
        write_data({**plan.to_dict(), "apply": plan.manifests()}, output)


def _pairs(flag: str, items: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InputError(f"{flag}: {item!r} is not KEY=VALUE")
        out[key] = value
    return out


def _remote(
    server: str,
    cluster: Any,
    goal: DefragGoal,
    ask: tuple[str, str],
    left: float,
    workers: int,
    seed: int,
) -> DefragPlan:
    """The plan from `server`'s Defragment RPC, `ask` its engine and conf text (a server
    error exits 2 with its status)."""
    engine, conf_text = ask
    ca = os.environ.get("GANGPLAN_CA_CERT") or None
    try:
        with Client(server, token=os.environ.get("GANGPLAN_TOKEN") or None, ca_cert=ca) as client:
            response = client.defragment(
                goal_to_proto(goal), cluster=cluster_to_proto(cluster), engine=engine,
                scheduler_conf=conf_text, workers=workers, seed=seed, timeout=left,
            )  # fmt: skip
    except ClientError as err:
        where = "".join(f"\n  {f}: {d}" for f, d in err.violations if f)
        _stderr.print(f"error: {server}: {err}{where}", markup=False, soft_wrap=True)
        raise typer.Exit(2) from None
    return plan_from_proto(response, goal)


def defrag_table(plan: DefragPlan, console: Console) -> None:
    if plan.freed:
        level = plan.goal.level
        freed = Table(title=f"Freed ({level})", title_justify="left")
        for column in ("domain", "pods moved off it"):
            freed.add_column(column)
        for name in plan.freed:
            freed.add_row(name, str(plan.domain_cost.get(name, 0)))
        console.print(freed)
    if plan.moves:
        moves = Table(title="Moves, in order", title_justify="left")
        for column in ("#", "pod", "unit", "from", "to"):
            moves.add_column(column)
        for step, m in enumerate(plan.moves, start=1):
            moves.add_row(str(step), m.pod, "" if m.unit == m.pod else m.unit, m.source, m.target)
        console.print(moves)
    if plan.placement:
        placed = Table(
            title=f"Gang {plan.goal.gang}, once the moves are done", title_justify="left"
        )
        for column in ("pod", "node"):
            placed.add_column(column)
        for pod, node in sorted(plan.placement.items()):
            placed.add_row(pod, node)
        console.print(placed)
    bound = (
        "" if plan.bound is None else f"  bound {plan.bound:g}  gap {100 * (plan.gap or 0):.1f}%"
    )
    what = (
        f"gang {plan.goal.gang} {'placed' if plan.placement else 'not placed'}"
        if plan.goal.gang is not None
        else f"freed {len(plan.freed)}  already free {len(plan.already_free)}"
    )
    console.print(
        f"{what}  pods moved {plan.pods_moved}  gangs moved {plan.gangs_moved}  "
        f"GPUs moved {plan.gpus_moved}  {plan.engine} {plan.status}{bound}",
        markup=False, soft_wrap=True, highlight=False,
    )  # fmt: skip
    if plan.goal.gang is None:
        for reason, domains in sorted(plan.blocked.items()):
            console.print(
                f"  {domains} domain(s) not freed: {reason}", markup=False, highlight=False
            )
