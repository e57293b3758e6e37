"""The variable container between the constraint modules and raw CP-SAT variables."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from ortools.sat.python import cp_model

from solver.problem import IntArray, Problem
from solver.sat._classes import NodeClass

__all__ = ["PlacementVars"]


@dataclass
class PlacementVars:
    """x[t, c, k] = pods of type t on class c (k: virtual node, 0 for other modes).

    Also: `n[c, p]` nodes of a `patterns` class using pattern p; `gang_on[g]` (gang
    satisfied; a constant for gangs without pending pods), `unit_on[u]` (some pod of the
    unit placed), `opened[c]` (empty nodes of class c that receive pods), `used[c, k]`.
    """

    problem: Problem
    classes: list[NodeClass]
    model: cp_model.CpModel
    x: dict[tuple[int, int, int], cp_model.IntVar] = field(default_factory=dict)
    n: dict[tuple[int, int], cp_model.IntVar] = field(default_factory=dict)
    gang_on: list[cp_model.IntVar | int] = field(default_factory=list)
    unit_on: list[cp_model.IntVar | int] = field(default_factory=list)
    opened: dict[int, cp_model.LinearExprT] = field(default_factory=dict)
    used: dict[tuple[int, int], cp_model.IntVar] = field(default_factory=dict)
    by_type: dict[int, list[tuple[int, int, int]]] = field(default_factory=dict)
    extra: dict[str, object] = field(default_factory=dict)  # a module's own variables, for
    #   reading its part of the answer (GPU device patterns)

    @classmethod
    def create(
        cls,
        problem: Problem,
        classes: list[NodeClass],
        model: cp_model.CpModel,
        *,
        tight: bool = True,
    ) -> PlacementVars:
        """`tight=False` leaves capacity out of the domains (explanations guard it instead)."""
        v = cls(problem, classes, model)
        counts = [len(p) for p in problem.type_pods]
        for c, klass in enumerate(classes):
            for k in range(klass.copies):
                for t in klass.types:
                    ub = counts[t]
                    if tight and klass.mode == "slots":
                        ub = min(ub, klass.slots * len(klass.nodes))
                    v.x[t, c, k] = model.new_int_var(0, ub, f"x[{t},{c},{k}]")
                    v.by_type.setdefault(t, []).append((t, c, k))
            if klass.mode == "patterns":
                # x[t, c] = Σ_p n[c, p] · pattern[p, t];  Σ_p n[c, p] ≤ K
                for p in range(len(klass.patterns)):
                    v.n[c, p] = model.new_int_var(0, len(klass.nodes), f"n[{c},{p}]")
                model.add(sum(v.n[c, p] for p in range(len(klass.patterns))) <= len(klass.nodes))
                for i, t in enumerate(klass.types):
                    model.add(
                        v.x[t, c, 0]
                        == sum(
                            int(klass.patterns[p, i]) * v.n[c, p]
                            for p in range(len(klass.patterns))
                        )
                    )
        for g in range(len(problem.gang_ids)):
            if problem.gang_pending[g] > 0:
                v.gang_on.append(model.new_bool_var(f"gang_on[{g}]"))
            else:  # nothing to place: satisfied iff nothing is required of it this cycle
                v.gang_on.append(int(problem.gang_blocked[g] is None and problem.gang_need[g] == 0))
        pending_units = {
            int(problem.gang_unit[g]) for g in np.flatnonzero(problem.gang_pending > 0)
        }
        v.unit_on = [
            model.new_bool_var(f"unit_on[{u}]") if u in pending_units else 0
            for u in range(len(problem.unit_ids))
        ]
        return v

    def type_total(self, t: int) -> cp_model.LinearExpr:
        return cp_model.LinearExpr.sum([self.x[key] for key in self.by_type.get(t, [])])

    def gang_total(self, g: int) -> cp_model.LinearExpr:
        return cp_model.LinearExpr.sum([self.type_total(t) for t in self.problem.gang_types(g)])

    def class_load(self, c: int, k: int) -> cp_model.LinearExpr:
        return cp_model.LinearExpr.sum([self.x[t, c, k] for t in self.classes[c].types])

    # ------------------------------------------------------------------ hint and extraction

    def hint(self, pod_node: list[IntArray]) -> dict[tuple[int, int, int], int]:
        """x values of an engine answer (per-type node indices), in this container's layout."""
        node_class: dict[int, int] = {}
        for c, klass in enumerate(self.classes):
            for n in klass.nodes:
                node_class[n] = c
        per_node: dict[int, dict[int, int]] = {}
        for t, nodes in enumerate(pod_node):
            for n in nodes[nodes >= 0].tolist():
                per_node.setdefault(n, {}).setdefault(t, 0)
                per_node[n][t] += 1
        values = dict.fromkeys(self.x, 0)
        for c, klass in enumerate(self.classes):
            members = [n for n in klass.nodes if n in per_node]
            if klass.mode != "virtual":
                for n in members:
                    for t, count in per_node[n].items():
                        values[t, c, 0] += count
                continue
            # Virtual nodes are ordered by load (pods), most loaded first.
            members.sort(key=lambda n: (-sum(per_node[n].values()), n))
            for k, n in enumerate(members[: klass.virtual]):
                for t, count in per_node[n].items():
                    values[t, c, k] = count
        return values

    def pattern_hint(self, pod_node: list[IntArray]) -> dict[tuple[int, int], int]:
        """n[c, p] values of an engine answer: how many member nodes hold each pattern."""
        per_node: dict[int, dict[int, int]] = {}
        for t, nodes in enumerate(pod_node):
            for node in nodes[nodes >= 0].tolist():
                per_node.setdefault(node, {}).setdefault(t, 0)
                per_node[node][t] += 1
        values = dict.fromkeys(self.n, 0)
        for c, klass in enumerate(self.classes):
            if klass.mode != "patterns":
                continue
            index = {tuple(row): p for p, row in enumerate(klass.patterns.tolist())}
            for node in klass.nodes:
                if node in per_node:
                    mix = tuple(per_node[node].get(t, 0) for t in klass.types)
                    values[c, index[mix]] += 1
        return values

    def expand(
        self,
        values: dict[tuple[int, int, int], int],
        patterns: dict[tuple[int, int], int] | None = None,
    ) -> list[IntArray]:
        """Per-type node index of each pod, filling named member nodes in name order."""
        chosen: dict[int, list[int]] = {t: [] for t in range(self.problem.num_types)}
        for c, klass in enumerate(self.classes):
            if klass.mode == "patterns":
                members = iter(klass.nodes)
                for p, row in enumerate(klass.patterns.tolist()):
                    for _ in range((patterns or {}).get((c, p), 0)):
                        node = next(members)
                        for i, t in enumerate(klass.types):
                            chosen[t].extend([node] * row[i])
                continue
            if klass.aggregated:
                (t,) = klass.types
                remaining = values.get((t, c, 0), 0)
                for n in klass.nodes:
                    if remaining <= 0:
                        break
                    take = min(klass.slots, remaining)
                    chosen[t].extend([n] * take)
                    remaining -= take
                continue
            for k in range(klass.virtual):
                for t in klass.types:
                    chosen[t].extend([klass.nodes[k]] * values.get((t, c, k), 0))
        out = []
        for t, pods in enumerate(self.problem.type_pods):
            row = np.full(len(pods), -1, dtype=np.int64)
            row[: len(chosen[t])] = chosen[t]
            out.append(row)
        return out
