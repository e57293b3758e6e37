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

`pen_j` = (the largest node cost + 1) x the job's weight (its pods), so placing work always
beats saving money; left-out work is the last resort (limits, quotas, budget).

Solve, in order (each stage within the time limit; CP-SAT always gets `num_workers`,
`random_seed` and `max_time_in_seconds`):

1. Greedy (`GreedyPacker`: first-fit decreasing / best fit, cheapest node per dominant
   share) -- the incumbent, the hint, and the answer if nothing beats it.
2. Column generation on the LP relaxation (GLOP): start from the greedy's node patterns
   and one homogeneous pattern per (shape, type); price new patterns per type with a
   greedy knapsack first, CP-SAT (exact, with GPU devices) when the greedy finds none. Each
   exact round yields a Lagrangian (Farley) lower bound valid for the whole problem; when
   the exact pricing proves no pattern has negative reduced cost, the LP value *is* the
   configuration-LP bound. When every maximal pattern can be enumerated (small
   instances), all are added and the integer master below is exact.
   The LP is then made integral four ways: every column rounded up (when the limits
   allow); rounded down with the left-over jobs packed by the greedy (onto nodes the LP
   left unused, or new ones), with and without first giving each fractional column one
   node (`_round_down_fill`); and iterated rounding, which re-solves the LP for what is
   left after each rounding (`_round_iterated`, until 15% of the limit past the LP
   share). The best of these, the greedy and `initial` is the incumbent.
3. The integer master over the generated patterns (CP-SAT, hinted with the incumbent) --
   optionally split POP-style into `parts` random sub-problems (job counts and limits
   divided, the answers summed), each a restricted master of its own.

Bounds reported (objective units, costs in the catalogue's unit):
`l1` (sum-of-sizes LP, `solver.plan.bounds`), `devices` (L1 with shared pods packed onto
GPU devices by arc flow, same module; absent without shared pods), `config_lp` (the
Lagrangian / LP bound of stage 2), `cpsat` (CP-SAT's bound on the restricted master: a
bound on the whole problem only when the patterns were enumerated completely -- otherwise
reported, not used). The gap is against the best valid bound.
"""

from __future__ import annotations

import copy
import itertools
import math
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
from ortools.linear_solver import pywraplp
from ortools.sat.python import cp_model

from solver.plan._model import MILLI, PlanInput, PlanResult, Unplaced
from solver.plan._pack import Arrays, GreedyPacker, arrays_of, pattern_fits
from solver.plan.bounds import device_bound, l1_bound, new_lp

__all__ = ["PlanOptions", "ProgressFn", "plan", "verify_plan"]

ProgressFn = Callable[[str, float], None]
Pattern = tuple[tuple[int, int], ...]  # sorted (shape, pods)
_EPS = 1e-7


@dataclass(frozen=True)
class PlanOptions:
    time_limit: float = 10.0  # seconds for the whole plan (greedy + LP + CP-SAT)
    workers: int = 1  # CP-SAT num_workers (set explicitly: it uses every core otherwise)
    seed: int = 0  # CP-SAT random_seed and the POP split's shuffle
    parts: int = 1  # POP-style split of the integer master (1: one model)
    lp_share: float = 0.6  # share of the time limit for column generation
    enumerate_limit: int = 3000  # enumerate every maximal pattern up to this many
    gap_limit: float = 0.0  # CP-SAT relative_gap_limit (0: run to the limit or optimum)


@dataclass
class _Trace:
    """Solutions seen: (seconds since start, objective) -- for time to first/best."""

    start: float
    points: list[tuple[float, int]] = field(default_factory=list)

    def add(self, objective: int) -> None:
        if not self.points or objective < self.points[-1][1]:
            self.points.append((time.perf_counter() - self.start, objective))


def _cost_scale(costs: list[float]) -> int:
    for k in range(5):
        scale: int = 10**k
        if all(abs(c * scale - round(c * scale)) < 1e-9 for c in costs):
            return scale
    return 10_000


class _Problem:
    """The planning question as arrays, integer costs and penalties."""

    def __init__(self, inp: PlanInput) -> None:
        self.inp = inp
        self.a: Arrays = arrays_of(inp)
        self.S = len(inp.shapes)
        self.T = len(inp.types)
        self.scale = _cost_scale([t.cost for t in inp.types])
        self.cost = np.array([round(t.cost * self.scale) for t in inp.types], dtype=np.int64)
        unit = int(self.cost.max(initial=0)) + 1
        self.pen = np.array([unit * j.weight for j in inp.jobs], dtype=np.int64)
        self.total_pods = int(self.a.demand.sum())
        self.block = [t.nodes_per_block or 1 for t in inp.types]
        self.upper = np.array(
            [
                t.max_count if t.max_count is not None else self.total_pods + self.block[i]
                for i, t in enumerate(inp.types)
            ],
            dtype=np.int64,
        )
        self.constant = int(sum(int(self.pen[j]) * job.count for j, job in enumerate(inp.jobs)))

    def tighten(self, incumbent: int) -> None:
        """N_t <= incumbent / cost_t: no optimal plan spends more than the incumbent."""
        for t in range(self.T):
            if self.cost[t] > 0:
                self.upper[t] = min(self.upper[t], incumbent // int(self.cost[t]))

    def fits(self, t: int, pattern: dict[int, int]) -> bool:
        return pattern_fits(self.inp.types[t], self.inp.shapes, pattern, self.a, t)

    def max_copies(self, s: int, t: int) -> int:
        """Most pods of shape s on one node of type t (bounded by the demand)."""
        n = int(self.a.demand[s])
        q = self.a.Q[s]
        for r in np.flatnonzero(q):
            n = min(n, int(self.a.C[t, r] // q[r]))
        if self.a.gpus[s]:
            devs = self.a.devices[t]
            d, g = int(self.a.milli[s]), int(self.a.gpus[s])
            if d >= MILLI:
                n = min(n, sum(1 for f in devs if f >= MILLI) // g)
            else:
                n = min(n, sum(f // d for f in devs))
        while n > 0 and not self.fits(t, {s: n}):
            n -= 1
        return max(n, 0)


# ----------------------------------------------------------------------------- patterns


class _Columns:
    def __init__(self) -> None:
        self.cols: list[tuple[int, Pattern]] = []
        self.index: dict[tuple[int, Pattern], int] = {}

    def add(self, t: int, pattern: dict[int, int]) -> int | None:
        key = (t, tuple(sorted((s, n) for s, n in pattern.items() if n > 0)))
        if not key[1] or key in self.index:
            return None
        self.index[key] = len(self.cols)
        self.cols.append(key)
        return self.index[key]


class _TooMany(Exception):
    pass


def _enumerate(p: _Problem, t: int, limit: int) -> list[dict[int, int]]:
    """Every maximal pattern of type t (raises _TooMany past `limit` patterns or work)."""
    shapes = [s for s in range(p.S) if p.a.compat[s, t] and p.a.demand[s]]
    caps = {s: p.max_copies(s, t) for s in shapes}
    shapes = [s for s in shapes if caps[s] > 0]
    out: list[dict[int, int]] = []
    work = [0]

    if len(shapes) > 16:
        raise _TooMany

    def dfs(k: int, pat: dict[int, int]) -> None:
        work[0] += 1
        if work[0] > 20 * limit:
            raise _TooMany
        if k == len(shapes):
            for s in shapes:
                if pat.get(s, 0) < caps[s]:
                    pat[s] = pat.get(s, 0) + 1
                    ok = p.fits(t, pat)
                    pat[s] -= 1
                    if ok:
                        return
            if any(pat.values()):
                out.append({s: n for s, n in pat.items() if n})
                if len(out) > limit:
                    raise _TooMany
            return
        s = shapes[k]
        n = 0
        while n < caps[s]:
            pat[s] = n + 1
            if not p.fits(t, pat):
                break
            n += 1
        for c in range(n, -1, -1):
            pat[s] = c
            dfs(k + 1, pat)
        pat[s] = 0

    dfs(0, {})
    return out


def _greedy_price(p: _Problem, t: int, pi: np.ndarray) -> tuple[dict[int, int], float]:
    """A good pattern for duals `pi` on type t: fill by value per dominant share."""
    a = p.a
    shapes = [s for s in range(p.S) if a.compat[s, t] and pi[s] > _EPS and a.demand[s]]
    if not shapes:
        return {}, 0.0
    cap = a.C[t].astype(np.float64)
    devs_total = max(sum(a.devices[t]), 1)

    def size(s: int) -> float:
        share = float((a.Q[s] / np.maximum(cap, 1)).max()) if a.Q.shape[1] else 0.0
        return max(share, float(a.gpus[s] * a.milli[s]) / devs_total, 1e-9)

    best: dict[int, int] = {}
    best_val = 0.0
    for order_key in (lambda s: -pi[s] / size(s), lambda s: -pi[s]):
        free = a.C[t].copy()
        dev = list(a.devices[t])
        pat: dict[int, int] = {}
        val = 0.0
        for s in sorted(shapes, key=order_key):
            g, d = int(a.gpus[s]), int(a.milli[s])
            while pat.get(s, 0) < a.demand[s] and (free >= a.Q[s]).all():
                if g:
                    fitting = sorted((f, k) for k, f in enumerate(dev) if f >= d)
                    if len(fitting) < g:
                        break
                    for _, k in fitting[:g]:
                        dev[k] -= d
                free -= a.Q[s]
                pat[s] = pat.get(s, 0) + 1
                val += float(pi[s])
        if val > best_val:
            best, best_val = pat, val
    return best, best_val


def _exact_price(
    p: _Problem,
    t: int,
    pi: np.ndarray,
    time_limit: float,
    seed: int,
    hint: dict[int, int] | None = None,
    devices: bool = False,
) -> tuple[dict[int, int], float, float, bool]:
    """CP-SAT pricing: max pi.a over patterns of type t -> (pattern, value, bound, optimal).

    `devices=False` relaxes the GPU device packing (fast); `devices=True` models each
    device (y[s,k] shared pods of shape s on device k, loads in decreasing order to break
    symmetry), so "optimal" is a proof for the real pattern set.
    """
    a = p.a
    shapes = [s for s in range(p.S) if a.compat[s, t] and pi[s] > _EPS and a.demand[s]]
    if not shapes:
        return {}, 0.0, 0.0, True
    m = cp_model.CpModel()
    x = {s: m.new_int_var(0, p.max_copies(s, t), f"x{s}") for s in shapes}
    for r in range(len(a.resources)):
        terms = [(int(a.Q[s, r]), x[s]) for s in shapes if a.Q[s, r]]
        if terms:
            m.add(sum(c * v for c, v in terms) <= int(a.C[t, r]))
    # GPU devices, relaxed: whole asks take full devices, shared asks only count their
    # milli (the device bin packing is checked afterwards). A relaxation, so the bound
    # stays valid; a pattern that does not pack is repaired by dropping shared pods.
    devs = a.devices[t]
    full = sum(1 for f in devs if f >= MILLI)
    whole = [s for s in shapes if a.gpus[s] and a.milli[s] >= MILLI]
    shared = [s for s in shapes if a.gpus[s] and a.milli[s] < MILLI]
    if whole:
        m.add(sum(int(a.gpus[s]) * x[s] for s in whole) <= full)
    if whole or shared:
        m.add(sum(int(a.gpus[s] * a.milli[s]) * x[s] for s in whole + shared) <= int(sum(devs)))
    if devices and shared:
        w = {k: m.new_bool_var(f"w{k}") for k, f in enumerate(devs) if f >= MILLI}
        if whole:
            m.add(sum(int(a.gpus[s]) * x[s] for s in whole) == sum(w.values()))
        loads = []
        for k, f in enumerate(devs):
            ys = {s: m.new_int_var(0, f // int(a.milli[s]), f"y{s}_{k}") for s in shared}
            load = m.new_int_var(0, f, f"load{k}")
            m.add(load == sum(int(a.milli[s]) * v for s, v in ys.items()))
            if k in w:
                m.add(load == 0).only_enforce_if(w[k])
            loads.append((f, load, ys))
        for s in shared:
            m.add(sum(ys[s] for _, _, ys in loads) == x[s])
        for (f1, l1, _), (f2, l2, _) in itertools.pairwise(loads):
            if f1 == f2 == MILLI:
                m.add(l1 >= l2)
    # integer objective: K * pi rounded down; the bound is corrected back up below
    top = float(max(pi[s] for s in shapes))
    K = 1e9 / top
    coef = {s: math.floor(float(pi[s]) * K) for s in shapes}
    m.maximize(sum(coef[s] * x[s] for s in shapes))
    if hint:
        for s in shapes:
            m.add_hint(x[s], int(hint.get(s, 0)))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = seed
    solver.parameters.max_time_in_seconds = max(0.05, time_limit)
    status = solver.solve(m)
    most = sum(p.max_copies(s, t) for s in shapes)  # each pod loses < 1/K by the rounding
    bound = (solver.best_objective_bound + most) / K
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return {}, 0.0, bound, False
    pat = {s: int(solver.value(x[s])) for s in shapes if solver.value(x[s])}
    relaxed_ok = p.fits(t, pat)
    while not p.fits(t, pat):  # repair: drop the smallest-value shared pod
        drop = min((s for s in pat if a.gpus[s] and a.milli[s] < MILLI), key=lambda s: pi[s])
        pat[drop] -= 1
        if not pat[drop]:
            del pat[drop]
    value = sum(float(pi[s]) * n for s, n in pat.items())
    return pat, value, bound, status == cp_model.OPTIMAL and relaxed_ok


# ----------------------------------------------------------------------------- the LP


class _Master:
    """The configuration LP (GLOP), grown one column at a time."""

    def __init__(self, p: _Problem) -> None:
        self.p = p
        lp = self.lp = new_lp()
        inf = lp.infinity()
        inp = p.inp
        self.N = [lp.NumVar(0.0, float(p.upper[t]), f"N{t}") for t in range(p.T)]
        self.z = [lp.NumVar(0.0, float(j.count), f"z{i}") for i, j in enumerate(inp.jobs)]
        self.cover = {s: lp.Constraint(0.0, inf) for s in range(p.S) if p.a.demand[s]}
        for j, job in enumerate(inp.jobs):
            for s, m in job.shapes:
                if s in self.cover:  # no row: no demand left, so z_j is 0
                    self.cover[s].SetCoefficient(self.z[j], -float(m))
        self.link = [lp.Constraint(0.0, inf) for _ in range(p.T)]
        for t in range(p.T):
            self.link[t].SetCoefficient(self.N[t], 1.0)
        # limit rows: (constraint, limit, coefficient per type)
        self.limits: list[tuple[pywraplp.Constraint, float, list[float]]] = []
        for model, limit in inp.card_quota:
            h = [
                float(tt.gpus) if (not tt.existing and tt.gpu_model == model) else 0.0
                for tt in inp.types
            ]
            self._limit(float(limit), h)
        if inp.budget is not None:
            h = [float(p.cost[t]) if not tt.existing else 0.0 for t, tt in enumerate(inp.types)]
            self._limit(float(inp.budget) * p.scale + 1e-6, h)
        obj = lp.Objective()
        for t in range(p.T):
            obj.SetCoefficient(self.N[t], float(p.cost[t]))
        for j in range(len(inp.jobs)):
            obj.SetCoefficient(self.z[j], -float(p.pen[j]))
        obj.SetMinimization()
        self.n: list[pywraplp.Variable] = []

    def _limit(self, limit: float, h: list[float]) -> None:
        row = self.lp.Constraint(-self.lp.infinity(), limit)
        for t, coef in enumerate(h):
            if coef:
                row.SetCoefficient(self.N[t], coef)
        self.limits.append((row, limit, h))

    def add(self, t: int, pattern: Pattern) -> None:
        v = self.lp.NumVar(0.0, self.lp.infinity(), f"n{len(self.n)}")
        for s, a in pattern:
            if s in self.cover:
                self.cover[s].SetCoefficient(v, float(a))
        self.link[t].SetCoefficient(v, -1.0)
        self.n.append(v)

    def solve(self) -> float:
        status = self.lp.Solve()
        if status != pywraplp.Solver.OPTIMAL:
            return math.inf
        return float(self.lp.Objective().Value()) + self.p.constant

    def duals(self) -> tuple[np.ndarray, np.ndarray, list[float]]:
        pi = np.zeros(self.p.S)
        for s, row in self.cover.items():
            pi[s] = max(0.0, row.dual_value())
        sigma = np.array([max(0.0, row.dual_value()) for row in self.link])
        rho = [min(0.0, row.dual_value()) for row, _, _ in self.limits]
        return pi, sigma, rho

    def lagrangian(
        self, pi: np.ndarray, sigma: np.ndarray, rho: list[float], ub: np.ndarray
    ) -> float:
        """A lower bound on the integer objective, valid for any pi >= 0, sigma >= 0,
        rho <= 0, given ub[t] >= max over patterns of type t of pi . a."""
        p = self.p
        value = float(p.constant)
        for j, job in enumerate(p.inp.jobs):
            gain = sum(pi[s] * m for s, m in job.shapes) - float(p.pen[j])
            value += job.count * min(0.0, gain)
        for t in range(p.T):
            value += float(p.upper[t]) * min(0.0, float(sigma[t]) - float(ub[t]))
            reduced = float(p.cost[t]) - float(sigma[t])
            reduced -= sum(r * h[t] for r, (_, _, h) in zip(rho, self.limits, strict=True))
            value += float(p.upper[t]) * min(0.0, reduced)
        value += sum(r * lim for r, (_, lim, _) in zip(rho, self.limits, strict=True))
        return value


# ----------------------------------------------------------------------------- the IP


@dataclass
class _Solution:
    N: np.ndarray  # [T] nodes per type
    n: dict[int, int]  # column -> nodes
    z: np.ndarray  # [J] jobs placed
    objective: int
    source: str


def _objective(p: _Problem, N: np.ndarray, z: np.ndarray) -> int:
    placed = sum(int(p.pen[j]) * int(z[j]) for j in range(len(p.inp.jobs)))
    return int((p.cost * N).sum()) + p.constant - placed


def _solve_ip(
    p: _Problem,
    cols: _Columns,
    counts: list[int],
    upper: np.ndarray,
    limit_scale: float,
    hint: _Solution | None,
    time_limit: float,
    options: PlanOptions,
    trace: _Trace | None,
    offset: int,
) -> tuple[_Solution | None, float, str]:
    """CP-SAT over the generated patterns for job counts `counts` -> (solution, bound, status)."""
    inp = p.inp
    m = cp_model.CpModel()
    demand = np.zeros(p.S, dtype=np.int64)
    for j, job in enumerate(inp.jobs):
        for s, mult in job.shapes:
            demand[s] += mult * counts[j]
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
    by_type: dict[int, list[cp_model.IntVar]] = {}
    for c, v in n.items():
        by_type.setdefault(cols.cols[c][0], []).append(v)
    for t, vs in by_type.items():
        m.add(sum(vs) <= N[t])
    for model, lim in inp.card_quota:
        terms = [
            (tt.gpus, N[t])
            for t, tt in enumerate(inp.types)
            if not tt.existing and tt.gpu_model == model and tt.gpus
        ]
        if terms:
            m.add(sum(g * v for g, v in terms) <= int(lim * limit_scale))
    if inp.budget is not None:
        terms = [(int(p.cost[t]), N[t]) for t, tt in enumerate(inp.types) if not tt.existing]
        m.add(sum(c * v for c, v in terms) <= math.floor(inp.budget * p.scale * limit_scale + 1e-6))
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
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = max(1, options.workers)
    solver.parameters.random_seed = options.seed
    solver.parameters.max_time_in_seconds = max(0.05, time_limit)
    if options.gap_limit > 0:
        solver.parameters.relative_gap_limit = options.gap_limit

    class _Callback(cp_model.CpSolverSolutionCallback):
        def on_solution_callback(self) -> None:
            if trace is not None:
                trace.add(round(self.objective_value) + offset)

    status = solver.solve(m, _Callback())
    name = solver.status_name(status)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None, float(solver.best_objective_bound), name
    sol = _Solution(
        N=np.array([solver.value(v) for v in N], dtype=np.int64),
        n={c: int(solver.value(v)) for c, v in n.items() if solver.value(v)},
        z=np.array([solver.value(v) for v in z], dtype=np.int64),
        objective=round(solver.objective_value),
        source="cpsat",
    )
    return sol, float(solver.best_objective_bound), name


@dataclass(frozen=True)
class _LPPoint:
    """The LP's values after column generation (read once: the rounding adds columns)."""

    n: list[float]  # per column
    N: list[float]  # per type
    z: list[float]  # per job class

    @staticmethod
    def of(master: _Master) -> _LPPoint:
        return _LPPoint(
            n=[v.solution_value() for v in master.n],
            N=[v.solution_value() for v in master.N],
            z=[v.solution_value() for v in master.z],
        )


def _round_up(p: _Problem, cols: _Columns, lp: _LPPoint) -> _Solution | None:
    """Every LP column rounded up (covers stay covered), jobs placed as the LP places them
    rounded down; None when that breaks a limit."""
    n = {c: math.ceil(v - 1e-6) for c, v in enumerate(lp.n)}
    n = {c: k for c, k in n.items() if k > 0}
    z = np.array([math.floor(v + 1e-6) for v in lp.z], dtype=np.int64)
    N = np.zeros(p.T, dtype=np.int64)
    for c, k in n.items():
        N[cols.cols[c][0]] += k
    for t in range(p.T):
        N[t] = -(-int(N[t]) // p.block[t]) * p.block[t]
    if not _within_limits(p, N):
        return None
    sol = _Solution(N, n, z, 0, "lp-round-up")
    sol.objective = _objective(p, N, z)
    return sol


def _within_limits(p: _Problem, N: np.ndarray) -> bool:
    """maxCount, card quotas and the budget hold for node counts N."""
    if (p.upper < N).any():
        return False
    inp = p.inp
    for model, lim in inp.card_quota:
        used = sum(
            int(N[t]) * tt.gpus
            for t, tt in enumerate(inp.types)
            if not tt.existing and tt.gpu_model == model
        )
        if used > lim:
            return False
    if inp.budget is not None:
        spent = sum(int(N[t]) * tt.cost for t, tt in enumerate(inp.types) if not tt.existing)
        if spent > inp.budget + 1e-9:
            return False
    return True


def _round_down_fill(
    p: _Problem, cols: _Columns, lp: _LPPoint, fractional_nodes: bool
) -> _Solution | None:
    """The LP solution made integral: (1) every column rounded down; (2) when
    `fractional_nodes`, the columns by fractional part, largest first, one node each while
    the type has nodes left (existing classes: their count; bought types: the LP's count
    rounded up), holding only pods not yet covered -- what a fixed, oversubscribed cluster
    needs, where (4) alone refills hundreds of nodes; (3) jobs placed while their pods are
    covered; (4) the jobs left over packed by the greedy onto nodes still unused or new
    ones. None when that breaks a limit."""
    inp = p.inp
    n: Counter[int] = Counter()
    opened = np.zeros(p.T, dtype=np.int64)
    cover = np.zeros(p.S, dtype=np.int64)
    fractional: list[tuple[float, int]] = []
    for c, value in enumerate(lp.n):
        k = math.floor(value + 1e-6)
        if value - k > 1e-6:
            fractional.append((k - value, c))
        if k > 0:
            t, pattern = cols.cols[c]
            n[c] += k
            opened[t] += k
            for s, a in pattern:
                cover[s] += k * a
    cap = np.minimum(p.upper, np.array([math.ceil(v - 1e-6) for v in lp.N], dtype=np.int64))
    for _, c in sorted(fractional) if fractional_nodes else ():
        t, pattern = cols.cols[c]
        if opened[t] >= cap[t]:
            continue
        held = {s: min(a, int(p.a.demand[s] - cover[s])) for s, a in pattern}
        held = {s: a for s, a in held.items() if a > 0}
        if held:
            _add_node(cols, n, t, held)
            opened[t] += 1
            for s, a in held.items():
                cover[s] += a
    z = np.zeros(len(inp.jobs), dtype=np.int64)
    for j, job in enumerate(inp.jobs):
        z[j] = min(job.count, min(int(cover[s]) // m for s, m in job.shapes))
        for s, m in job.shapes:
            cover[s] -= m * int(z[j])
    source = "lp-round-fill" if fractional_nodes else "lp-round-down"
    return _finish_with_greedy(p, cols, n, opened, z, source)


def _round_iterated(
    p: _Problem, cols: _Columns, deadline: float, rounds: int = 8
) -> _Solution | None:
    """Iterated rounding: round the LP's columns down, re-solve the LP over every column
    for the jobs and nodes that are left, and repeat while it fixes nodes (at most
    `rounds` times or until `deadline`); the greedy packs what is left. Each re-solve sees
    what the earlier roundings used, so it wastes far less than one rounding of a
    solution with hundreds of fractional columns. None when that breaks a limit."""
    inp = p.inp
    n: Counter[int] = Counter()
    used = np.zeros(p.T, dtype=np.int64)
    cover = np.zeros(p.S, dtype=np.int64)
    z = np.zeros(len(inp.jobs), dtype=np.int64)
    for _ in range(rounds):
        if time.perf_counter() > deadline:
            break
        left = [job.count - int(z[j]) for j, job in enumerate(inp.jobs)]
        sub = copy.copy(p)
        sub.upper = p.upper - used
        sub.inp = replace(
            inp,
            jobs=tuple(replace(job, count=k) for job, k in zip(inp.jobs, left, strict=True)),
            card_quota=tuple((m, lim - _added_gpus(p, used, m)) for m, lim in inp.card_quota),
            budget=None if inp.budget is None else inp.budget - _spent(p, used),
        )
        demand = np.zeros(p.S, dtype=np.int64)
        for job, k in zip(inp.jobs, left, strict=True):
            for s, m in job.shapes:
                demand[s] += m * k
        sub.a = replace(p.a, demand=demand)
        master = _Master(sub)
        for t, column in cols.cols:
            master.add(t, column)
        if not math.isfinite(master.solve()):
            break
        fixed = 0
        for c, v in enumerate(master.n):
            k = math.floor(v.solution_value() + 1e-6)
            if k > 0:
                t, pattern = cols.cols[c]
                n[c] += k
                used[t] += k
                fixed += k
                for s, a in pattern:
                    cover[s] += k * a
        for j, job in enumerate(inp.jobs):
            more = min(job.count - int(z[j]), min(int(cover[s]) // m for s, m in job.shapes))
            z[j] += more
            for s, m in job.shapes:
                cover[s] -= m * more
        if not fixed:
            break
    return _finish_with_greedy(p, cols, n, used, z, "lp-round-iterated")


def _finish_with_greedy(
    p: _Problem,
    cols: _Columns,
    n: Counter[int],
    used: np.ndarray,
    z: np.ndarray,
    source: str,
) -> _Solution | None:
    """A partial integral plan (`n` nodes per column, `used` per type, `z` jobs placed)
    completed by the greedy for the jobs left; None when that breaks a limit."""
    inp = p.inp
    packer = GreedyPacker(inp, p.a, opened=np.minimum(used, p.upper))
    placed, nodes = packer.run([job.count - int(z[j]) for j, job in enumerate(inp.jobs)])
    N = used.copy()
    for t, packed in nodes:
        if packed:
            _add_node(cols, n, t, packed)
            N[t] += 1
    z = z + np.array(placed, dtype=np.int64)
    for t in range(p.T):
        N[t] = -(-int(N[t]) // p.block[t]) * p.block[t]
    if not _within_limits(p, N):
        return None
    sol = _Solution(N, dict(n), z, 0, source)
    sol.objective = _objective(p, N, z)
    return sol


def _added_gpus(p: _Problem, N: np.ndarray, model: str) -> int:
    return sum(
        int(N[t]) * tt.gpus
        for t, tt in enumerate(p.inp.types)
        if not tt.existing and tt.gpu_model == model
    )


def _spent(p: _Problem, N: np.ndarray) -> float:
    return sum(int(N[t]) * tt.cost for t, tt in enumerate(p.inp.types) if not tt.existing)


def _add_node(cols: _Columns, n: Counter[int], t: int, pattern: dict[int, int]) -> None:
    """One more node of type t packed with `pattern` (a new column when it is new)."""
    cols.add(t, pattern)
    key = (t, tuple(sorted((s, k) for s, k in pattern.items() if k > 0)))
    n[cols.index[key]] += 1


def _from_packing(
    p: _Problem, cols: _Columns, nodes: list[tuple[int, dict[int, int]]]
) -> _Solution:
    """A known packing as a solution: its node patterns become columns; jobs are placed
    class by class while their pods are covered."""
    n: Counter[int] = Counter()
    N = np.zeros(p.T, dtype=np.int64)
    cover = np.zeros(p.S, dtype=np.int64)
    for t, pattern in nodes:
        if not pattern:
            continue
        c = cols.add(t, pattern)
        key = (t, tuple(sorted((s, k) for s, k in pattern.items() if k > 0)))
        n[cols.index[key] if c is None else c] += 1
        N[t] += 1
        for s, k in pattern.items():
            cover[s] += k
    z = np.zeros(len(p.inp.jobs), dtype=np.int64)
    for j, job in enumerate(p.inp.jobs):
        fit = min(int(cover[s]) // m for s, m in job.shapes)
        z[j] = min(job.count, fit)
        for s, m in job.shapes:
            cover[s] -= m * int(z[j])
    for t in range(p.T):
        N[t] = -(-int(N[t]) // p.block[t]) * p.block[t]
    sol = _Solution(N, dict(n), z, 0, "start")
    sol.objective = _objective(p, N, z) if not (p.upper < N).any() else 1 << 62
    return sol


def _split_counts(counts: list[int], parts: int, rng: random.Random) -> list[list[int]]:
    """POP-style: each job class's count divided into `parts` near-equal random shares."""
    out = [[0] * len(counts) for _ in range(parts)]
    for j, k in enumerate(counts):
        base, extra = divmod(k, parts)
        lucky = set(rng.sample(range(parts), extra))
        for q in range(parts):
            out[q][j] = base + (1 if q in lucky else 0)
    return out


# ----------------------------------------------------------------------------- plan


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
    start_nodes = initial
    start = t0 = time.perf_counter()
    deadline = start + options.time_limit
    say = progress or (lambda stage, frac: None)
    p = _Problem(inp)
    trace = _Trace(start)
    stats: dict[str, float] = {"shapes": p.S, "types": p.T, "job_classes": len(inp.jobs)}
    notes: list[str] = []

    # 1. greedy
    say("greedy", 0.0)
    packer = GreedyPacker(inp, p.a)
    placed, nodes = packer.run()
    cols = _Columns()
    g_n: Counter[int] = Counter()
    for t, pattern in nodes:
        c = cols.add(t, pattern)
        key = (t, tuple(sorted((s, k) for s, k in pattern.items() if k > 0)))
        g_n[cols.index[key] if c is None else c] += 1
    g_N = np.zeros(p.T, dtype=np.int64)
    for t, _ in nodes:
        g_N[t] += 1
    for t in range(p.T):  # whole blocks
        b = p.block[t]
        g_N[t] = -(-int(g_N[t]) // b) * b
    greedy = _Solution(g_N, dict(g_n), np.array(placed, dtype=np.int64), 0, "greedy")
    greedy.objective = _objective(p, g_N, greedy.z)
    if (g_N > p.upper).any():
        notes.append("the greedy's whole blocks exceed a maxCount; it is not a valid plan")
        greedy.objective = 1 << 62
    else:
        trace.add(greedy.objective)
    stats["greedy_seconds"] = time.perf_counter() - t0
    stats["greedy_objective"] = greedy.objective / p.scale
    best = greedy
    if start_nodes:
        given = _from_packing(p, cols, start_nodes)
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
    complete = True
    for t in range(p.T):
        try:
            for pattern in _enumerate(p, t, options.enumerate_limit - len(cols.cols)):
                cols.add(t, pattern)
        except _TooMany:
            complete = False
            break
        if time.perf_counter() > lp_deadline:
            complete = False
            break
    if not complete:
        for s in range(p.S):
            for t in range(p.T):
                if p.a.compat[s, t] and p.a.demand[s]:
                    k = p.max_copies(s, t)
                    if k:
                        cols.add(t, {s: k})
    master = _Master(p)
    for t, column in cols.cols:
        master.add(t, column)
    config_lb = -math.inf
    lp_value = master.solve()
    converged = complete
    rounds = 0
    while not converged and inp.jobs and time.perf_counter() < lp_deadline:
        rounds += 1
        pi, sigma, rho = master.duals()
        added = 0
        for t in range(p.T):
            if p.upper[t] <= 0:
                continue
            pattern, value = _greedy_price(p, t, pi)
            if value > sigma[t] + 1e-6 * max(1.0, value) and cols.add(t, pattern) is not None:
                master.add(*cols.cols[-1])
                added += 1
        if not added:
            # exact pricing: the relaxed model for every type first (fast), the device
            # model only where the relaxed bound cannot rule out an improving pattern
            ub = np.zeros(p.T)
            unsure: list[int] = []
            for t in range(p.T):
                if p.upper[t] <= 0:
                    continue
                left = lp_deadline - time.perf_counter()
                if left <= 0.01:
                    ub[t] = math.inf
                    continue
                tol = 1e-6 * max(1.0, float(sigma[t]))
                hint, _ = _greedy_price(p, t, pi)
                pattern, value, bound, _ = _exact_price(
                    p, t, pi, min(left, 0.5), options.seed, hint=hint
                )
                ub[t] = bound * (1 + 1e-9) + 1e-9
                if value > sigma[t] + tol and cols.add(t, pattern) is not None:
                    master.add(*cols.cols[-1])
                    added += 1
                elif bound > sigma[t] + tol:
                    unsure.append(t)
            if not added:
                for t in unsure:
                    left = lp_deadline - time.perf_counter()
                    if left <= 0.01:
                        break
                    tol = 1e-6 * max(1.0, float(sigma[t]))
                    hint, _ = _greedy_price(p, t, pi)
                    pattern, value, bound, _ = _exact_price(
                        p, t, pi, min(left, 2.0), options.seed, hint=hint, devices=True
                    )
                    ub[t] = min(ub[t], bound * (1 + 1e-9) + 1e-9)
                    if value > sigma[t] + tol and cols.add(t, pattern) is not None:
                        master.add(*cols.cols[-1])
                        added += 1
            if np.isfinite(ub).all():
                config_lb = max(config_lb, master.lagrangian(pi, sigma, rho, ub))
            proven = all(
                ub[t] <= sigma[t] + 1e-6 * max(1.0, float(sigma[t]))
                for t in range(p.T)
                if p.upper[t] > 0
            )
            if not added and proven:
                converged = True
                break
        lp_value = master.solve()
        say(
            "column generation",
            min(0.5, 0.1 + 0.4 * (time.perf_counter() - start) / max(1e-9, lp_deadline - start)),
        )
    if inp.jobs and math.isfinite(lp_value):
        point = _LPPoint.of(master)
        for rounded in (
            _round_up(p, cols, point),
            _round_down_fill(p, cols, point, fractional_nodes=False),
            _round_down_fill(p, cols, point, fractional_nodes=True),
            _round_iterated(p, cols, start + options.time_limit * (options.lp_share + 0.15)),
        ):
            if rounded is not None:
                stats[f"{rounded.source}_objective"] = rounded.objective / p.scale
                trace.add(rounded.objective)
                if rounded.objective < best.objective:
                    best = rounded
    stats["lp_rounds"] = rounds
    stats["columns"] = len(cols.cols)
    stats["lp_value"] = lp_value / p.scale if math.isfinite(lp_value) else -1.0
    stats["lp_seconds"] = time.perf_counter() - start
    say("integer master", 0.5)

    # 3. the integer master over the patterns (POP split when asked)
    counts = [job.count for job in inp.jobs]
    cpsat_bound: float | None = None
    parts = max(1, options.parts)
    left = deadline - time.perf_counter()
    if inp.jobs and left > 0.05 and cols.cols:
        if parts == 1:
            sol, bound, status = _solve_ip(
                p, cols, counts, p.upper, 1.0, best, left, options, trace, 0
            )
            stats["cpsat_status_optimal"] = float(status == "OPTIMAL")
            cpsat_bound = bound
            if sol is not None and sol.objective < best.objective:
                best = sol
        else:
            rng = random.Random(options.seed)
            shares = _split_counts(counts, parts, rng)
            total_N = np.zeros(p.T, dtype=np.int64)
            total_n: Counter[int] = Counter()
            total_z = np.zeros(len(counts), dtype=np.int64)
            ok = True
            for q, share in enumerate(shares):
                upper = np.array(
                    [int(u) // parts + (1 if q < int(u) % parts else 0) for u in p.upper],
                    dtype=np.int64,
                )
                left = (deadline - time.perf_counter()) / (parts - q)
                sub, _, _ = _solve_ip(
                    p, cols, share, upper, 1.0 / parts, None, left, options, None, 0
                )
                say("integer master (split)", 0.5 + 0.5 * (q + 1) / parts)
                if sub is None:
                    ok = False
                    break
                total_N += sub.N
                total_n.update(sub.n)
                total_z += sub.z
            if ok:
                sol = _Solution(total_N, dict(total_n), total_z, 0, "cpsat-split")
                sol.objective = _objective(p, total_N, total_z)
                trace.add(sol.objective)
                if sol.objective < best.objective:
                    best = sol
            stats["parts"] = parts
    if best.source == "greedy" and best.objective >= 1 << 62:
        raise_note = "no valid plan was found within the limits and the time"
        notes.append(raise_note)

    bounds_int: dict[str, float | None] = {
        "l1": l1,
        "devices": dev_lb,
        "config_lp": math.ceil(config_lb - 1e-6 * max(1.0, abs(config_lb)))
        if math.isfinite(config_lb)
        else None,
        "cpsat": cpsat_bound if parts == 1 else None,
    }
    valid = [v for k, v in bounds_int.items() if v is not None and (k != "cpsat" or complete)]
    bound = max(valid) if valid else 0.0
    bound = min(bound, float(best.objective))
    say("done", 1.0)
    result = _decode(p, cols, best, bound, bounds_int, complete, trace, stats, notes)
    result.seconds = time.perf_counter() - start
    return result


# ----------------------------------------------------------------------------- decode


def _trim(
    p: _Problem, cols: _Columns, sol: _Solution, placed: np.ndarray
) -> dict[int, list[tuple[int, dict[int, int]]]]:
    """The chosen patterns with over-covered pods removed: an exact packing per type."""
    groups: dict[int, list[tuple[int, dict[int, int]]]] = {}
    for c, k in sorted(sol.n.items()):
        t, key = cols.cols[c]
        groups.setdefault(t, []).append((k, dict(key)))
    covered = np.zeros(p.S, dtype=np.int64)
    for items in groups.values():
        for k, pattern in items:
            for s, a in pattern.items():
                covered[s] += k * a
    excess = covered - placed
    for s in (int(x) for x in np.flatnonzero(excess > 0)):
        e = int(excess[s])
        for items in groups.values():
            i = 0
            while e > 0 and i < len(items):
                k, pattern = items[i]
                a = pattern.get(s, 0)
                if not a or not k:
                    i += 1
                    continue
                take = min(e, a)
                smaller = {x: n for x, n in pattern.items() if x != s}
                if a - take:
                    smaller[s] = a - take
                e -= take
                if k == 1:
                    items.pop(i)
                else:
                    items[i] = (k - 1, pattern)
                items.append((1, smaller))
            if e == 0:
                break
    out: dict[int, list[tuple[int, dict[int, int]]]] = {}
    for t, items in groups.items():
        merged: Counter[tuple[tuple[int, int], ...]] = Counter()
        for k, pattern in items:
            key = tuple(sorted((x, n) for x, n in pattern.items() if n))
            if k and key:
                merged[key] += k
        out[t] = [(k, dict(key)) for key, k in sorted(merged.items())]
    return out


def _tight_limits(p: _Problem, N: np.ndarray, shapes: list[int]) -> list[str]:
    """The limits on the node types a job could use, with what the plan uses of them."""
    inp = p.inp
    usable = [t for t in range(p.T) if all(p.a.compat[s, t] for s in shapes)]
    if not usable:
        usable = [t for t in range(p.T) if any(p.a.compat[s, t] for s in shapes)]
    out = []
    for t in usable:
        tt = inp.types[t]
        if tt.max_count is not None:
            what = "existing nodes" if tt.existing else "maxCount"
            out.append(f"{tt.name} {what} {tt.max_count} ({int(N[t])} used)")
    models = {inp.types[t].gpu_model for t in usable}
    for model, lim in inp.card_quota:
        if model in models:
            used = sum(
                int(N[t]) * tt.gpus
                for t, tt in enumerate(inp.types)
                if not tt.existing and tt.gpu_model == model
            )
            out.append(f"cardQuota {model} {lim} GPUs ({used} used)")
    if inp.budget is not None:
        spent = sum(int(N[t]) * tt.cost for t, tt in enumerate(inp.types) if not tt.existing)
        out.append(f"budget {inp.budget:g} ({spent:g} spent)")
    return out


def _decode(
    p: _Problem,
    cols: _Columns,
    sol: _Solution,
    bound: float,
    bounds_int: dict[str, float | None],
    complete: bool,
    trace: _Trace,
    stats: dict[str, float],
    notes: list[str],
) -> PlanResult:
    inp = p.inp
    placed = np.zeros(p.S, dtype=np.int64)
    for j, job in enumerate(inp.jobs):
        for s, m in job.shapes:
            placed[s] += m * int(sol.z[j])
    packing = _trim(p, cols, sol, placed)
    unplaced: list[Unplaced] = []
    reasons: Counter[str] = Counter()
    by_reason: dict[str, list[tuple[str, int]]] = {}
    for name, pods, reason in inp.infeasible:
        by_reason.setdefault(reason, []).append((name, pods))
    for j, job in enumerate(inp.jobs):
        left = job.count - int(sol.z[j])
        if left <= 0:
            continue
        tight = _tight_limits(p, sol.N, [s for s, _ in job.shapes])
        reason = "does not fit within the limits: " + (
            "; ".join(tight) if tight else "no plan placing it was found in the time limit"
        )
        names = list(job.names[int(sol.z[j]) :]) or list(job.names[:1])
        for n in range(left):
            name = names[n] if n < len(names) else f"{job.names[0]}..."
            by_reason.setdefault(reason, []).append((name, job.pods))
    for reason, jobs in sorted(by_reason.items()):
        pods = sum(k for _, k in jobs)
        reasons[reason] += pods
        unplaced.append(
            Unplaced(jobs=tuple(n for n, _ in jobs[:20]), count=len(jobs), pods=pods, reason=reason)
        )
    # utilisation of the planned cluster: every existing node plus the added ones
    util: dict[str, dict[str, float]] = {}
    nodes = np.array(
        [(tt.max_count or 0) if tt.existing else int(sol.N[t]) for t, tt in enumerate(inp.types)],
        dtype=np.int64,
    )
    for r, res in enumerate(p.a.resources):
        used = float((placed * p.a.Q[:, r]).sum())
        cap = float((nodes * p.a.C[:, r]).sum())
        util[res] = {"used": used, "capacity": cap, "ratio": used / cap if cap else 0.0}
    gpu_used: Counter[str] = Counter()
    gpu_cap: Counter[str] = Counter()
    for t, items in packing.items():
        model = inp.types[t].gpu_model or "any"
        for k, pattern in items:
            gpu_used[model] += k * sum(
                n * int(p.a.gpus[s] * p.a.milli[s]) for s, n in pattern.items()
            )
    for t, tt in enumerate(inp.types):
        if tt.gpus:
            gpu_cap[tt.gpu_model or "any"] += int(nodes[t]) * sum(p.a.devices[t])
    if gpu_cap:
        total_used, total_cap = sum(gpu_used.values()), sum(gpu_cap.values())
        util["gpu"] = {
            "used": total_used / MILLI,
            "capacity": total_cap / MILLI,
            "ratio": total_used / total_cap if total_cap else 0.0,
        }
        for model in sorted(gpu_cap):
            util[f"gpu[{model}]"] = {
                "used": gpu_used[model] / MILLI,
                "capacity": gpu_cap[model] / MILLI,
                "ratio": gpu_used[model] / gpu_cap[model] if gpu_cap[model] else 0.0,
            }
    objective = float(sol.objective)
    gap = (objective - bound) / max(abs(objective), 1e-9) if objective > bound + 1e-9 else 0.0
    status = (
        "OPTIMAL"
        if gap == 0.0
        else ("HEURISTIC" if sol.source in ("greedy", "start") else "FEASIBLE")
    )
    if trace.points:
        stats["first_solution_seconds"] = trace.points[0][0]
        stats["best_solution_seconds"] = (
            next(s for s, v in trace.points if v <= sol.objective)
            if any(v <= sol.objective for _, v in trace.points)
            else trace.points[-1][0]
        )
    stats["cost_scale"] = p.scale
    if not complete and bounds_int.get("cpsat") is not None:
        notes.append(
            "bounds.cpsat is CP-SAT's bound over the generated patterns only; it is not a "
            "bound on the whole problem and is not used for the gap"
        )
    scale = float(p.scale)
    return PlanResult(
        status=status,
        add={
            tt.name: int(sol.N[t])
            for t, tt in enumerate(inp.types)
            if not tt.existing and sol.N[t] > 0
        },
        use={tt.name: int(sol.N[t]) for t, tt in enumerate(inp.types) if tt.existing and sol.N[t]},
        cost=float(sum(int(sol.N[t]) * int(p.cost[t]) for t in range(p.T))) / scale,
        objective=objective / scale,
        bound=bound / scale,
        gap=gap,
        bounds={k: (None if v is None else v / scale) for k, v in bounds_int.items()},
        unplaced=unplaced,
        reasons=dict(reasons),
        utilisation=util,
        placed_pods=int(placed.sum()),
        total_pods=int(placed.sum())
        + sum(k for _, k, _ in inp.infeasible)
        + sum((job.count - int(sol.z[j])) * job.pods for j, job in enumerate(inp.jobs)),
        stats=stats,
        notes=notes,
        packing={
            inp.types[t].name: [(k, dict(pattern)) for k, pattern in items]
            for t, items in packing.items()
        },
    )


def verify_plan(inp: PlanInput, result: PlanResult) -> list[str]:
    """Independent check of a plan's packing: every node's pods fit its type, every placed
    job is covered exactly, counts within maxCount / blocks. Returns the problems found."""
    problems: list[str] = []
    a = arrays_of(inp)
    index = {t.name: i for i, t in enumerate(inp.types)}
    covered = np.zeros(len(inp.shapes), dtype=np.int64)
    nodes = {**result.add, **result.use}
    for name, items in result.packing.items():
        t = index[name]
        tt = inp.types[t]
        used = sum(k for k, _ in items)
        if used > nodes.get(name, 0):
            problems.append(f"{name}: {used} nodes packed but {nodes.get(name, 0)} planned")
        for k, pattern in items:
            if not pattern_fits(tt, inp.shapes, pattern, a, t):
                problems.append(f"{name}: pattern {pattern} does not fit one node")
            for s, n in pattern.items():
                covered[s] += k * n
    for name, count in nodes.items():
        tt = inp.types[index[name]]
        if tt.max_count is not None and count > tt.max_count:
            problems.append(f"{name}: {count} nodes exceed maxCount {tt.max_count}")
        if tt.nodes_per_block and count % tt.nodes_per_block:
            problems.append(f"{name}: {count} nodes is not whole blocks of {tt.nodes_per_block}")
    if int(covered.sum()) != result.placed_pods:
        problems.append(f"{int(covered.sum())} pods packed but {result.placed_pods} placed")
    return problems
