"""Consolidation: room for a pending gang by moving running pods, not evicting them.

KAI-Scheduler's `consolidation` action (`pkg/scheduler/actions/consolidation`), after the
placement: each gang the answer leaves out gets `solver.defrag`'s room plan — the fewest
running pods of their own moved (running gangs stay; each pod to a node like its own,
every step with room) so that the scheduler places the gang — on the cluster as the answer
and the plans before it leave it. Gangs are tried highest priority first, then by id; one whose reason
moves cannot change (a quota, a gate, no eligible node, the call's time) is not tried.

Which pods move, as KAI lets them: preemptible ones — priority below 100 (KAI's
`nonPreemptiblePriorityThreshold`) — and never one labelled `gangplan.io/movable: "false"`,
nor the pods the planner always keeps (DaemonSet pods, `kube-system`, system-critical
priority, a GPU share's pods, pods with inter-pod terms, PodDisruptionBudgets at their
limit). The moves and the gang's placement go into the Decision (`Decision.moves`, in
order); `verify` re-checks the moves, then every rule on the cluster as they leave it.
KAI lets only preemptible jobs consolidate; gangplan lets any pending gang ask.

Moves are preferred over evictions (`schedule_moving`): with preemption asked too, the
answer with moves stands unless evicting serves more gangs (placed, or nominated to the
room their victims free) than moving did; then the evicting answer is given, with a note.

    decision = schedule_moving(snapshot, conf, workload=workload, time_limit=10)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from types import MappingProxyType

from solver.config import SchedulerConf
from solver.decision import Decision, GroupOutcome, Move
from solver.defrag import DefragGoal, defragment, moves_delta
from solver.model import KAI_NON_PREEMPTIBLE_PRIORITY
from solver.schedule import LOG, schedule
from solver.snapshot import Delta, Snapshot, Workload
from solver.verify import verify

__all__ = [
    "CONSOLIDATION",
    "MAX_CONSOLIDATION_RUNNING",
    "MOVABLE_LABEL",
    "MOVES_PER_CALL",
    "consolidate",
    "consolidation_wanted",
    "schedule_moving",
]

CONSOLIDATION = "consolidation"
"""The conf action (KAI's name) that turns consolidation on for every call."""

MOVABLE_LABEL = "gangplan.io/movable"
"""`"false"` on a running pod keeps it where it is."""
MOVES_PER_CALL = 100
"""The most running pods one call moves, over all its gangs."""
MAX_CONSOLIDATION_RUNNING = 20_000
"""Past this many running pods no moves are sought: the planner's input is built per gang
in O(running pods) Python, which would not fit a call's time."""
EVICTING = ("preempt", "reclaim")
"""The conf actions that evict."""
NOT_HELPED = frozenset({"quota", "blocked", "predicates", "time"})
"""Certificate kinds moving pods cannot change."""


def room_goal(gang: str, max_pods: int) -> DefragGoal:
    """Room for `gang` by moving at most `max_pods` running pods, only those KAI lets move
    (priority below 100) and never one labelled `gangplan.io/movable: "false"`."""
    return DefragGoal(
        gang=gang,
        max_pods=max_pods,
        protect_priority=KAI_NON_PREEMPTIBLE_PRIORITY,
        protect_labels=MappingProxyType({MOVABLE_LABEL: "false"}),
    )


def consolidation_wanted(conf: SchedulerConf, asked: bool) -> bool:
    """The call asked for moves, or the conf lists the `consolidation` action."""
    return asked or CONSOLIDATION in conf.actions


def schedule_moving(
    snapshot: Snapshot,
    conf: SchedulerConf,
    *,
    workload: Workload | None = None,
    engine: str = "auto",
    time_limit: float = 10.0,
    workers: int = 0,
    seed: int = 0,
    preempt: bool = False,
    stop: threading.Event | None = None,
    schedule_fn: Callable[..., Decision] = schedule,
) -> Decision:
    """`schedule` without evictions, then `consolidate` on its answer; when evictions are
    asked too (`preempt`, or the conf's preempt / reclaim actions), also the evicting
    answer, given only when it serves more gangs. The time limit is shared: the placement a
    third (half without evictions), the moves the rest of their half."""
    started = time.perf_counter()
    workload = workload or Workload.everything(snapshot)
    evicting = preempt or any(a in conf.actions for a in EVICTING)
    share = time_limit / (3 if evicting else 2)
    calm = conf.model_copy(update={"actions": tuple(a for a in conf.actions if a not in EVICTING)})
    first = schedule_fn(snapshot, calm, workload=workload, engine=engine, time_limit=share,
                        workers=workers, seed=seed, stop=stop)  # fmt: skip
    left = time_limit - (time.perf_counter() - started) - (share if evicting else 0.0)
    moved = consolidate(snapshot, conf, first, workload, time_limit=left,
                        workers=workers or 1, seed=seed, stop=stop)  # fmt: skip
    if not evicting or _served(moved, workload) == sum(
        1 for g in workload.gangs if workload.members(g)
    ):
        return moved
    left = max(0.05, time_limit - (time.perf_counter() - started))
    evicted = schedule_fn(snapshot, conf, workload=workload, engine=engine, time_limit=left,
                          workers=workers, seed=seed, preempt=preempt, stop=stop)  # fmt: skip
    if _served(evicted, workload) <= _served(moved, workload):
        return moved
    note = (f"evictions serve {_served(evicted, workload)} gang(s), moves "
            f"{_served(moved, workload)}: the evicting answer is given")  # fmt: skip
    return replace(evicted, notes=(*evicted.notes, note))


def _served(decision: Decision, workload: Workload) -> int:
    """Gangs placed, or nominated whole to the room their victims free."""
    count = 0
    for gid in workload.gangs:
        members = workload.members(gid)
        nominated = bool(members) and all(
            (p := decision.placements.get(m.key)) is not None and p.nominated for m in members
        )
        count += decision.gang_placed(gid) or nominated
    return count


def consolidate(
    snapshot: Snapshot,
    conf: SchedulerConf,
    decision: Decision,
    workload: Workload | None = None,
    *,
    time_limit: float = 5.0,
    workers: int = 1,
    seed: int = 0,
    stop: threading.Event | None = None,
) -> Decision:
    """`decision` (verified, of `workload` on `snapshot`) with the gangs it left out placed
    where moves make room for them, and the moves; unchanged when none helps."""
    started = time.perf_counter()
    workload = workload or Workload.everything(snapshot)
    left_out = _candidates(decision, workload)
    if not left_out:
        return decision
    if int(snapshot.running.alive.sum()) > MAX_CONSOLIDATION_RUNNING:
        note = (f"consolidation not tried: more than {MAX_CONSOLIDATION_RUNNING:,} running "
                "pods (the moves planner reads every one)")  # fmt: skip
        return replace(decision, notes=(*decision.notes, note))
    here = _as_answered(snapshot, decision, workload)
    moves: list[Move] = []
    placed: dict[str, Decision] = {}
    notes: list[str] = []
    for gang in left_out:
        left = time_limit - (time.perf_counter() - started)
        budget = MOVES_PER_CALL - len(moves)
        if left < 0.1 or budget <= 0 or (stop is not None and stop.is_set()):
            notes.append(f"consolidation stopped before gang {gang}: the call's time or its "
                         f"budget of {MOVES_PER_CALL} moves ran out")  # fmt: skip
            break
        goal = room_goal(gang, budget)
        plan = defragment(here, goal, engine="cpsat", time_limit=left, workers=workers,
                          seed=seed, stop=stop, conf=conf)  # fmt: skip
        if not plan.moves or not plan.placement:
            continue
        rows = {int(here.running.find(m.pod)): m.target for m in plan.moves}
        here = here.apply(moves_delta(here, rows))
        here = here.apply(Delta(bindings=tuple(plan.placement.items())))
        moves.extend(plan.moves)
        assert plan.decision is not None  # a plan with moves has the gang's answer
        placed[gang] = plan.decision
        notes.append(f"gang {gang} placed after moving {len(plan.moves)} running pod(s) "
                     "(consolidation)")  # fmt: skip
    if not moves:
        return replace(decision, notes=(*decision.notes, *notes)) if notes else decision
    moved = _with_moves(decision, tuple(moves), placed, notes, time.perf_counter() - started)
    problems = verify(snapshot, conf, moved, workload)
    if problems:  # never in front of a user: the answer without moves, saying why
        LOG.warning("consolidation's answer failed verification: %s; no moves", problems[0])
        note = (f"the moves failed verification ({problems[0]}); none are given "
                "(please report this)")  # fmt: skip
        return replace(decision, notes=(*decision.notes, note),
                       stats={**decision.stats, "verify_fallback": 1})  # fmt: skip
    return moved


def _candidates(decision: Decision, workload: Workload) -> list[str]:
    """The gangs left out that moves may help, highest priority first, then by id."""
    out = []
    for gid, gang in workload.gangs.items():
        if not workload.members(gid) or decision.gang_placed(gid):
            continue
        cert = decision.certificates.get(gid)
        if cert is not None and (cert.kind in NOT_HELPED or cert.constraint == "enqueue"):
            continue  # a queue's refusal (a rule, or jobs admitted ahead): no move helps
        out.append((-(gang.priority or max((p.priority for p in workload.members(gid)),
                                            default=0)), gid))  # fmt: skip
    return [gid for _, gid in sorted(out)]


def _as_answered(snapshot: Snapshot, decision: Decision, workload: Workload) -> Snapshot:
    """The snapshot with the call's pods and gangs in it, those the answer placed bound."""
    gangs = tuple(g for g in workload.gangs.values() if not g.implicit)
    with_job = snapshot.apply(Delta(upsert_gangs=gangs, upsert_pods=workload.pods))
    bound = tuple((k, p.node) for k, p in decision.placements.items() if p.node is not None)
    return with_job.apply(Delta(bindings=bound)) if bound else with_job


def _with_moves(
    decision: Decision,
    moves: tuple[Move, ...],
    placed: dict[str, Decision],
    notes: list[str],
    seconds: float,
) -> Decision:
    """`decision` with each gang's answer on the moved cluster (`placed`) merged in: its
    pods' placements as the scheduler gave them (node, card, devices, annotations) and its
    Kueue TopologyAssignments."""
    placements = dict(decision.placements)
    assignments = list(decision.topology_assignments)
    for gang, answer in placed.items():
        for key, p in answer.placements.items():
            if key in placements and p.node is not None:
                placements[key] = p
        assignments += [a for a in answer.topology_assignments if a.podgroup == gang]
    podgroups = {
        gid: (GroupOutcome(o.enqueued, True, "") if gid in placed else o)
        for gid, o in decision.podgroups.items()
    }
    certificates = {g: c for g, c in decision.certificates.items() if g not in placed}
    return replace(
        decision,
        placements=placements,
        podgroups=podgroups,
        certificates=certificates,
        topology_assignments=tuple(assignments),
        moves=moves,
        status="HEURISTIC",  # the engine's proof was of the cluster without moves
        bound=None,
        notes=(*decision.notes, *notes),
        stats={
            **decision.stats,
            "consolidation_seconds": seconds,
            "consolidated_gangs": len(placed),
            "pods_moved": len(moves),
        },
    )
