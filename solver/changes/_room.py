"""Room made by others: running pods moved (consolidation) or evicted (preemption)."""

from __future__ import annotations

import threading

from solver.changes._base import MAX_MOVES, Change, Runs, Sized, alone
from solver.config import SchedulerConf
from solver.consolidate import room_goal
from solver.decision import Certificate, Decision
from solver.defrag import defragment, moves_delta
from solver.model import GPU_RESOURCE
from solver.schedule import schedule
from solver.snapshot import Delta, Snapshot


def _moves_may_help(snapshot: Snapshot, cert: Certificate | None) -> bool:
    """Moving pods never helps a gang held by its queue or its own filters, nor one short
    of a resource the whole cluster lacks (moves add no room, they only gather it)."""
    if cert is None:
        return True
    if cert.kind in ("quota", "predicates", "blocked"):
        return False
    if cert.kind == "capacity" and cert.unit:
        axis = (cert.unit,)
        free = snapshot.nodes.capacity(axis)[:, 0] - snapshot.used(axis)[:, 0]
        return int(free.clip(min=0).sum()) >= cert.needed
    return True


def _moves(
    snapshot: Snapshot,
    gang: str,
    conf: SchedulerConf,
    seconds: float,
    stop: threading.Event | None,
) -> Sized | None:
    """Room by moving running pods (consolidation: only the pods `--consolidate` may move):
    CP-SAT's fewest moves within `seconds`, then checked like every change (the gang
    scheduled on the cluster with the moves)."""
    plan = defragment(
        snapshot, room_goal(gang, MAX_MOVES), engine="cpsat",
        time_limit=seconds, workers=1, seed=0, stop=stop, conf=conf,
    )  # fmt: skip
    if not plan.moves or plan.status != "OPTIMAL":  # smallest only when proven fewest
        return None
    rows = {int(snapshot.running.find(m.pod)): m.target for m in plan.moves}
    sources = len({m.source for m in plan.moves})
    text = f"move {len(plan.moves)} running pod(s) off {sources} node(s) (gangplan defrag --gang)"
    return Change("moves", text, len(plan.moves), target=gang), moves_delta(snapshot, rows)


MAX_VICTIMS = 32
"""The most victims a `preemption` change names (each is checked to be needed)."""


def _evictions(
    snapshot: Snapshot, gang: str, conf: SchedulerConf, seconds: float, runs: Runs
) -> Sized | None:
    """The preemption planner's victims for the gang alone (`schedule(preempt=True)`), when
    each of them is needed: with it spared and the others gone, the gang does not run."""
    d = schedule(snapshot, conf, workload=alone(snapshot, gang), engine="auto",
                 time_limit=seconds / 2, workers=1, preempt=True)  # fmt: skip
    victims = tuple(sorted(v.pod for v in d.victims))
    if not victims or len(victims) > MAX_VICTIMS:
        return None
    for spared in victims:  # irreducible: every victim is needed
        if runs(Delta(remove_pods=tuple(v for v in victims if v != spared))):
            return None
    running = snapshot.running
    jobs = sorted({running.gang_name(g) if (g := int(running.gang[running.find(v)])) >= 0 else v
                   for v in victims})  # fmt: skip
    nodes = sorted({v.node for v in d.victims})
    named = ", ".join(jobs[:3]) + (f" and {len(jobs) - 3} more" if len(jobs) > 3 else "")
    text = (f"evict {len(victims)} pod(s) of {named} on {', '.join(nodes[:3])}"
            f"{' …' if len(nodes) > 3 else ''} ({_cost(snapshot, victims, d)}; gangplan "
            "schedule --preempt)")  # fmt: skip
    return Change("preemption", text, len(victims), target=gang), Delta(remove_pods=victims)


def _cost(snapshot: Snapshot, victims: tuple[str, ...], d: Decision) -> str:
    """What the victims are and lose: their highest priority, the GPUs they free, the
    GPU-hours of work since they started (the preemption planner's own count)."""
    running = snapshot.running
    rows = running.find_many(victims)
    said = [f"priority ≤ {int(running.priority[rows].max())}"]
    if GPU_RESOURCE in running.resources:
        gpus = int(running.requests((GPU_RESOURCE,))[rows, 0].sum())
        said += [f"{gpus} {GPU_RESOURCE}"] if gpus else []
    lost = d.tiers.get("gpu_hours_lost", 0)
    return ", ".join([*said, *([f"{lost} GPU-hour(s) of work lost"] if lost else [])])


_MOVES_SECONDS = 1.0
