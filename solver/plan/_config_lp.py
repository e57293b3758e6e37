"""The configuration (Gilmore-Gomory) LP, grown by column generation, and its bound.

    min  sum_t cost_t N_t + sum_j pen_j (k_j - z_j)
    s.t. sum_c a[s,c] n_c >= sum_j m[j,s] z_j     every shape s is covered      (dual pi_s)
         sum_{c of t} n_c <= N_t                   patterns use the nodes bought (sigma_t)
         sum_t h_t N_t <= limit                    card quotas and the budget    (rho <= 0)
         0 <= N_t <= upper_t, 0 <= z_j <= k_j, n_c >= 0

Column generation (GLOP) starts from the greedy's node patterns and the seeded ones
(`solver.plan._patterns`); each round prices new patterns per type with the greedy knapsack
first, CP-SAT (relaxed devices, then devices one by one where the relaxed bound cannot rule
out an improving pattern) when the greedy finds none. Each exact round yields a Lagrangian
(Farley) lower bound valid for the whole problem; when the exact pricing proves no pattern
has negative reduced cost, the LP value *is* the configuration-LP bound.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from ortools.linear_solver import pywraplp

from solver.gate import GATE
from solver.plan._model import ProgressFn
from solver.plan._patterns import exact_price, greedy_price
from solver.plan._problem import Columns, Pattern, Problem
from solver.plan.bounds import lp_tolerance, new_lp

__all__ = ["ColumnGeneration", "ConfigLP", "LPPoint", "generate_columns"]

_RELAXED_PRICING_SECONDS = 0.5  # most time per type for the relaxed exact pricing
_DEVICE_PRICING_SECONDS = 2.0  # most time per type for the device-by-device pricing
_PRICING_MIN_SECONDS = 0.01  # no exact pricing with less time left than this


@dataclass(frozen=True)
class LPPoint:
    """The LP's values after column generation (read once: the rounding adds columns)."""

    n: list[float]  # per column
    N: list[float]  # per type
    z: list[float]  # per job class


class ConfigLP:
    """The configuration LP (GLOP), grown one column at a time."""

    def __init__(self, p: Problem, columns: Iterable[tuple[int, Pattern]] = ()) -> None:
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
            self._limit(float(limit), [float(g) for g in inp.card_gpus(model)])
        budget = p.scaled_budget()
        if budget is not None:
            h = [float(p.cost[t]) if not tt.existing else 0.0 for t, tt in enumerate(inp.types)]
            self._limit(budget, h)
        obj = lp.Objective()
        for t in range(p.T):
            obj.SetCoefficient(self.N[t], float(p.cost[t]))
        for j in range(len(inp.jobs)):
            obj.SetCoefficient(self.z[j], -float(p.pen[j]))
        obj.SetMinimization()
        self.n: list[pywraplp.Variable] = []
        for t, pattern in columns:
            self.add(t, pattern)

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
        """The LP's value in objective units (inf when it does not solve)."""
        with GATE.outside():
            status = self.lp.Solve()
        if status != pywraplp.Solver.OPTIMAL:
            return math.inf
        return float(self.lp.Objective().Value()) + self.p.constant

    def point(self) -> LPPoint:
        return LPPoint(
            n=[v.solution_value() for v in self.n],
            N=[v.solution_value() for v in self.N],
            z=[v.solution_value() for v in self.z],
        )

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


@dataclass
class ColumnGeneration:
    """Where column generation stopped."""

    master: ConfigLP
    lp_value: float  # the LP's value (inf: it did not solve)
    lower_bound: float  # the best Lagrangian bound (-inf: no exact round finished)
    rounds: int


def _add_column(
    cols: Columns, master: ConfigLP, t: int, pattern: dict[int, int], improves: bool
) -> bool:
    """The pattern as a new column of the LP, when it improves it and is new."""
    if improves and cols.add(t, pattern) is not None:
        master.add(*cols.cols[-1])
        return True
    return False


def _above(bound: float) -> float:
    """CP-SAT's pricing bound made safe against its round-off."""
    return bound * (1 + 1e-9) + 1e-9


def _price_exactly(
    p: Problem,
    cols: Columns,
    master: ConfigLP,
    pi: np.ndarray,
    sigma: np.ndarray,
    hints: dict[int, dict[int, int]],
    deadline: float,
    seed: int,
) -> tuple[int, np.ndarray]:
    """CP-SAT pricing of every type in `hints` -> (columns added, ub): the relaxed model
    for every type first (fast), the device model only where the relaxed bound cannot
    rule out an improving pattern. ub[t] >= the best pattern's value (inf: not priced)."""
    ub = np.zeros(p.T)
    unsure: list[int] = []
    added = 0
    for t, hint in hints.items():
        left = deadline - time.perf_counter()
        if left <= _PRICING_MIN_SECONDS:
            ub[t] = math.inf
            continue
        tol = lp_tolerance(float(sigma[t]))
        pattern, value, bound = exact_price(
            p, t, pi, min(left, _RELAXED_PRICING_SECONDS), seed, hint=hint
        )
        ub[t] = _above(bound)
        if _add_column(cols, master, t, pattern, value > sigma[t] + tol):
            added += 1
        elif bound > sigma[t] + tol:
            unsure.append(t)
    if added:
        return added, ub
    for t in unsure:
        left = deadline - time.perf_counter()
        if left <= _PRICING_MIN_SECONDS:
            break
        tol = lp_tolerance(float(sigma[t]))
        pattern, value, bound = exact_price(
            p, t, pi, min(left, _DEVICE_PRICING_SECONDS), seed, hint=hints[t], devices=True
        )
        ub[t] = min(ub[t], _above(bound))
        if _add_column(cols, master, t, pattern, value > sigma[t] + tol):
            added += 1
    return added, ub


def generate_columns(
    p: Problem,
    cols: Columns,
    complete: bool,
    seed: int,
    start: float,
    deadline: float,
    say: ProgressFn,
) -> ColumnGeneration:
    """The LP over `cols`, grown until no pattern improves it or `deadline` (not at all
    when `complete`: every pattern is a column already)."""
    master = ConfigLP(p, cols.cols)
    lower_bound = -math.inf
    lp_value = master.solve()
    rounds = 0
    while not complete and p.inp.jobs and time.perf_counter() < deadline:
        rounds += 1
        pi, sigma, rho = master.duals()
        greedy = {t: greedy_price(p, t, pi) for t in range(p.T) if p.upper[t] > 0}
        added = 0
        for t, (pattern, value) in greedy.items():
            if _add_column(cols, master, t, pattern, value > sigma[t] + lp_tolerance(value)):
                added += 1
        if not added:
            hints = {t: pattern for t, (pattern, _) in greedy.items()}
            added, ub = _price_exactly(p, cols, master, pi, sigma, hints, deadline, seed)
            if np.isfinite(ub).all():
                lower_bound = max(lower_bound, master.lagrangian(pi, sigma, rho, ub))
            proven = all(
                ub[t] <= sigma[t] + lp_tolerance(float(sigma[t]))
                for t in range(p.T)
                if p.upper[t] > 0
            )
            if not added and proven:
                break
        lp_value = master.solve()
        say(
            "column generation",
            min(0.5, 0.1 + 0.4 * (time.perf_counter() - start) / max(1e-9, deadline - start)),
        )
    return ColumnGeneration(master, lp_value, lower_bound, rounds)
