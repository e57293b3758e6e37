"""A defragmentation plan: which pods move where, in which order, and what it frees.

`Choice` is what an engine decides (domains freed, each moved pod's node); `DefragPlan` is
the answer: the moves in an order that keeps every step valid, per freed domain what it
cost, the bound and the gap.

A step evicts one pod and creates its replacement on the target: the target must have
room once the pods moved before it are gone. The greedy's moves land on room free before
the plan starts, so any order is valid; CP-SAT's may land on room another move frees (a
pod moved off a busy node to make a hole), and `order_moves` finds an order in which every
step has room — the moves that land on free room first, then those their departures
opened, and so on. A choice with no such order (moves waiting on each other in a cycle) is
not a plan: the engine's answer is dropped for the greedy's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from solver.decision import Decision, Move
from solver.defrag._goal import DefragGoal
from solver.defrag._input import DefragInput

__all__ = ["Choice", "DefragPlan", "Move", "gap_of", "order_moves", "plan_of"]

GPU = "nvidia.com/gpu"
SPREAD_NOTE = (
    "running pods' topologySpreadConstraints are not kept by the snapshot: the moves may "
    "change a spread's skew (selectors, affinity and tolerations hold)"
)


@dataclass(frozen=True)
class Choice:
    freed: tuple[int, ...]  # domain indices
    moves: tuple[tuple[int, int], ...]  # (pod index, target node), in a valid order


@dataclass(frozen=True)
class DefragPlan:
    goal: DefragGoal
    engine: str  # greedy | cpsat
    status: str  # OPTIMAL (proven) | FEASIBLE (CP-SAT, not proven) | HEURISTIC (greedy)
    freed: tuple[str, ...]
    already_free: tuple[str, ...]
    moves: tuple[Move, ...]
    domain_cost: Mapping[str, int]  # freed domain -> pods moved off it
    units_moved: int
    gangs_moved: int
    gpus_moved: int  # GPUs of the moved pods (the work interrupted)
    candidates: int  # domains that could be freed on their own
    bound: float | None  # maximise: domains freeable at most; count: pods to move at least
    gap: float | None  # (bound − found) / bound, or (found − bound) / found
    blocked: Mapping[str, int]
    solve_seconds: float = 0.0
    notes: tuple[str, ...] = field(default=())
    placement: Mapping[str, str] = field(default_factory=dict)  # room for a gang: pod -> node
    decision: Decision | None = None  # ... and the scheduler's answer for the gang on the
    #   cluster the moves leave (its devices, annotations, Kueue assignment)

    @property
    def pods_moved(self) -> int:
        return len(self.moves)

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "status": self.status,
            "level": self.goal.level,
            "freed": list(self.freed),
            "already_free": list(self.already_free),
            "pods_moved": self.pods_moved,
            "units_moved": self.units_moved,
            "gangs_moved": self.gangs_moved,
            "gpus_moved": self.gpus_moved,
            "domain_cost": dict(self.domain_cost),
            "candidates": self.candidates,
            "bound": self.bound,
            "gap": self.gap,
            "blocked": dict(self.blocked),
            "moves": [m.to_dict() for m in self.moves],
            "gang": self.goal.gang,
            "placement": dict(self.placement),
            "notes": list(self.notes),
        }

    def manifests(self) -> list[dict[str, Any]]:
        """What a front end applies, in order: per moved pod an Eviction, and the
        `nominatedNodeName` its replacement should get (a pod status patch)."""
        out: list[dict[str, Any]] = []
        for step, m in enumerate(self.moves, start=1):
            ns, name = m.pod.split("/", 1)
            meta = {
                "name": name,
                "namespace": ns,
                "annotations": {"gangplan.io/defrag-step": str(step)},
            }
            out.append({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": meta})
            out.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": name, "namespace": ns},
                    "status": {"nominatedNodeName": m.target},
                }
            )
        return out


def plan_of(
    inp: DefragInput,
    choice: Choice,
    *,
    engine: str,
    status: str,
    bound: float | None,
    seconds: float,
    notes: tuple[str, ...] = (),
) -> DefragPlan:
    running, names = inp.snapshot.running, inp.snapshot.nodes.names
    freed = sorted(choice.freed, key=lambda d: inp.domains[d])
    moves, units = [], set()
    gpu = inp.axis.index(GPU) if GPU in inp.axis else -1
    gpus = 0
    for p, target in choice.moves:
        unit = inp.units[int(inp.pod_unit[p])]
        units.add(int(inp.pod_unit[p]))
        source = names[int(inp.pod_node[p])]
        moves.append(Move(running.key(int(inp.pod_rows[p])), unit.name, source, names[target]))
        gpus += int(inp.pod_demand[p, gpu]) if gpu >= 0 else 0
    cost = {inp.domains[d]: int(inp.cost[d]) for d in freed}
    return DefragPlan(
        goal=inp.goal,
        engine=engine,
        status=status,
        freed=tuple(inp.domains[d] for d in freed),
        already_free=tuple(name for d, name in enumerate(inp.domains) if inp.empty[d]),
        moves=tuple(moves),
        domain_cost=cost,
        units_moved=len(units),
        gangs_moved=sum(inp.units[u].gang for u in units),
        gpus_moved=gpus,
        candidates=int(inp.candidate.sum()),
        bound=bound,
        gap=gap_of(inp.goal, len(freed), len(moves), bound),
        blocked=inp.blocked,
        solve_seconds=round(seconds, 4),
        notes=(*notes, SPREAD_NOTE) if moves else notes,
    )


def gap_of(goal: DefragGoal, freed: int, pods: int, bound: float | None) -> float | None:
    """How far a plan is from the bound: maximise, (bound − freed) / bound; count goal and
    room for a gang, (pods − bound) / pods; None without a bound."""
    if bound is None:
        return None
    if goal.count is None and goal.gang is None:
        gap = (bound - freed) / bound if bound > 0 else 0.0
    else:
        gap = (pods - bound) / pods if pods > 0 else 0.0
    return max(0.0, round(gap, 6))


def order_moves(inp: DefragInput, moves: list[tuple[int, int]]) -> list[tuple[int, int]] | None:
    """`moves` in an order where every step (evict the pod, create it on its target) has
    room; None when some wait on each other in a cycle. Rounds: each takes, in the given
    order, every move whose target has room now, and applies it."""
    free = inp.free.copy()
    left, out = list(moves), []
    while left:
        waiting = []
        for p, target in left:
            need = inp.pod_demand[p]
            if (free[target] >= need).all():
                free[int(inp.pod_node[p])] += need
                free[target] -= need
                out.append((p, target))
            else:
                waiting.append((p, target))
        if len(waiting) == len(left):
            return None
        left = waiting
    return out
