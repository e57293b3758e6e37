"""`gangplan schedule` and `gangplan why`: one scheduling cycle over manifests (or a live
cluster), here or on a gangplan server, and the options they share with `explain`."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console

from clients._exit import fail
from clients._options import Context, Kubeconfig, LiveFiles, Now, Output, OutputFormat, observed_at
from clients.client import ClientError
from clients.remote import schedule_remote, why_remote
from clients.render import schedule_table, why_table, write_data
from clients.scheduler_cli import live_model
from solver import (
    ClusterModel,
    Decision,
    GangplanError,
    SchedulerConf,
    load_conf,
    load_manifests,
    schedule,
)
from solver.changes import changes
from solver.consolidate import consolidation_wanted, schedule_moving
from solver.engines import ENGINES
from solver.errors import InputError
from solver.model import DEFAULT_SCHEDULER_NAMES, PodSelection
from solver.plan import Catalog, load_catalog
from solver.schedule import AFTER_ENGINE_PER_POD, snapshot_of
from solver.snapshot import Workload
from solver.start import estimate, parse_duration, parse_time, running_ends

__all__ = [
    "Config",
    "SchedulerNames",
    "model_of",
    "notes",
    "schedule_cmd",
    "selection_of",
    "why_cmd",
]

stderr = Console(stderr=True, highlight=False)

Config = Annotated[
    str | None,
    typer.Option(
        "--config", help="Scheduler conf in the Volcano format (actions, tiers, plugins)."
    ),
]


SchedulerNames = Annotated[
    list[str] | None,
    typer.Option(
        "--scheduler-name",
        help="Place only pending pods whose spec.schedulerName is this (repeatable; default: "
        + ", ".join(sorted(DEFAULT_SCHEDULER_NAMES))
        + "). Pods of other schedulers stay pending; bound ones still use their nodes.",
    ),
]
Namespaces = Annotated[
    list[str] | None,
    typer.Option(
        "-n", "--namespace", help="Place only pending pods of this namespace (repeatable)."
    ),
]
AllNamespaces = Annotated[
    bool,
    typer.Option(
        "-A", "--all-namespaces", help="Every namespace of the input (the default; as kubectl)."
    ),
]


def selection_of(
    names: list[str] | None, namespaces: list[str] | None, all_namespaces: bool
) -> PodSelection:
    if namespaces and all_namespaces:
        raise InputError("--namespace and --all-namespaces exclude each other")
    return PodSelection(
        scheduler_names=frozenset(names) if names else DEFAULT_SCHEDULER_NAMES,
        namespaces=frozenset(namespaces) if namespaces else None,
    )


def model_of(files: list[str] | None, kubeconfig: str | None, context: str | None) -> ClusterModel:
    """The files, or the live cluster plus the files with `--kubeconfig`."""
    if kubeconfig is not None:
        return live_model(files or [], kubeconfig, context)
    if not files:
        raise InputError("give the manifests with -f FILE (or read a live cluster: --kubeconfig)")
    return load_manifests(*files)


def notes(notes: tuple[str, ...]) -> None:
    for note in notes:
        stderr.print(f"note: {note}", markup=False, soft_wrap=True)


Engine = Annotated[str, typer.Option("--engine", help=f"Engine: {', '.join(sorted(ENGINES))}.")]
TimeLimit = Annotated[
    float,
    typer.Option(
        "--time-limit",
        min=0.05,
        max=86_400,
        help="Seconds for the answer: reading the input, the engine (greedy + "
        "CP-SAT) and its check; the engine gets what reading leaves (at least 0.05 s). "
        "With --server, the call's gRPC deadline.",
    ),
]
Workers = Annotated[
    int,
    typer.Option(
        "--workers", min=0, max=64, help="CP-SAT workers; 0 = the machine's cores (capped at 8)."
    ),
]
Seed = Annotated[int, typer.Option("--seed", min=0, max=2**31 - 1, help="CP-SAT random seed.")]
Preempt = Annotated[
    bool,
    typer.Option(
        "--preempt", help="Job-level preemption (also on when the conf lists preempt/reclaim)."
    ),
]
Consolidate = Annotated[
    bool,
    typer.Option(
        "--consolidate",
        help="Consolidation (KAI's action): a gang left out may get room by moving running "
        "preemptible pods to other nodes, preferred over evicting (also on when the conf "
        "lists the consolidation action).",
    ),
]
Server = Annotated[
    str | None,
    typer.Option(
        "--server",
        help="Ask a gangplan server (host:port) instead of solving here. "
        "GANGPLAN_TOKEN and GANGPLAN_CA_CERT set a bearer token and TLS.",
    ),
]


@dataclass(frozen=True)
class Ask:
    """What one cycle is asked with (the flags `schedule` and `why` share)."""

    config: str | None
    engine: str
    time_limit: float
    workers: int
    seed: int
    preempt: bool
    server: str | None
    consolidate: bool = False


def cycle(ask: Ask, cluster: ClusterModel, selection: PodSelection, started: float) -> Decision:
    """One scheduling cycle over `cluster` for the selected pending pods, here or on
    `ask.server` (the pods left out stay in the snapshot: nominated ones hold their room)."""
    left_s = _left(started, ask.time_limit, len(cluster.pods))
    if ask.server is not None:
        return _schedule_remote(ask, cluster, selection, left_s)
    snapshot = snapshot_of(cluster)
    workload, left = Workload.everything(snapshot).select(selection)
    conf = load_conf(ask.config)
    solve_fn = schedule_moving if consolidation_wanted(conf, ask.consolidate) else schedule
    decision = solve_fn(
        snapshot,
        conf,
        workload=workload,
        engine=ask.engine,
        time_limit=left_s,
        workers=ask.workers,
        seed=ask.seed,
        preempt=ask.preempt,
    )
    return replace(decision, notes=(*decision.notes, left)) if left is not None else decision


def schedule_cmd(
    files: LiveFiles = None,
    config: Config = None,
    engine: Engine = "auto",
    time_limit: TimeLimit = 10.0,
    workers: Workers = 0,
    seed: Seed = 0,
    preempt: Preempt = False,
    consolidate: Consolidate = False,
    server: Server = None,
    output: OutputFormat = Output.json,
    scheduler_names: SchedulerNames = None,
    namespaces: Namespaces = None,
    all_namespaces: AllNamespaces = False,
    kubeconfig: Kubeconfig = None,
    context: Context = None,
    now: Now = None,
) -> None:
    """Simulate one scheduling cycle for every pending pod in the manifests (with
    --kubeconfig: in the live cluster, with the manifests added; nothing is submitted)."""
    started = time.perf_counter()
    ask = Ask(config, engine, time_limit, workers, seed, preempt, server, consolidate)
    try:
        load_conf(config)  # a bad conf is refused before the input is read
        selection = selection_of(scheduler_names, namespaces, all_namespaces)
        cluster = observed_at(model_of(files, kubeconfig, context), now)
        decision = cycle(ask, cluster, selection, started)
    except GangplanError as err:
        fail(err)
        return
    notes(decision.notes)
    if output is Output.table:
        schedule_table(decision, Console())
    else:
        write_data(decision.to_dict(), output)


def why_cmd(
    gang: Annotated[
        str | None, typer.Option("--gang", help="The gang (PodGroup), as namespace/name.")
    ] = None,
    pod: Annotated[
        str | None, typer.Option("--pod", help="A pending pod, as namespace/name: its gang.")
    ] = None,
    files: LiveFiles = None,
    config: Config = None,
    engine: Engine = "auto",
    time_limit: TimeLimit = 10.0,
    workers: Workers = 0,
    seed: Seed = 0,
    preempt: Preempt = False,
    server: Server = None,
    output: OutputFormat = Output.table,
    scheduler_names: SchedulerNames = None,
    kubeconfig: Kubeconfig = None,
    context: Context = None,
    now: Now = None,
    default_runtime: Annotated[
        str | None,
        typer.Option(
            "--default-runtime",
            help="Expected runtime of running pods without a gangplan.io/expected-end or "
            "-runtime annotation (e.g. 4h), unless the conf's expectedRuntime names their "
            "priority class (default: the conf's expectedRuntime.default, else they run on).",
        ),
    ] = None,
    catalog: Annotated[
        str | None,
        typer.Option(
            "--catalog",
            help="Node-type catalogue (as for `gangplan plan`): the nodes change is then the "
            "cheapest number of one type that lets the gang run.",
        ),
    ] = None,
) -> None:
    """Why a gang (or a pod's gang) waits: its certificate — the constraint that binds and
    the numbers that prove it —, the counted reason, and the smallest changes that would
    let it run (each checked by placing it), from one scheduling cycle."""
    started = time.perf_counter()
    ask = Ask(config, engine, time_limit, workers, seed, preempt, server)
    try:
        load_conf(config)
        at, runtime = _clock(now, default_runtime)
        bought = load_catalog(catalog) if catalog is not None else None
        if (gang is None) == (pod is None):
            raise InputError("name the gang with --gang NS/NAME or a pod with --pod NS/NAME")
        cluster = observed_at(model_of(files, kubeconfig, context), now)
        gang_id = _gang_of(cluster, gang, pod)
        found: list[dict[str, Any]] = []
        start: dict[str, Any] | None = None
        selection = selection_of(scheduler_names, None, False)
        remote = server is not None and not preempt  # `Why` has no preemption: Preempt + here
        if remote:  # the service answers all three: certificate, changes, start
            decision, found, start = _why_remote(ask, cluster, gang_id, selection, at, runtime,
                                                 bought)  # fmt: skip
        else:
            decision = cycle(ask, cluster, selection, started)
    except GangplanError as err:
        fail(err)
        return
    notes(decision.notes)
    data = why_data(decision, cluster, gang_id)
    if not data["placed"]:
        if not remote:
            found, start = _why_here(decision, cluster, gang_id, load_conf(config), at, runtime,
                                     min(time_limit, 2.0), bought)  # fmt: skip
        data["changes"], data["start"] = found, start
    if output is Output.table:
        why_table(data, Console())
    else:
        write_data(data, output)


def _why_here(
    decision: Decision,
    cluster: ClusterModel,
    gang_id: str,
    conf: SchedulerConf,
    at: datetime,
    runtime: timedelta | None,
    seconds: float,
    catalog: Catalog | None,
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The changes that would let the gang run and its start estimate, in this process."""
    snapshot = snapshot_of(cluster)
    cert = decision.certificates.get(gang_id)
    found = changes(snapshot, conf, gang_id, cert, time_limit=seconds, catalog=catalog)
    ends, unknown = running_ends(snapshot, runtime, conf.runtimes)
    start = estimate(snapshot, conf, gang_id, at, ends, unknown)
    return [c.to_dict() for c in found], start.to_dict() if start is not None else None


def _clock(now: str | None, runtime: str | None) -> tuple[datetime, timedelta | None]:
    """`--now` and `--default-runtime`, checked."""
    at = datetime.now(UTC) if now is None else parse_time(now)
    if at is None:
        raise InputError(f"--now {(now or '')[:64]!r}: not an RFC 3339 time")
    parsed = parse_duration(runtime) if runtime is not None else None
    if runtime is not None and parsed is None:
        raise InputError(
            f"--default-runtime {runtime[:64]!r}: not a duration like 90m or 4h (at most 3650d)"
        )
    return at, parsed


def _key(text: str) -> str:
    return text if "/" in text else f"default/{text}"


def _gang_of(cluster: ClusterModel, gang: str | None, pod: str | None) -> str:
    """The gang id asked about: `--gang`, or the gang of `--pod` (its own key without one)."""
    if gang is not None:
        key = _key(gang)
        if key not in cluster.gangs:
            raise InputError(f"--gang {gang[:64]}: no PodGroup {key[:64]} in the input")
        return key
    assert pod is not None
    key = _key(pod)
    found = next((p for p in cluster.pods if p.key == key), None)
    if found is None:
        raise InputError(f"--pod {pod[:64]}: no pod {key[:64]} in the input")
    return found.gang or found.key


def why_data(decision: Decision, cluster: ClusterModel, gang_id: str) -> dict[str, Any]:
    """The answer of `why` for one gang: placed or not, its pods and its certificate."""
    members = sorted(p.key for p in cluster.pods if (p.gang or p.key) == gang_id)
    outcome = decision.podgroups.get(gang_id)
    pods = {k: decision.placements[k].node for k in members if k in decision.placements}
    cert = decision.certificates.get(gang_id)
    reason = outcome.reason if outcome is not None else ""
    if outcome is None and members and members[0] in decision.placements:
        reason = decision.placements[members[0]].reason
    return {
        "gang": gang_id,
        "placed": decision.gang_placed(gang_id),
        "enqueued": outcome.enqueued if outcome is not None else True,
        "certificate": cert.to_dict() if cert is not None else None,
        "reason": reason,
        "pods": pods,
        "changes": [],
        "start": None,
        "engine": decision.engine,
        "seconds": round(decision.seconds, 6),
    }


def _left(started: float, time_limit: float, pods: int) -> float:
    """What `--time-limit` leaves after reading the input and keeping back the work after
    the engine for `pods` pods (the engine needs 0.05 s)."""
    kept = pods * AFTER_ENGINE_PER_POD
    return max(0.05, time_limit - (time.perf_counter() - started) - kept)


def _why_remote(
    ask: Ask,
    cluster: ClusterModel,
    gang_id: str,
    selection: PodSelection,
    at: datetime,
    runtime: timedelta | None,
    catalog: Catalog | None,
) -> tuple[Decision, list[dict[str, Any]], dict[str, Any] | None]:
    """`why` on `ask.server` (the `Why` RPC): a server error exits 2 as for `schedule`."""
    assert ask.server is not None
    try:
        return why_remote(ask.server, cluster, ask.config, gang_id, engine=ask.engine,
                          time_limit=ask.time_limit, workers=ask.workers, seed=ask.seed,
                          selection=selection, now=at, default_runtime=runtime,
                          catalog=catalog)  # fmt: skip
    except ClientError as err:
        _server_failed(ask.server, err)
        raise


def _server_failed(server: str, err: ClientError) -> NoReturn:
    where = "".join(f"\n  {f}: {d}" for f, d in err.violations if f)
    stderr.print(f"error: {server}: {err}{where}", markup=False, soft_wrap=True)
    raise typer.Exit(2) from None


def _schedule_remote(
    ask: Ask, model: ClusterModel, selection: PodSelection, time_limit: float
) -> Decision:
    """A cycle on `ask.server`: a server error exits 2 with its status and message."""
    assert ask.server is not None
    try:
        return schedule_remote(
            ask.server,
            model,
            ask.config,
            engine=ask.engine,
            time_limit=time_limit,
            workers=ask.workers,
            seed=ask.seed,
            preempt=ask.preempt,
            consolidate=ask.consolidate,
            selection=selection,
        )
    except ClientError as err:
        _server_failed(ask.server, err)
