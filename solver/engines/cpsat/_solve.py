"""The CP-SAT engine: greedy first, its answer as a complete hint, then an exact model.

Model (one module per constraint family, each returning its objective terms):
    capacity  — per node class / virtual node and resource
    quota     — queue realCapability at every level
    topology  — one domain per MustGather / Godel-required unit, gather all-or-nothing,
                podCountMultiple; tiers domains:<Layer>
    gang      — minMember shares, GangGroup requirements; tiers placed_groups, placed_pods
    affinity  — tier affinity: static policy scores (node groups, ...) of the chosen nodes
    packing   — empty nodes opened; tier opened_nodes (fragmentation tie-break)
Tiers are combined lexicographically (`_terms.combine`), exactly as `solver.objective`
scores every engine, so objectives and bounds of both engines are comparable.

The answer is whichever of the CP-SAT solution and the greedy one scores higher; if CP-SAT
finds no solution in time the greedy answer is returned with status HEURISTIC.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from ortools.sat.python import cp_model

from solver.engines._params import SolveParams
from solver.engines._result import EngineResult
from solver.engines.bounds import impossible, left_out
from solver.engines.cpsat._modules import (
    ASSIGNMENTS,
    CLASS_SPLITS,
    MODULES,
    POSTPROCESS,
    UNSUPPORTED,
    per_node_types,
)
from solver.engines.greedy import solve_greedy
from solver.errors import InternalError
from solver.gate import GATE
from solver.problem import IntArray, Problem, evaluate, proven_optimal
from solver.sat import PlacementVars, combine, node_classes, ordered, stop_on

__all__ = ["solve_auto", "solve_cpsat"]

_MARGIN = 0.05  # seconds kept back for expanding and verifying the answer
# Model building checks the clock between steps, so the step that crosses the build deadline
# runs to its end (the largest, variables or capacity, takes ~70 ms at 1,200 pods x 400
# nodes). Building may therefore use half the budget, or all but a second of a long one:
# past that the search would have too little time to beat the greedy hint anyway.
_BUILD_SHARE = 0.5
_BUILD_RESERVE = 1.0


def _build_deadline(started: float, time_limit: float) -> float:
    return started + max(_BUILD_SHARE * time_limit, time_limit - _BUILD_RESERVE) - _MARGIN


class _FirstSolution(cp_model.CpSolverSolutionCallback):
    def __init__(self, started: float) -> None:
        super().__init__()
        self.started = started
        self.first: float | None = None

    def on_solution_callback(self) -> None:
        if self.first is None:
            self.first = time.perf_counter() - self.started


def _hint(
    problem: Problem, v: PlacementVars, model: cp_model.CpModel, pod_node: list[IntArray]
) -> None:
    values = v.hint(pod_node)
    for key, var in v.x.items():
        model.add_hint(var, values[key])
    placed = np.zeros(len(problem.gang_ids), dtype=np.int64)
    for t, nodes in enumerate(pod_node):
        placed[problem.type_gang[t]] += int((nodes >= 0).sum())
    for g, gang_on in enumerate(v.gang_on):
        on = problem.gang_blocked[g] is None and (
            problem.gang_need[g] == 0 or placed[g] >= problem.gang_need[g]
        )
        if not isinstance(gang_on, int):
            model.add_hint(gang_on, int(on))
    unit_placed = np.bincount(problem.gang_unit, weights=placed, minlength=len(problem.unit_ids))
    for u, unit in enumerate(v.unit_on):
        if not isinstance(unit, int):
            model.add_hint(unit, int(unit_placed[u] > 0))
    for pattern_key, count in v.pattern_hint(pod_node).items():
        model.add_hint(v.n[pattern_key], count)
    for c, klass in enumerate(v.classes):
        if c not in v.opened:
            continue
        if klass.mode == "patterns":
            continue  # opened is Σ n[c, p], hinted through n
        if klass.aggregated:
            (t,) = klass.types
            opened = v.opened[c]
            assert isinstance(opened, cp_model.IntVar)
            model.add_hint(opened, math.ceil(values[t, c, 0] / klass.slots))
        else:
            for k in range(klass.virtual):
                model.add_hint(v.used[c, k], int(sum(values[t, c, k] for t in klass.types) > 0))


def solve_cpsat(problem: Problem, params: SolveParams, *, engine: str = "cpsat") -> EngineResult:
    started = time.perf_counter()
    greedy = solve_greedy(problem, deadline=started + params.time_limit, stop=params.stop)
    if greedy.stats["units_unreached"]:
        # the greedy used the whole budget: no time to build a model
        return _greedy_instead(greedy, engine, "cpsat_build_abandoned")
    tiers = evaluate(problem, greedy.pod_node)
    greedy_score = tiers["objective"]
    if engine == "auto" and (proof := _proven_without_model(problem, tiers, greedy)):
        # Every tier at a value no answer beats: the greedy's answer is proven without a
        # model (a pod on its best node of a busy cluster, a gang fully placed on used nodes,
        # everything else left out proven impossible).
        greedy.engine, greedy.status, greedy.bound = engine, "OPTIMAL", float(greedy_score)
        if problem.num_pods > 0 and all((row < 0).all() for row in greedy.pod_node):
            greedy.status = "INFEASIBLE"  # proven: not a single gang group can be placed
        greedy.stats = {**greedy.stats, **proof}
        return greedy
    beyond = next((why for check in UNSUPPORTED if (why := check(problem))), None)
    if beyond:
        # A rule the model does not encode: answer with the greedy (the upstream
        # algorithm) rather than risk an unverified plan.
        answer = _greedy_instead(greedy, engine, "cpsat_skipped")
        answer.notes.append(
            f"{engine}: answered with the greedy's placement: the model does not encode {beyond}"
        )
        return answer

    # Building shares the call's budget: past its share (or once the caller has gone) the
    # greedy answer goes out instead of a model that could not be solved in time anyway.
    build_deadline = _build_deadline(started, params.time_limit)

    def give_up() -> bool:
        return params.stopped or time.perf_counter() > build_deadline

    model = cp_model.CpModel()
    split = [row for rows in (f(problem) for f in CLASS_SPLITS) for row in rows]
    classes = node_classes(
        problem,
        split_by=np.vstack(split) if split else None,
        deadline=build_deadline,
        per_node=per_node_types(problem),
    )
    if give_up():
        return _greedy_instead(greedy, engine, "cpsat_build_abandoned")
    v = PlacementVars.create(problem, classes, model)
    terms = []
    for build in MODULES:
        if give_up():
            return _greedy_instead(greedy, engine, "cpsat_build_abandoned")
        terms += build(problem, model, v)
    objective, _ = combine(problem, terms)
    if objective is not None:
        model.maximize(objective)
    _hint(problem, v, model, greedy.pod_node)
    built = time.perf_counter() - started
    if give_up():
        return _greedy_instead(greedy, engine, "cpsat_build_abandoned")

    solver = cp_model.CpSolver()
    budget = params.time_limit - built - _MARGIN
    if greedy.gang_reason:  # keep a slice for explaining what stays unplaced
        budget -= min(1.0, 0.2 * budget)
    budget = max(0.01, budget)
    solver.parameters.num_workers = params.num_workers
    solver.parameters.random_seed = params.seed
    callback = _FirstSolution(time.perf_counter())
    lexicographic = objective is None
    staged: list[int] | None = None
    solve_started = time.perf_counter()
    with stop_on(params.stop, solver):
        if lexicographic:
            status, proven_all, staged = _solve_lexicographically(
                model, solver, ordered(problem, terms), budget, callback, params
            )
        else:
            solver.parameters.max_time_in_seconds = budget
            with GATE.outside():
                status = solver.solve(model, callback)
            proven_all = status == cp_model.OPTIMAL

    def value_of(var: cp_model.IntVar) -> int:
        return staged[var.index] if staged is not None else int(solver.value(var))

    if status == cp_model.MODEL_INVALID:
        raise InternalError(f"CP-SAT model invalid: {model.validate()}")
    if status == cp_model.INFEASIBLE:
        raise InternalError(
            "CP-SAT placement model infeasible although placing nothing is a solution"
        )

    stats: dict[str, float | int] = {
        "pod_types": problem.num_types,
        "node_classes": len(classes),
        "vars_before": problem.num_pods * problem.num_nodes,
        "vars_after": len(model.proto.variables),
        "constraints": len(model.proto.constraints),
        "build_seconds": built,
        "solve_seconds": time.perf_counter() - solve_started,
        "greedy_objective": greedy_score,
        "lexicographic": int(lexicographic),
    }
    if callback.first is not None:
        stats["first_solution_seconds"] = callback.first

    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        greedy.engine, greedy.status, greedy.stats = engine, "HEURISTIC", {**greedy.stats, **stats}
        return greedy

    values = {key: value_of(var) for key, var in v.x.items()}
    pattern_counts = {key: value_of(var) for key, var in v.n.items()}
    pod_node = v.expand(values, pattern_counts)
    for postprocess in POSTPROCESS:
        pod_node = postprocess(problem, pod_node)
    score = evaluate(problem, pod_node)["objective"]
    bound: float | None = float(solver.best_objective_bound) if not lexicographic else None
    if lexicographic and proven_all:
        bound = float(score)  # every tier proven optimal in turn
    devices = greedy.devices
    if greedy_score >= score:  # ties keep the greedy's (upstream-like) node choice
        pod_node, score = greedy.pod_node, greedy_score
    else:
        devices = next(
            (a for read in ASSIGNMENTS if (a := read(problem, v, value_of, pod_node)) is not None),
            None,
        )
    proven = proven_all or (bound is not None and score >= bound)
    result_status = "OPTIMAL" if proven else "FEASIBLE"
    if proven and problem.num_pods > 0 and all((row < 0).all() for row in pod_node):
        result_status = "INFEASIBLE"  # proven: not a single gang group can be placed

    return EngineResult(
        engine=engine,
        status=result_status,  # type: ignore[arg-type]
        pod_node=pod_node,
        gang_reason=dict(greedy.gang_reason),  # counted in queue order; `solver.why` proves
        bound=bound,
        stats=stats,
        devices=devices,
    )


def _proven_without_model(
    problem: Problem, tiers: dict[str, int], greedy: EngineResult
) -> dict[str, int] | None:
    """The stats of a proof that the greedy's answer is optimal, or None: every tier at its
    relaxed bound, once the gangs it left out that a bound proves impossible (and the gangs
    requiring them) are set aside — when that is every gang it left out."""
    if proven_optimal(problem, tiers):
        return {"proven_by_bound": 1}
    left = left_out(problem, greedy.pod_node)
    if not left:
        return None
    out = impossible(problem, left)
    if not set(left) <= out:
        return None
    types = frozenset(t for t in range(problem.num_types) if int(problem.type_gang[t]) in out)
    if not proven_optimal(problem, tiers, greedy.pod_node, types):
        return None
    return {"proven_by_bound": 1, "impossible_gangs": len(out)}


def _greedy_instead(greedy: EngineResult, engine: str, why: str) -> EngineResult:
    greedy.engine, greedy.status = engine, "HEURISTIC"
    greedy.stats = {**greedy.stats, why: 1}
    return greedy


def _solve_lexicographically(
    model: cp_model.CpModel,
    solver: cp_model.CpSolver,
    tiers: list[tuple[str, bool, cp_model.LinearExprT]],
    budget: float,
    callback: _FirstSolution,
    params: SolveParams,
) -> tuple[Any, bool, list[int] | None]:
    """Optimise tier after tier, each fixed at its best value before the next (a stage
    proven optimal early leaves its time to the next). Returns the status, whether every tier was proven optimal, and the values of
    every variable in the last stage that found a solution (None if none did)."""
    deadline = time.perf_counter() + budget
    status: Any = cp_model.UNKNOWN
    proven = True
    values: list[int] | None = None
    for i, (_name, maximize, expr) in enumerate(tiers):
        left = deadline - time.perf_counter()
        if left <= 0.005 or params.stopped:
            proven = False
            break
        if maximize:
            model.maximize(expr)
        else:
            model.minimize(expr)
        # Higher tiers matter more: each stage may use half of what is left, the last all.
        solver.parameters.max_time_in_seconds = left if i == len(tiers) - 1 else left / 2
        with GATE.outside():
            stage = solver.solve(model, callback)
        if stage not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            proven = False
            if values is None:
                status = stage
            break
        proven = proven and stage == cp_model.OPTIMAL
        count = len(model.proto.variables)
        values = [int(solver.value(model.get_int_var_from_proto_index(k))) for k in range(count)]
        best = int(solver.value(expr))
        model.add(expr >= best if maximize else expr <= best)
        model.clear_hints()  # type: ignore[no-untyped-call]
        for k, value in enumerate(values):
            model.add_hint(model.get_int_var_from_proto_index(k), value)
    if values is None:
        return status, False, None
    return (cp_model.OPTIMAL if proven else cp_model.FEASIBLE), proven, values


def solve_auto(problem: Problem, params: SolveParams) -> EngineResult:
    """`greedy`; its answer as OPTIMAL when it reaches every tier's relaxed bound
    (`proven_optimal`), else `cpsat` for the rest of the budget and the better answer wins."""
    return solve_cpsat(problem, params, engine="auto")
