"""Capacity planning: how many nodes of each type to add, at minimum cost, so the workload
runs; what still cannot run and why; and the bound the answer is proven against.

The model is a configuration (Gilmore-Gomory) model, so its size depends on the number of
shapes and node types, never on the number of pods:

    N_t       nodes of type t (catalogue types are bought; existing classes cost 0)
    n_c       nodes packed with pattern c (a multiset of shapes that fits one node of t_c)
    z_j       jobs of class j placed (0..k_j; a job is all of its pods or none)

    min  sum_t cost_t N_t + sum_j pen_j (k_j - z_j)
    s.t. sum_c a[s,c] n_c >= sum_j m[j,s] z_j     every shape s is covered
         sum_{c of t} n_c <= N_t                   patterns use the nodes bought
         N_t <= maxCount_t; N_t = nodesPerBlock_t * blocks_t
         sum_{t of model} G_t N_t <= cardQuota[model]; sum_t cost_t N_t <= budget

`pen_j` = (the largest node cost + 1) x the job's weight, so placing work always
beats saving money; left-out work is the last resort (limits, quotas, budget).

`plan` runs the stages in order, each in its own module (each stage within the time limit;
CP-SAT always gets `num_workers`, `random_seed` and `max_time_in_seconds`):

0. catalog: the input (`catalog`, `workload`, `cluster`, `_input`) as a `PlanInput` of
   shapes, job classes and node types; as arrays with integer costs (`_problem`).
1. pack: the greedy (`_pack.GreedyPacker`: first-fit decreasing / best fit, cheapest node
   per dominant share) -- the incumbent, the hint, and the answer if nothing beats it
   (`_incumbents`); a given `initial` packing competes with it.
2. bounds: `l1` and `devices` (`bounds`); column generation on the LP relaxation (GLOP,
   `_config_lp`): start from the greedy's node patterns and one homogeneous pattern per
   (shape, type); price new patterns per type with a greedy knapsack first, CP-SAT (exact,
   with GPU devices) when the greedy finds none (`_patterns`). Each exact round yields a
   Lagrangian (Farley) lower bound valid for the whole problem; when the exact pricing
   proves no pattern has negative reduced cost, the LP value *is* the configuration-LP
   bound. When every maximal pattern can be enumerated (small instances), all are added
   and the integer master below is exact.
3. improve: the LP made integral four ways (`_incumbents`): every column rounded up (when
   the limits allow); rounded down with the left-over jobs packed by the greedy (onto nodes
   the LP left unused, or new ones), with and without first giving each fractional column
   one node (`round_down_fill`); and iterated rounding, which re-solves the LP for what is
   left after each rounding (`round_iterated`, until 15% of the limit past the LP share).
   The best of these, the greedy and `initial` is the incumbent. Then the integer master
   over the generated patterns (CP-SAT, hinted with the incumbent, `_integer`) --
   optionally split POP-style into `parts` random sub-problems (job counts and limits
   divided, the answers summed), each a restricted master of its own.
4. report: the best plan as a `PlanResult` (`_report`), checked independently by
   `verify_plan`.

Bounds reported (objective units, costs in the catalogue's unit):
`l1` (sum-of-sizes LP, `solver.plan.bounds`), `devices` (L1 with shared pods packed onto
GPU devices by arc flow, same module; absent without shared pods), `config_lp` (the
Lagrangian / LP bound of stage 2), `cpsat` (CP-SAT's bound on the restricted master: a
bound on the whole problem only when the patterns were enumerated completely -- otherwise
reported, not used). The gap is against the best valid bound.
"""

from __future__ import annotations

import math
import time

from solver.plan._config_lp import generate_columns
from solver.plan._incumbents import (
    given_solution,
    greedy_solution,
    round_down_fill,
    round_iterated,
    round_up,
)
from solver.plan._integer import solve_master, solve_split
from solver.plan._model import PlanInput, PlanOptions, PlanResult, ProgressFn
from solver.plan._patterns import seed_columns
from solver.plan._problem import MIN_SOLVE_SECONDS, NO_PLAN, Columns, Problem, Trace
from solver.plan._report import report, verify_plan
from solver.plan.bounds import ceil_bound, device_bound, l1_bound

__all__ = ["PlanOptions", "ProgressFn", "plan", "verify_plan"]

_ROUNDING_SHARE = 0.15  # of the time limit, for the iterated rounding past the LP's share


def plan(
    inp: PlanInput,
    options: PlanOptions | None = None,
    progress: ProgressFn | None = None,
    initial: list[tuple[int, dict[int, int]]] | None = None,
) -> PlanResult:
    """Plan capacity for `inp` (see the module docstring); never raises for unschedulable.

    `initial` is an optional known packing, [(type index, {shape: pods})] per node (e.g. the
    placement an online scheduler made): it becomes a candidate incumbent and CP-SAT hint,
    so the plan is never worse than it.
    """
    options = options or PlanOptions()
    start = time.perf_counter()
    deadline = start + options.time_limit
    say = progress or (lambda stage, frac: None)
    p = Problem(inp)
    trace = Trace(start)
    stats: dict[str, float] = {"shapes": p.S, "types": p.T, "job_classes": len(inp.jobs)}
    notes: list[str] = []

    # 1. greedy
    say("greedy", 0.0)
    cols = Columns()
    best = greedy_solution(p, cols)
    if best.objective == NO_PLAN:
        notes.append("the greedy's whole blocks exceed a maxCount; it is not a valid plan")
    else:
        trace.add(best.objective)
    stats["greedy_seconds"] = time.perf_counter() - start
    stats["greedy_objective"] = best.objective / p.scale
    if initial:
        given = given_solution(p, cols, initial)
        stats["start_objective"] = given.objective / p.scale
        if given.objective < best.objective:
            best = given
            trace.add(given.objective)
    p.tighten(best.objective)

    # 2. bounds: L1 and the configuration LP by column generation
    say("bounds", 0.1)
    l1 = float(l1_bound(inp, p.a, p.cost, p.pen, p.upper)) if inp.jobs else float(p.constant)
    dev_lb = device_bound(inp, p.a, p.cost, p.pen, p.upper) if inp.jobs else None
    stats["bounds_seconds"] = time.perf_counter() - start - stats["greedy_seconds"]
    lp_deadline = start + options.time_limit * options.lp_share
    complete = seed_columns(p, cols, options.enumerate_limit, lp_deadline)
    lp = generate_columns(p, cols, complete, options.seed, start, lp_deadline, say)
    if inp.jobs and math.isfinite(lp.lp_value):
        point = lp.master.point()
        rounding_deadline = start + options.time_limit * (options.lp_share + _ROUNDING_SHARE)
        for rounded in (
            round_up(p, cols, point),
            round_down_fill(p, cols, point, fractional_nodes=False),
            round_down_fill(p, cols, point, fractional_nodes=True),
            round_iterated(p, cols, rounding_deadline),
        ):
            if rounded is not None:
                stats[f"{rounded.source}_objective"] = rounded.objective / p.scale
                trace.add(rounded.objective)
                if rounded.objective < best.objective:
                    best = rounded
    stats["lp_rounds"] = lp.rounds
    stats["columns"] = len(cols.cols)
    stats["lp_value"] = lp.lp_value / p.scale if math.isfinite(lp.lp_value) else -1.0
    stats["lp_seconds"] = time.perf_counter() - start
    say("integer master", 0.5)

    # 3. the integer master over the patterns (POP split when asked)
    cpsat_bound: float | None = None
    parts = max(1, options.parts)
    left = deadline - time.perf_counter()
    if inp.jobs and left > MIN_SOLVE_SECONDS and cols.cols:
        if parts == 1:
            sol, cpsat_bound, optimal = solve_master(p, cols, best, left, options, trace)
            stats["cpsat_status_optimal"] = float(optimal)
        else:
            sol = solve_split(p, cols, parts, options, deadline, say)
            if sol is not None:
                trace.add(sol.objective)
            stats["parts"] = parts
        if sol is not None and sol.objective < best.objective:
            best = sol
    if best.source == "greedy" and best.objective >= NO_PLAN:
        notes.append("no valid plan was found within the limits and the time")

    bounds: dict[str, float | None] = {
        "l1": l1,
        "devices": dev_lb,
        "config_lp": ceil_bound(lp.lower_bound) if math.isfinite(lp.lower_bound) else None,
        "cpsat": cpsat_bound if parts == 1 else None,
    }
    say("done", 1.0)
    result = report(p, cols, best, bounds, complete, trace, stats, notes)
    result.seconds = time.perf_counter() - start
    return result
