"""Why not? For each gang left unsatisfied, which constraint families make it impossible.

For gang g and every gang it requires (its closure), a feasibility model is built on the
cluster as it stands (other pending jobs ignored), with each constraint family guarded by
an assumption literal:

* `capacity[r]` — the rows of resource r (one literal per resource, `pods` included);
* `eligibility` — pods stay off nodes their predicates reject (selectors, taints, ...);
* `gang[h]`     — gang h places at least its minMember share;
* a feature's family (`ExplainSteps.guard`, e.g. `interpod`: the pod affinity,
  anti-affinity and spread rows between its pods).

If CP-SAT proves it infeasible, `sufficient_assumptions_for_infeasibility()` names the
families that together make it so, and each is put in words with its numbers
("gang default/train needs 16 × 1 nvidia.com/gpu, eligible nodes offer 12"). If the closure
fits on its own and other gangs were placed, the room went to them (with no other gang
placed, the fit proves a rule the model leaves out, and nothing is claimed). The
greedy's counted per-node reasons are kept alongside.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
from ortools.sat.python import cp_model

from solver.engines.cpsat import capacity
from solver.features import FEATURES
from solver.problem import IntArray, Problem, Rows
from solver.quantity import format_quantity
from solver.sat import PlacementVars, node_classes

__all__ = ["explain_gang", "explain_unsatisfied"]

EXPLAIN_SECONDS = 1.0

_STEPS = tuple(f.explain for f in FEATURES)


def _closure(problem: Problem, g: int) -> list[int]:
    out, stack = {g}, [g]
    while stack:
        a = stack.pop()
        for x, h in problem.gang_requires:
            if x == a and h not in out:
                out.add(h)
                stack.append(h)
    return sorted(out)


def _subproblem(problem: Problem, types: list[int]) -> Problem:
    """Only `types`, with every node allowed (eligibility becomes a guarded constraint)."""
    idx = np.array(types, dtype=np.int64)
    return dataclasses.replace(
        problem,
        type_demand=problem.type_demand[idx].copy(),
        type_gang=problem.type_gang[idx].copy(),
        type_pods=tuple(problem.type_pods[t] for t in types),
        eligible=Rows(
            np.ones((1, problem.num_nodes), dtype=bool), np.zeros(len(types), dtype=np.int64)
        ),
        ineligible_reason=problem.ineligible_reason.select(idx),
        static_score=problem.static_score.select(idx),
        type_rank=tuple(problem.type_rank[t] for t in types) if problem.type_rank else (),
    )


def explain_gang(
    problem: Problem, g: int, seconds: float = EXPLAIN_SECONDS, *, rivals: bool = True
) -> str | None:
    """Words for why gang g (with its required gangs) cannot be placed; None if it could.
    `rivals`: other gangs took room in this cycle's answer; without them, a closure that
    fits on its own proves a rule the model relaxes, not competition, and no words are
    given (the greedy's counted reason stands)."""
    gangs = _closure(problem, g)
    types = [t for h in gangs for t in problem.gang_types(h)]
    if not types:
        return None
    sub = _subproblem(problem, types)
    idx = np.array(types)
    eligible = np.asarray(problem.eligible[idx])
    splits = [
        eligible,
        *(np.asarray(row)[idx] for step in _STEPS for f in step.class_splits for row in f(problem)),
    ]
    per_node = _per_node(problem)
    model = cp_model.CpModel()
    classes = node_classes(
        sub,
        split_by=np.vstack(splits),
        patterns=False,
        per_node=per_node[idx] if per_node is not None else None,
    )
    v = PlacementVars.create(sub, classes, model, tight=False)
    cap = {r: model.new_bool_var(f"capacity[{name}]") for r, name in enumerate(problem.resources)}
    elig = model.new_bool_var("eligibility")
    need = {
        h: model.new_bool_var(f"gang[{problem.gang_ids[h]}]")
        for h in gangs
        if problem.gang_need[h] > 0
    }
    capacity.build(sub, model, v, guards=cap)
    # eligibility: x[t, c, k] = 0 where the predicates reject type t on class c
    for (t, c, _k), var in v.x.items():
        if not eligible[t, classes[c].nodes[0]]:
            model.add(var == 0).only_enforce_if(elig)
    # gang[h]: Σ x over h's types ≥ minMember share
    local_types = {h: [i for i, t in enumerate(types) if problem.type_gang[t] == h] for h in gangs}
    for h, lit in need.items():
        placed = sum(
            (v.type_total(i) for i in local_types[h]), start=cp_model.LinearExpr.constant(0)
        )
        model.add(placed >= int(problem.gang_need[h])).only_enforce_if(lit)
    guards = [
        found for step in _STEPS if step.guard and (found := step.guard(problem, model, v, types))
    ]
    model.add_assumptions([*cap.values(), elig, *need.values(), *(g.literal for g in guards)])
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.05, seconds)
    solver.parameters.num_workers = 1
    status = solver.solve(model)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        if not rivals:
            return None
        if any(step.relaxed and step.relaxed(problem, g, types) for step in _STEPS):
            return None  # the relaxation drops a feature's rule (one domain, node-group
            #   limits): "fits" would be untrue
        return (
            f"gang {problem.gang_ids[g]} fits on the cluster on its own; "
            "the room went to other pending gang groups (higher priority or more groups placed)"
        )
    if status != cp_model.INFEASIBLE:
        return None
    in_core = set(solver.sufficient_assumptions_for_infeasibility())
    core = {model.proto.variables[i].name for i in in_core}
    families = [g.words for g in guards if g.literal.index in in_core]
    return _words(problem, gangs, types, core, families)


def _per_node(problem: Problem) -> np.ndarray | None:
    """[T] types the guarded families constrain node by node (None: none)."""
    rows = [row for step in _STEPS if step.per_node and (row := step.per_node(problem)) is not None]
    return np.logical_or.reduce(rows) if rows else None


def _words(
    problem: Problem, gangs: list[int], types: list[int], core: set[str], families: list[str]
) -> str | None:
    eligible_any = np.any(problem.eligible[np.array(types)], axis=0)
    parts: list[str] = []
    if "eligibility" in core:
        for h in gangs:
            h_types = problem.gang_types(h)
            if not h_types:
                continue
            ok = np.any(problem.eligible[h_types], axis=0)
            codes, counts = np.unique(
                problem.ineligible_reason[h_types[0]][~ok], return_counts=True
            )
            why = ", ".join(
                f"{n} {problem.reason_texts[c]}"
                for c, n in zip(codes.tolist(), counts.tolist(), strict=True)
            )
            parts.append(
                f"only {int(ok.sum())} of {problem.num_nodes} nodes pass the predicates for gang "
                f"{problem.gang_ids[h]}" + (f" ({why})" if why else "")
            )
    nodes = eligible_any if "eligibility" not in core else np.ones(problem.num_nodes, dtype=bool)
    for r, name in enumerate(problem.resources):
        if f"capacity[{name}]" not in core:
            continue
        wants = []
        total = 0
        for h in gangs:
            n = int(problem.gang_need[h])
            h_types = problem.gang_types(h)
            if n <= 0 or not h_types:
                continue
            per_pod = int(min(problem.type_demand[t, r] for t in h_types))
            total += n * per_pod
            wants.append(
                f"gang {problem.gang_ids[h]} needs {n} × {format_quantity(name, per_pod)} {name}"
            )
        offered = int(np.maximum(problem.free[nodes, r], 0).sum())
        where = "eligible nodes offer" if "eligibility" not in core else "all nodes offer"
        parts.append(
            f"{'; '.join(wants)} ({format_quantity(name, total)} in all), {where} "
            f"{format_quantity(name, offered)} before this cycle"
        )
    parts.extend(families)
    return "; ".join(parts) or None  # nothing to name: the greedy's counted reason stands


QUEUE_ORDER = "counted in queue order, after the gangs ahead of it: "
"""Introduces the counted reason beside the proof: its numbers are the room left when the
gang's turn came, the proof's the room before this cycle."""


def explain_unsatisfied(
    problem: Problem,
    pod_node: list[IntArray],
    greedy_reasons: dict[int, str],
    deadline: float,
) -> dict[int, str]:
    """Reasons for every gang that is not satisfied in `pod_node` (CP-SAT words + greedy counts)."""
    placed = np.zeros(len(problem.gang_ids), dtype=np.int64)
    for t, nodes in enumerate(pod_node):
        placed[problem.type_gang[t]] += int((nodes >= 0).sum())
    reasons: dict[int, str] = {}
    for g in range(len(problem.gang_ids)):
        unsatisfied = problem.gang_pending[g] > 0 and (
            problem.gang_blocked[g] is not None or placed[g] < max(1, int(problem.gang_need[g]))
        )
        optional_left = placed[g] > 0 and placed[g] < problem.gang_pending[g]
        if not unsatisfied:
            if optional_left and g in greedy_reasons:
                reasons[g] = greedy_reasons[g]
            continue
        if problem.gang_blocked[g] is not None:
            reasons[g] = problem.gang_blocked[g] or ""
            continue
        left = deadline - time.perf_counter()
        rivals = int(placed.sum()) > int(placed[_closure(problem, g)].sum())
        words = (
            explain_gang(problem, g, min(EXPLAIN_SECONDS, left), rivals=rivals)
            if left > 0.05
            else None
        )
        counted = greedy_reasons.get(g, "")
        if words and counted:  # the counts beside the proof, told apart (no engine named)
            counted = f"{QUEUE_ORDER}{counted}"
        reasons[g] = "; ".join(p for p in (words, counted) if p) or "not placed"
    return reasons
