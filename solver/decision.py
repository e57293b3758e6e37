"""The Decision: what gangplan answers, engine-neutral and keyed by Kubernetes names.

`decide()` turns an engine's per-type node indices back into pod and PodGroup names, with
the counted reasons of every pod left pending. `Decision.to_dict()` is the stable JSON
shape of `gangplan schedule -o json` (fields are added, never renamed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solver.engines import EngineResult
from solver.model import ClusterModel
from solver.objective import evaluate
from solver.problem import Problem

__all__ = ["Decision", "GroupOutcome", "Placement", "Preemption", "Victim", "decide"]


@dataclass(frozen=True)
class Placement:
    node: str | None
    card: str | None = None  # chosen GPU card type (capacity-card)
    nominated: str | None = None  # status.nominatedNodeName after preemption
    reason: str = ""  # why not, when node is None


@dataclass(frozen=True)
class GroupOutcome:
    enqueued: bool
    placed: bool
    reason: str = ""


@dataclass(frozen=True)
class Victim:
    pod: str
    node: str
    message: str  # the DisruptionTarget condition message


@dataclass(frozen=True)
class Decision:
    placements: dict[str, Placement]
    podgroups: dict[str, GroupOutcome]
    engine: str
    status: str
    objective: int
    tiers: dict[str, int]
    seconds: float
    victims: tuple[Victim, ...] = ()
    bound: float | None = None
    notes: tuple[str, ...] = field(default=())
    stats: dict[str, float | int] = field(default_factory=dict)

    @property
    def gap(self) -> float | None:
        """(bound - objective) / max(1, |bound|); 0 when proven optimal, None without a bound."""
        if self.bound is None:
            return None
        return max(0.0, (self.bound - self.objective) / max(1.0, abs(self.bound)))

    @property
    def placed(self) -> dict[str, str]:
        """pod key -> node, for placed pods only."""
        return {k: p.node for k, p in self.placements.items() if p.node is not None}

    def to_dict(self) -> dict[str, Any]:
        return {
            "placements": {
                k: {"node": p.node, "card": p.card, "nominated": p.nominated, "reason": p.reason}
                for k, p in self.placements.items()
            },
            "podgroups": {
                k: {"enqueued": g.enqueued, "placed": g.placed, "reason": g.reason}
                for k, g in self.podgroups.items()
            },
            "victims": [{"pod": v.pod, "node": v.node, "message": v.message} for v in self.victims],
            "engine": self.engine,
            "status": self.status,
            "objective": self.objective,
            "tiers": dict(self.tiers),
            "bound": self.bound,
            "gap": self.gap,
            "seconds": round(self.seconds, 6),
            "stats": {k: round(v, 6) if isinstance(v, float) else v for k, v in self.stats.items()},
            "notes": list(self.notes),
            "patches": self.patches(),
        }

    def patches(self) -> list[dict[str, Any]]:
        """The Kubernetes status patches a front end applies: nominated members and victims."""
        out: list[dict[str, Any]] = [
            {"pod": key, "status": {"nominatedNodeName": p.nominated}}
            for key, p in self.placements.items()
            if p.nominated
        ]
        out += [
            {
                "pod": v.pod,
                "delete": True,
                "status": {
                    "conditions": [
                        {
                            "type": "DisruptionTarget",
                            "status": "True",
                            "reason": "PreemptionByScheduler",
                            "message": v.message,
                        }
                    ]
                },
            }
            for v in self.victims
        ]
        return out


@dataclass(frozen=True)
class Preemption:
    """What the preemption step adds: victims and the nominated node of each member pod."""

    victims: tuple[Victim, ...]
    nominated: dict[str, str]  # pod key -> node
    reasons: dict[int, str]  # gang index -> why preemption did not help
    cost: int
    evicted: int


def decide(
    problem: Problem,
    model: ClusterModel,
    result: EngineResult,
    seconds: float,
    preemption: Preemption | None = None,
) -> Decision:
    placements: dict[str, Placement] = {}
    if preemption is not None:
        for g, why in preemption.reasons.items():
            result.gang_reason[g] = f"{result.gang_reason.get(g, 'not placed')}; {why}"
    placed_per_gang = np.zeros(len(problem.gang_ids), dtype=np.int64)
    for t, pods in enumerate(problem.type_pods):
        g = int(problem.type_gang[t])
        for pod, n in zip(pods, result.pod_node[t].tolist(), strict=True):
            if n >= 0:
                card = None
                if problem.type_card_dims and problem.type_card_dims[t]:
                    card = problem.quota_dims[int(problem.type_node_card[t, n])].removeprefix(
                        "card:"
                    )
                placements[pod] = Placement(node=problem.node_names[n], card=card)
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
    for gid, gang in model.gangs.items():
        if gang.implicit:
            continue
        g = g_index[gid]
        pending = int(problem.gang_pending[g])
        rejected = problem.gang_enqueue_reason[g] if problem.gang_enqueue_reason else None
        if rejected is not None:
            podgroups[gid] = GroupOutcome(
                enqueued=False, placed=False, reason=f"not enqueued: {rejected}"
            )
            continue
        if pending == 0:
            bound = sum(1 for k in gang.members if model.pod_by_key[k].bound)
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

    tiers = evaluate(problem, result.pod_node)
    if preemption is not None and preemption.victims:
        tiers["preemption_cost"] = preemption.cost
        tiers["evicted_pods"] = preemption.evicted
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
    )
