"""Volcano's `overcommit` plugin: a job enters the cluster only while the jobs already
admitted leave room for it in the cluster overcommitted by a factor (`overcommit.go`).

    idle     = allocatable × overcommit-factor − what the running pods request
    inqueue  = Σ minResources of the jobs already admitted (PodGroup phase Inqueue), plus,
               of a Running job whose running pods reach minMember, what of its
               minResources they do not hold yet
    a job is enqueued when  inqueue + its minResources ≤ idle  on each resource it asks for

`overcommit-factor` (argument) defaults to 1.2; below 1.0 it is 1.2 (upstream warns).
A job without minResources is permitted. The rule is asked in the enqueue walk of the
quota plugin (`capacity`, `capacity-card`, `proportion`) after the queue's own, in queue
order; with no quota plugin walking, this feature walks the jobs itself, in job order.
Its refusal reads `not enqueued: resource in cluster is overused: <resource> ...`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from solver.config import Plugin
from solver.features._base import CompileContext, EnqueueGate, Feature
from solver.features.queues.admission import plan_enqueue
from solver.model import Gang, Pod
from solver.quantity import PODS, format_quantity
from solver.snapshot import Snapshot

__all__ = ["DEFAULT_FACTOR", "FEATURE", "OvercommitGate"]

DEFAULT_FACTOR = 1.2


def _factor(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return DEFAULT_FACTOR
    try:
        factor = float(value)
    except ValueError:
        return DEFAULT_FACTOR
    return factor if factor >= 1.0 else DEFAULT_FACTOR


def _cluster(snapshot: Snapshot) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    """(allocatable, requested by running pods, inqueue) of the snapshot, once a generation."""
    total = dict(snapshot.nodes.total)
    names = snapshot.running.resources
    sums = snapshot.usage.used.sum(axis=0).tolist()
    used = {r: int(v) for r, v in zip(names, sums, strict=False) if r != PODS and v}
    inqueue: dict[str, int] = {}
    for gid, gang in snapshot.gangs.items():
        minimum = {r: v for r, v in gang.min_resources.items() if r != PODS and v}
        if not minimum:
            continue
        if gang.phase == "Inqueue":
            owed = minimum
        elif gang.phase == "Running" and snapshot.gang_running(gid) >= gang.min_member:
            g = snapshot.running.gang_id(gid)
            held = snapshot.usage.gang_requests[g].tolist() if g >= 0 else []
            have = dict(zip(names, held, strict=False))
            owed = {r: max(0, v - int(have.get(r, 0))) for r, v in minimum.items()}
        else:
            continue
        for r, v in owed.items():
            inqueue[r] = inqueue.get(r, 0) + v
    return total, used, inqueue


@dataclass
class OvercommitGate:
    factor: float
    idle: dict[str, float]
    inqueue: dict[str, int] = field(default_factory=dict)
    walked: bool = False

    def refuse(self, gang: Gang, pods: Sequence[Pod]) -> str | None:
        for r, v in sorted(gang.min_resources.items()):
            if r == PODS or v <= 0:
                continue
            ahead, idle = self.inqueue.get(r, 0), self.idle.get(r, 0.0)
            if ahead + v > idle:
                return (
                    f"resource in cluster is overused: {r} {format_quantity(r, v)} requested + "
                    f"{format_quantity(r, ahead)} admitted > "
                    f"{format_quantity(r, max(int(idle), 0))} idle "
                    f"(allocatable × {self.factor:g} − running requests)"
                )
        return None

    def admit(self, gang: Gang, pods: Sequence[Pod]) -> None:
        for r, v in gang.min_resources.items():
            if r != PODS and v > 0:
                self.inqueue[r] = self.inqueue.get(r, 0) + v

    def fork(self) -> OvercommitGate:
        return replace(self, inqueue=dict(self.inqueue))


def _gate(ctx: CompileContext) -> EnqueueGate:
    factor = _factor(ctx.conf.arguments(Plugin.OVERCOMMIT).get("overcommit-factor"))
    total, used, inqueue = ctx.snapshot.memo(
        ("overcommit", "cluster"), lambda: _cluster(ctx.snapshot)
    )
    idle = {r: v * factor - used.get(r, 0) for r, v in total.items()}
    return OvercommitGate(factor, idle, dict(inqueue))


def _compile(ctx: CompileContext) -> None:
    """Walk the jobs alone when no quota plugin's enqueue walk asked the gate."""
    gates = [g for g in ctx.enqueue_gates if isinstance(g, OvercommitGate) and not g.walked]
    if not gates:
        return
    plan = ctx.gangs
    order = ctx.unit_order or sorted(range(len(plan.unit_ids)), key=ctx.unit_key)
    unit_gangs = plan.unit_gangs()
    jobs = [
        (plan.gang_ids[g], ctx.workload.gangs[plan.gang_ids[g]],
         ctx.workload.members(plan.gang_ids[g]))
        for u in order
        for g in unit_gangs[u]
    ]  # fmt: skip
    index = {gid: g for g, gid in enumerate(plan.gang_ids)}
    walked = plan_enqueue(ctx.snapshot, ctx.conf, None, None, jobs, gates)
    for gid, why in walked.rejected.items():
        if index[gid] not in ctx.not_enqueued:
            ctx.not_enqueued[index[gid]] = why
            if gid in walked.behind:
                ctx.enqueued_ahead[index[gid]] = walked.behind[gid]


FEATURE = Feature(name="overcommit", plugins=(Plugin.OVERCOMMIT,), compile=_compile, enqueue=_gate)
