"""The explanation model: which constraint families together make a gang impossible.

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
("gang default/train needs 16 × 1 nvidia.com/gpu, eligible nodes offer 12"). A closure
that fits proves nothing (the model leaves some rules out), so only an infeasibility core
is used; `solver.why` asks this model only after the cheap bounds and the competition
check.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from ortools.sat.python import cp_model

from solver.engines.cpsat import capacity
from solver.features import FEATURES
from solver.gate import GATE
from solver.problem import Problem, Rows, closure
from solver.quantity import format_quantity
from solver.sat import PlacementVars, node_classes

__all__ = ["explain_gang"]

EXPLAIN_SECONDS = 1.0

_STEPS = tuple(f.explain for f in FEATURES)


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


def explain_gang(problem: Problem, g: int, seconds: float = EXPLAIN_SECONDS) -> str | None:
    """Gang g with its required gangs, alone on the cluster as it stands (other pending
    gangs ignored), every constraint family behind an assumption literal: when CP-SAT
    proves it infeasible, the families of a sufficient core, in words with their numbers;
    None when it is not proven infeasible in `seconds` (the model relaxes some rules, so
    "feasible" here proves nothing)."""
    gangs = closure(problem, g)
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
    # gang[h]: Σ x over h's types ≥ minMember share, and over each role's ≥ its minimum
    local_types = {h: [i for i, t in enumerate(types) if problem.type_gang[t] == h] for h in gangs}
    for h, lit in need.items():
        placed = sum(
            (v.type_total(i) for i in local_types[h]), start=cp_model.LinearExpr.constant(0)
        )
        model.add(placed >= int(problem.gang_need[h])).only_enforce_if(lit)
        for m in problem.minimums(h):  # its task roles' minimums are part of its share
            role = [v.type_total(i) for i, t in enumerate(types) if t in m.types]
            model.add(cp_model.LinearExpr.sum(role) >= m.need).only_enforce_if(lit)
    guards = [
        found for step in _STEPS if step.guard and (found := step.guard(problem, model, v, types))
    ]
    model.add_assumptions([*cap.values(), elig, *need.values(), *(g.literal for g in guards)])
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.05, seconds)
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    with GATE.outside():
        status = solver.solve(model)
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


def _role_words(problem: Problem, gangs: list[int], r: int, eligibility: bool) -> list[str]:
    """Each task role's minimum (`Problem.gang_minimums`) that its own eligible nodes (all
    nodes when eligibility is not in the core) cannot hold in resource r."""
    out = []
    name = problem.resources[r]
    for h in gangs:
        for m in problem.minimums(h):
            if not m.types:
                continue
            per_pod = int(min(problem.type_demand[t, r] for t in m.types))
            own = np.any(problem.eligible[np.array(m.types)], axis=0)
            nodes = own if eligibility else np.ones(problem.num_nodes, dtype=bool)
            offered = int(np.maximum(problem.free[nodes, r], 0).sum())
            if m.need * per_pod > offered:
                out.append(
                    f"{m.what} of gang {problem.gang_ids[h]} needs {m.need} × "
                    f"{format_quantity(name, per_pod)} {name}, its "
                    f"{'eligible ' if eligibility else ''}nodes offer "
                    f"{format_quantity(name, offered)}"
                )
    return out


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
        parts.extend(_role_words(problem, gangs, r, "eligibility" in core))
    parts.extend(families)
    return "; ".join(parts) or None  # nothing to name: the greedy's counted reason stands
