"""Room for one pending gang: the fewest running pods to move so that it is placed
(KAI-Scheduler's consolidation, planned offline).

The gang's Problem is compiled as any scheduling call's (`compile_problem` with the gang
alone), so its pods' filters (`eligible`), requests, minMember (`gang_need`) and hard domain
rules (`domain_rules`: one rack, one HyperNode, a Kueue required level, ...) are the
scheduler's own. In the defragmentation model the gang's pods are arrivals with no source:

    # x[t, n] ∈ [0, pods_t] on eligible nodes;  Σ_{t, n} x[t, n] ≥ need (its minMember)
    # per domain rule k: y[k, d], Σ_d y[k, d] = 1, x[t, n] ≤ pods_t · y[k, dom_k(n)]
    # the room constraint of every node counts them as arrivals

The plan is then proven by the scheduler itself: the moves are applied to the snapshot and
the gang scheduled on it (`schedule`, verified as every answer is); its placement is the
one reported. A gang the scheduler still cannot place after the moves gets no plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from ortools.sat.python import cp_model

from solver.arrays import IntArray
from solver.compile import compile_problem
from solver.config import SchedulerConf
from solver.defrag._goal import GoalError
from solver.features.topology.rules import domain_rules
from solver.problem import Problem
from solver.snapshot import Delta, Snapshot, Workload

__all__ = ["GangArrivals", "gang_problem", "gang_workload", "moved_snapshot", "moves_delta"]


def gang_problem(snapshot: Snapshot, conf: SchedulerConf, gang: str) -> tuple[Problem, Workload]:
    """The gang's Problem and Workload (the gang alone, as a scheduling call asks)."""
    workload = gang_workload(snapshot, gang)
    return compile_problem(snapshot, conf, workload), workload


def gang_workload(snapshot: Snapshot, gang: str) -> Workload:
    """The gang alone, as a scheduling call asks (a pod of its own: its key is the id)."""
    alone = snapshot.pending.get(gang)
    if alone is not None and alone.gang == gang:
        return Workload.of(snapshot, pods=[alone])
    if snapshot.pending_of(gang):
        return Workload.of(snapshot, (), (gang,))
    raise GoalError("gang", f"no pending pod of gang {gang[:64]!r} in the cluster")


@dataclass
class GangArrivals:
    """The gang's arrival variables in a defragmentation model."""

    problem: Problem
    gang: str
    axis: tuple[str, ...]  # the defragmentation model's resource axis
    x: dict[tuple[int, int], cp_model.IntVar] = field(default_factory=dict)  # (t, n) -> pods
    notes: list[str] = field(default_factory=list)

    def demand(self, t: int) -> IntArray:
        """Type t's requests on the model's axis (a resource the model lacks: 0 there,
        and the model's own resources the Problem lacks: 0)."""
        own = dict(zip(self.problem.resources, self.problem.type_demand[t].tolist(), strict=True))
        out = np.array([own.get(r, 0) for r in self.axis], dtype=np.int64)
        if "pods" in self.axis:
            out[self.axis.index("pods")] = 1
        return out

    def build(self, model: cp_model.CpModel, room: IntArray, target: np.ndarray) -> None:
        """x[t, n], minMember, the domain rules (no arrival constraint on room: the caller
        adds `self.arrivals(n)` to each node's)."""
        p = self.problem
        g = self.index()
        types = [t for t in range(len(p.type_pods)) if p.type_gang[t] == g]
        for t in types:
            demand = self.demand(t)
            asked = demand > 0
            slots = (
                (room[:, asked] // demand[asked]).min(axis=1).clip(min=0)
                if asked.any()
                else (np.full(len(room), len(p.type_pods[t])))
            )
            ok = np.asarray(p.eligible[t], dtype=bool) & target & (slots > 0)
            for n in np.flatnonzero(ok).tolist():
                ub = min(int(slots[n]), len(p.type_pods[t]))
                self.x[(t, n)] = model.new_int_var(0, ub, f"x{t}_{n}")
        for t in types:
            model.add(sum(v for (s, _), v in self.x.items() if s == t) <= len(p.type_pods[t]))
        need = int(p.gang_need[g]) or sum(len(p.type_pods[t]) for t in types)
        model.add(sum(self.x.values()) >= need)
        rules = domain_rules(p, int(p.gang_unit[g]))
        if isinstance(rules, str):
            self.notes.append(f"the gang's topology is not modelled ({rules}): checked after")
            return
        for k, rule in enumerate(rules):
            names = np.unique(rule.domain[rule.domain >= 0]).tolist()
            y = {d: model.new_bool_var(f"y{k}_{d}") for d in names}
            model.add_exactly_one(y.values())
            for (t, n), var in self.x.items():
                if t in rule.types:
                    d = int(rule.domain[n])
                    if d < 0:
                        model.add(var == 0)
                    else:
                        model.add(var <= len(p.type_pods[t]) * y[d])

    def eligible(self) -> np.ndarray:
        """[N] nodes some pod of the gang may land on (where moving pods off helps)."""
        p = self.problem
        g = self.index()
        rows = [np.asarray(p.eligible[t], dtype=bool) for t in range(len(p.type_pods))
                if p.type_gang[t] == g]  # fmt: skip
        return np.any(rows, axis=0) if rows else np.zeros(len(p.node_names), dtype=bool)

    def index(self) -> int:
        """The gang's index in the Problem (its only gang when it is a pod of its own)."""
        ids = self.problem.gang_ids
        return ids.index(self.gang) if self.gang in ids else 0

    def nodes(self) -> set[int]:
        return {n for _, n in self.x}

    def arrivals(self, n: int) -> list[tuple[cp_model.IntVar, IntArray]]:
        return [(var, self.demand(t)) for (t, m), var in self.x.items() if m == n]


def moves_delta(snapshot: Snapshot, moves: Mapping[int, str]) -> Delta:
    """The delta that puts the running rows `moves` (row -> node name) on their new nodes."""
    running = snapshot.running
    return Delta(upsert_pods=tuple(running.pod(row)._replace(node=n) for row, n in moves.items()))


def moved_snapshot(snapshot: Snapshot, moves: Mapping[int, str]) -> Snapshot:
    """The snapshot with the running rows `moves` (row -> node name) on their new nodes."""
    return snapshot.apply(moves_delta(snapshot, moves)) if moves else snapshot
