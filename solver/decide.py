"""An engine's answer as a Decision: names, counted reasons, objective tiers, preemption."""

from __future__ import annotations

from typing import Any

import numpy as np

from solver.decision import Decision, GroupOutcome, Placement, Preemption
from solver.engines import EngineResult
from solver.features import FEATURES
from solver.problem import Problem, evaluate, not_enqueued, tier_specs
from solver.snapshot import Snapshot, Workload
from solver.why import Certified

__all__ = ["decide"]

PLACEMENT_STEPS = tuple(f.decide.placement for f in FEATURES if f.decide.placement)
"""Each feature's fields of a placed pod's Placement (its card, its devices, ...)."""
DECISION_STEPS = tuple(f.decide.decision for f in FEATURES if f.decide.decision)
"""Each feature's fields of the Decision (Kueue's topology assignments, ...)."""


def decide(
    problem: Problem,
    snapshot: Snapshot,
    workload: Workload,
    result: EngineResult,
    seconds: float,
    preemption: Preemption | None = None,
    certified: dict[int, Certified] | None = None,
) -> Decision:
    """Pod and PodGroup names for an engine's per-type node indices, with the reasons of
    every pod left pending (a gang's certificate first, `solver.why`); every named gang of
    the workload gets an outcome."""
    placements: dict[str, Placement] = {}
    certified = certified or {}
    for g, found in certified.items():
        result.gang_reason[g] = found.reason
    if preemption is not None:
        for g, why in preemption.reasons.items():
            result.gang_reason[g] = f"{result.gang_reason.get(g, 'not placed')}; {why}"
    placed_per_gang = np.zeros(len(problem.gang_ids), dtype=np.int64)
    for t, pods in enumerate(problem.type_pods):
        g = int(problem.type_gang[t])
        on_devices = result.devices[t] if result.devices is not None else None
        for i, (pod, n) in enumerate(zip(pods, result.pod_node[t].tolist(), strict=True)):
            if n >= 0:
                assigned = on_devices[i] if on_devices is not None else ()
                fields = {}
                for hook in PLACEMENT_STEPS:
                    fields.update(hook(problem, t, n, assigned))
                placements[pod] = Placement(node=problem.node_names[n], **fields)
                placed_per_gang[g] += 1
    for t, pods in enumerate(problem.type_pods):
        g = int(problem.type_gang[t])
        for pod in pods:
            if pod not in placements:
                nominated = preemption.nominated.get(pod) if preemption else None
                if nominated:
                    reason = f"nominated to {nominated} after preemption: waiting for the victims to terminate"
                else:
                    reason = result.gang_reason.get(g) or "not placed"
                placements[pod] = Placement(node=None, nominated=nominated, reason=reason)

    g_index = {gid: i for i, gid in enumerate(problem.gang_ids)}
    podgroups: dict[str, GroupOutcome] = {}
    for gid, gang in workload.gangs.items():
        if gang.implicit:
            continue
        g = g_index[gid]
        pending = int(problem.gang_pending[g])
        rejected = problem.gang_enqueue_reason[g] if problem.gang_enqueue_reason else None
        if rejected is not None:
            podgroups[gid] = GroupOutcome(
                enqueued=False, placed=False, reason=not_enqueued(rejected)
            )
            continue
        if pending == 0:
            bound = snapshot.gang_running(gid)
            ok = bound >= gang.min_member and bound > 0
            reason = "" if ok else result.gang_reason.get(g, "no pending member pods")
            podgroups[gid] = GroupOutcome(enqueued=True, placed=ok, reason=reason)
            continue
        members_nominated = preemption is not None and any(
            k in preemption.nominated for k in gang.members
        )
        if members_nominated:
            podgroups[gid] = GroupOutcome(
                enqueued=True,
                placed=False,
                reason="nominated after preemption: its pods wait for the victims to terminate",
            )
            continue
        placed = int(placed_per_gang[g]) > 0 and placed_per_gang[g] >= problem.gang_need[g]
        reason = "" if placed and placed_per_gang[g] == pending else result.gang_reason.get(g, "")
        if placed and reason:
            reason = f"{pending - int(placed_per_gang[g])} optional member(s) pending: {reason}"
        podgroups[gid] = GroupOutcome(enqueued=True, placed=bool(placed), reason=reason)

    waiting = set(preemption.nominated) if preemption is not None else set()
    certificates = {
        problem.gang_ids[g]: found.certificate
        for g, found in certified.items()
        if not any(pod in waiting for t in problem.gang_types(g) for pod in problem.type_pods[t])
    }
    extra: dict[str, Any] = {}
    for step in DECISION_STEPS:
        extra.update(step(problem, result.pod_node))
    tiers = evaluate(problem, result.pod_node)
    minimized = tuple(s.name for s in tier_specs(problem) if not s.maximize)
    if preemption is not None and preemption.victims:
        tiers["preemption_cost"] = preemption.cost
        if preemption.lost:
            tiers["gpu_hours_lost"] = preemption.lost
            minimized += ("gpu_hours_lost",)
        tiers["evicted_pods"] = preemption.evicted
        minimized += ("preemption_cost", "evicted_pods")
    return Decision(
        placements=dict(sorted(placements.items())),
        podgroups=podgroups,
        engine=result.engine,
        status=result.status,
        objective=tiers.pop("objective"),
        tiers=tiers,
        seconds=seconds,
        bound=result.bound,
        notes=problem.notes,
        stats=dict(result.stats),
        victims=preemption.victims if preemption is not None else (),
        minimized=minimized,
        certificates=dict(sorted(certificates.items())),
        **extra,
    )
