"""A preemption plan and what is shared by the ways of making one."""

from __future__ import annotations

from dataclasses import dataclass, field

from solver.features.preemption.victims import PreemptionInput
from solver.features.topology import GatherBlock, GodelBlock
from solver.problem import Problem

__all__ = [
    "PreemptionPlan",
    "PreemptionResult",
    "plan_cost",
    "plan_lost",
    "required_pods",
    "whole_gangs",
]


@dataclass
class PreemptionPlan:
    unit: int
    victims: list[int]  # victim indices into PreemptionInput
    nominated: dict[int, list[int]]  # type -> node per nominated pod (in type_pods order)
    cost: int  # Σ rank of the distinct evicted jobs
    engine: str  # greedy | cpsat (Koordinator preemption) or reclaim (Volcano)
    queue: str = ""  # the reclaiming queue (reclaim only)


@dataclass
class PreemptionResult:
    plans: list[PreemptionPlan] = field(default_factory=list)
    reasons: dict[int, str] = field(default_factory=dict)  # gang -> why preemption did not help
    seconds: float = 0.0


def required_pods(problem: Problem, gangs: list[int]) -> dict[int, int]:
    """Pods per type that must be placed for the group: each gang's need (all if gathered),
    its task roles' minimums and each KAI leaf sub-group's minMember first among them."""
    out: dict[int, int] = {}
    gather = problem.block(GatherBlock)
    godel = problem.block(GodelBlock)
    for g in gangs:
        gathered = gather is not None and gather.is_gather(int(problem.gang_unit[g]))
        need = int(problem.gang_pending[g]) if gathered else max(int(problem.gang_need[g]), 1)
        plan = godel.godel(int(problem.gang_unit[g])) if godel is not None else None
        own = problem.minimums(g)  # its task roles' minimums, and each KAI leaf's minMember
        for m in (*own, *(plan.sub_minimums if plan is not None else ())):
            left = m.need
            for t in m.types:
                take = min(left, len(problem.type_pods[t]) - out.get(t, 0))
                if take > 0:
                    out[t] = out.get(t, 0) + take
                    left -= take
                    need -= take
        for t in problem.gang_types(g):
            take = min(need, len(problem.type_pods[t]) - out.get(t, 0))
            if take > 0:
                out[t] = out.get(t, 0) + take
                need -= take
    return out


def plan_cost(pre: PreemptionInput, victims: list[int]) -> int:
    return int(sum(pre.job_rank[j] for j in {int(pre.victim_job[v]) for v in victims}))


def plan_lost(pre: PreemptionInput, victims: list[int]) -> int:
    """GPU-hours of work the victims lose (`victims.lost_work`)."""
    lost = pre.victim_lost
    return int(sum(int(lost[v]) for v in victims)) if lost is not None else 0


def whole_gangs(pre: PreemptionInput, victims: set[int]) -> set[int]:
    """Add the rest of every victim gang left below its minMember."""
    out = set(victims)
    for j in {int(pre.victim_job[v]) for v in victims}:
        if pre.job_min[j] <= 0:
            continue
        evicted = sum(1 for v in pre.job_members[j].tolist() if v in out)
        if pre.job_running[j] - evicted < pre.job_min[j]:
            out.update(pre.job_members[j].tolist())
    return out
