"""Defragment's wire messages <-> `solver.defrag` (goal in, plan out, and back for the CLI)."""

from __future__ import annotations

from gangplan.v1 import placement_service_pb2 as spb
from solver.codec._errors import ConvertError
from solver.decision import Move
from solver.defrag import DefragGoal, DefragPlan, GoalError, goal_of

__all__ = ["goal_from_proto", "goal_to_proto", "plan_from_proto", "plan_to_proto"]


def goal_from_proto(goal: spb.DefragmentGoal, path: str = "goal") -> DefragGoal:
    """The goal; ConvertError names the field (`goal.max_pods`, `goal.shape[nvidia.com/gpu]`)."""
    try:
        return goal_of(
            level=goal.level,
            count=goal.count if goal.HasField("count") else None,
            max_pods=goal.max_pods if goal.HasField("max_pods") else None,
            max_gangs=goal.max_gangs if goal.HasField("max_gangs") else None,
            max_cost_per_domain=(
                goal.max_cost_per_domain if goal.HasField("max_cost_per_domain") else None
            ),
            shape=dict(goal.shape),
            protect_priority=goal.protect_priority if goal.HasField("protect_priority") else None,
            protect_namespaces=tuple(goal.protect_namespaces),
            protect_labels=dict(goal.protect_labels),
            topology_keys=tuple(goal.topology_keys),
            gang=goal.gang or None,
        )
    except GoalError as err:
        raise ConvertError([(f"{path}.{err.field}", err.reason)]) from None


def goal_to_proto(goal: DefragGoal) -> spb.DefragmentGoal:
    out = spb.DefragmentGoal(
        level=goal.level,
        max_pods=goal.max_pods,
        shape={r: str(q) for r, q in goal.shape.items()},
        protect_namespaces=sorted(goal.protect_namespaces),
        protect_labels=dict(goal.protect_labels),
        topology_keys=list(goal.topology_keys),
        gang=goal.gang or "",
    )
    for name in ("count", "max_gangs", "max_cost_per_domain", "protect_priority"):
        value = getattr(goal, name)
        if value is not None:
            setattr(out, name, value)
    return out


def plan_to_proto(plan: DefragPlan, generation: int = 0) -> spb.DefragmentResponse:
    out = spb.DefragmentResponse(
        engine=plan.engine,
        status=plan.status,
        freed=list(plan.freed),
        already_free=list(plan.already_free),
        moves=[
            spb.DefragmentMove(pod=m.pod, unit=m.unit, from_node=m.source, to_node=m.target)
            for m in plan.moves
        ],
        domain_cost=dict(plan.domain_cost),
        units_moved=plan.units_moved,
        gangs_moved=plan.gangs_moved,
        gpus_moved=plan.gpus_moved,
        candidates=plan.candidates,
        blocked=dict(plan.blocked),
        notes=list(plan.notes),
        generation=generation,
        placement=dict(plan.placement),
    )
    if plan.bound is not None:
        out.bound = plan.bound
    if plan.gap is not None:
        out.gap = plan.gap
    return out


def plan_from_proto(response: spb.DefragmentResponse, goal: DefragGoal) -> DefragPlan:
    return DefragPlan(
        goal=goal,
        engine=response.engine,
        status=response.status,
        freed=tuple(response.freed),
        already_free=tuple(response.already_free),
        moves=tuple(Move(m.pod, m.unit, m.from_node, m.to_node) for m in response.moves),
        domain_cost=dict(response.domain_cost),
        units_moved=response.units_moved,
        gangs_moved=response.gangs_moved,
        gpus_moved=response.gpus_moved,
        candidates=response.candidates,
        bound=response.bound if response.HasField("bound") else None,
        gap=response.gap if response.HasField("gap") else None,
        blocked=dict(response.blocked),
        notes=tuple(response.notes),
        placement=dict(response.placement),
    )
