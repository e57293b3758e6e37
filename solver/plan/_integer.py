"""The integer master: CP-SAT over the generated patterns (the model of
`solver.plan.planner`, with n_c only for the columns found), hinted with the incumbent.

Exact when every pattern was enumerated; otherwise a restricted master (its bound is a
bound over the generated patterns only). Optionally split POP-style (`solve_split`) into
`parts` random sub-problems: job counts and limits divided, the answers summed.
"""

from __future__ import annotations

import math
import random
import time
from collections import Counter

import numpy as np
from ortools.sat.python import cp_model

from solver.gate import GATE
from solver.plan._model import PlanOptions, ProgressFn
from solver.plan._pack import pods_per_shape
from solver.plan._problem import Columns, Problem, Solution, Trace, cp_solver

__all__ = ["solve_master", "solve_split"]


class _Incumbents(cp_model.CpSolverSolutionCallback):
    """Every solution CP-SAT finds goes into the trace (time to first / best solution)."""

    def __init__(self, trace: Trace | None) -> None:
        super().__init__()
        self.trace = trace

    def on_solution_callback(self) -> None:
        if self.trace is not None:
            self.trace.add(round(self.objective_value))


def _solve_ip(
    p: Problem,
    cols: Columns,
    counts: list[int],
    upper: np.ndarray,
    limit_scale: float,
    hint: Solution | None,
    time_limit: float,
    options: PlanOptions,
    trace: Trace | None,
) -> tuple[Solution | None, float, str]:
    """CP-SAT over the generated patterns for job counts `counts`, at most `upper` nodes per
    type and `limit_scale` of the quotas and the budget -> (solution, bound, status)."""
    inp = p.inp
    m = cp_model.CpModel()
    demand = pods_per_shape(inp, counts)
    # N_t = nodesPerBlock_t * blocks_t
    N = []
    for t in range(p.T):
        b = p.block[t]
        if b > 1:
            blocks = m.new_int_var(0, int(upper[t]) // b, f"b{t}")
            v = m.new_int_var(0, int(upper[t]), f"N{t}")
            m.add(v == b * blocks)
        else:
            v = m.new_int_var(0, int(upper[t]), f"N{t}")
        N.append(v)
    z = [m.new_int_var(0, counts[j], f"z{j}") for j in range(len(inp.jobs))]
    n: dict[int, cp_model.IntVar] = {}
    for c, (t, pattern) in enumerate(cols.cols):
        if upper[t] <= 0:
            continue
        # more copies than any of its shapes needs is never necessary
        most = max(-(-int(demand[s]) // a) for s, a in pattern)
        if most <= 0:
            continue
        n[c] = m.new_int_var(0, min(int(upper[t]), most), f"n{c}")
    # sum_c a[s,c] n_c >= sum_j m[j,s] z_j
    cover: dict[int, list[tuple[int, cp_model.IntVar]]] = {}
    for c, v in n.items():
        for s, a in cols.cols[c][1]:
            cover.setdefault(s, []).append((a, v))
    need: dict[int, list[tuple[int, cp_model.IntVar]]] = {}
    for j, job in enumerate(inp.jobs):
        for s, mult in job.shapes:
            need.setdefault(s, []).append((mult, z[j]))
    for s, terms in need.items():
        m.add(sum(a * v for a, v in cover.get(s, [])) >= sum(mult * v for mult, v in terms))
    # sum_{c of t} n_c <= N_t
    by_type: dict[int, list[cp_model.IntVar]] = {}
    for c, v in n.items():
        by_type.setdefault(cols.cols[c][0], []).append(v)
    for t, vs in by_type.items():
        m.add(sum(vs) <= N[t])
    # sum_{t of model} G_t N_t <= cardQuota[model]; sum_t cost_t N_t <= budget
    for model, lim in inp.card_quota:
        terms = [(g, N[t]) for t, g in enumerate(inp.card_gpus(model)) if g]
        if terms:
            m.add(sum(g * v for g, v in terms) <= int(lim * limit_scale))
    budget = p.scaled_budget(limit_scale)
    if budget is not None:
        costs = [(int(p.cost[t]), N[t]) for t, tt in enumerate(inp.types) if not tt.existing]
        m.add(sum(c * v for c, v in costs) <= math.floor(budget))
    const = sum(int(p.pen[j]) * counts[j] for j in range(len(inp.jobs)))
    m.minimize(
        sum(int(p.cost[t]) * N[t] for t in range(p.T))
        + const
        - sum(int(p.pen[j]) * z[j] for j in range(len(inp.jobs)))
    )
    if hint is not None:
        for t in range(p.T):
            m.add_hint(N[t], int(hint.N[t]))
        for j in range(len(inp.jobs)):
            m.add_hint(z[j], int(hint.z[j]))
        for c, v in n.items():
            m.add_hint(v, int(hint.n.get(c, 0)))
    solver = cp_solver(max(1, options.workers), options.seed, time_limit)
    if options.gap_limit > 0:
        solver.parameters.relative_gap_limit = options.gap_limit
    with GATE.outside():
        status = solver.solve(m, _Incumbents(trace))
    name = solver.status_name(status)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None, float(solver.best_objective_bound), name
    sol = Solution(
        N=np.array([solver.value(v) for v in N], dtype=np.int64),
        n={c: int(solver.value(v)) for c, v in n.items() if solver.value(v)},
        z=np.array([solver.value(v) for v in z], dtype=np.int64),
        objective=round(solver.objective_value),
        source="cpsat",
    )
    return sol, float(solver.best_objective_bound), name


def solve_master(
    p: Problem,
    cols: Columns,
    hint: Solution,
    time_limit: float,
    options: PlanOptions,
    trace: Trace,
) -> tuple[Solution | None, float, bool]:
    """The integer master over every column -> (solution, CP-SAT's bound, proven optimal)."""
    counts = [job.count for job in p.inp.jobs]
    sol, bound, status = _solve_ip(p, cols, counts, p.upper, 1.0, hint, time_limit, options, trace)
    return sol, bound, status == "OPTIMAL"


def _split_counts(counts: list[int], parts: int, rng: random.Random) -> list[list[int]]:
    """POP-style: each job class's count divided into `parts` near-equal random shares."""
    out = [[0] * len(counts) for _ in range(parts)]
    for j, k in enumerate(counts):
        base, extra = divmod(k, parts)
        lucky = set(rng.sample(range(parts), extra))
        for q in range(parts):
            out[q][j] = base + (1 if q in lucky else 0)
    return out


def solve_split(
    p: Problem,
    cols: Columns,
    parts: int,
    options: PlanOptions,
    deadline: float,
    say: ProgressFn,
) -> Solution | None:
    """The integer master split POP-style into `parts` sub-problems solved one after the
    other, each with its share of the time left; None when one finds no solution."""
    counts = [job.count for job in p.inp.jobs]
    shares = _split_counts(counts, parts, random.Random(options.seed))
    total_N = np.zeros(p.T, dtype=np.int64)
    total_n: Counter[int] = Counter()
    total_z = np.zeros(len(counts), dtype=np.int64)
    for q, share in enumerate(shares):
        upper = np.array(
            [int(u) // parts + (1 if q < int(u) % parts else 0) for u in p.upper],
            dtype=np.int64,
        )
        left = (deadline - time.perf_counter()) / (parts - q)
        sub, _, _ = _solve_ip(p, cols, share, upper, 1.0 / parts, None, left, options, None)
        say("integer master (split)", 0.5 + 0.5 * (q + 1) / parts)
        if sub is None:
            return None
        total_N += sub.N
        total_n.update(sub.n)
        total_z += sub.z
    return Solution.of(p, total_N, dict(total_n), total_z, "cpsat-split")
