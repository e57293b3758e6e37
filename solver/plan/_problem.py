"""The planning problem as the solvers read it, and an integral plan as they write it.

`Problem` is the input as arrays with integer costs: catalogue costs are scaled by the
smallest power of ten that makes them all integers (at most 10^4, and none past 10^9 once
scaled), and leaving a job of class j out costs
`pen_j` = (the largest scaled node cost + 1) x the job's weight, so placing work always
beats saving money. The objective is `sum_t cost_t N_t + sum_j pen_j (k_j - z_j)`.

`Columns` are the node patterns found so far (a pattern: a multiset of shapes that fits
one node of a type), shared by the LP, the roundings and the integer master. A `Solution`
is an integral plan over them: nodes per type, nodes per column and jobs placed per class.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
from ortools.sat.python import cp_model

from solver.errors import InputError
from solver.plan._model import BUDGET_SLACK, MILLI, PlanInput
from solver.plan._pack import Arrays, arrays_of, pattern_fits

__all__ = [
    "MIN_SOLVE_SECONDS",
    "NO_PLAN",
    "Columns",
    "Pattern",
    "Problem",
    "Solution",
    "Trace",
    "added_gpus",
    "cp_solver",
    "pattern_key",
    "place_covered",
    "spent",
    "whole_blocks",
    "within_limits",
]

Pattern = tuple[tuple[int, int], ...]  # sorted (shape, pods), pods > 0
NO_PLAN = 1 << 62  # the objective of a plan that breaks a limit: worse than any valid one
MIN_SOLVE_SECONDS = 0.05  # the least time a CP-SAT solve is given (or worth starting)


MAX_SCALED_COST = 10**9
MAX_OBJECTIVE = 2**62  # CP-SAT sums the objective in int64


def _cost_scale(costs: list[float]) -> int:
    largest = max(costs, default=0.0)
    scale = 1
    for k in range(5):
        if largest * 10**k > MAX_SCALED_COST:
            break
        scale = 10**k
        if all(abs(c * scale - round(c * scale)) < 1e-9 for c in costs):
            break
    return scale


class Problem:
    """The planning question as arrays, integer costs and penalties."""

    def __init__(self, inp: PlanInput) -> None:
        self.inp = inp
        self.a: Arrays = arrays_of(inp)
        self.S = len(inp.shapes)
        self.T = len(inp.types)
        self.scale = _cost_scale([t.cost for t in inp.types])
        self.cost = np.array([round(t.cost * self.scale) for t in inp.types], dtype=np.int64)
        unit = int(self.cost.max(initial=0)) + 1
        worth = sum(j.weight * j.count for j in inp.jobs)
        if unit * worth > MAX_OBJECTIVE:
            raise InputError(
                f"plan: node costs up to {max(t.cost for t in inp.types):g} with a workload "
                f"worth {worth} exceed the planner's 64-bit objective; state costs in a "
                "larger unit"
            )
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

    def scaled_budget(self, share: float = 1.0) -> float | None:
        """`share` of the budget in integer cost units, with slack for its round-off (None:
        no budget)."""
        if self.inp.budget is None:
            return None
        return self.inp.budget * self.scale * share + 1e-6

    def objective(self, N: np.ndarray, z: np.ndarray) -> int:
        """sum_t cost_t N_t + sum_j pen_j (k_j - z_j)."""
        placed = sum(int(self.pen[j]) * int(z[j]) for j in range(len(self.inp.jobs)))
        return int((self.cost * N).sum()) + self.constant - placed


def pattern_key(pattern: Mapping[int, int]) -> Pattern:
    return tuple(sorted((s, n) for s, n in pattern.items() if n > 0))


class Columns:
    """The node patterns found so far, each once, in the order found: (type, pattern)."""

    def __init__(self) -> None:
        self.cols: list[tuple[int, Pattern]] = []
        self.index: dict[tuple[int, Pattern], int] = {}

    def add(self, t: int, pattern: Mapping[int, int]) -> int | None:
        """The new column's index; None when the pattern is empty or already a column."""
        key = (t, pattern_key(pattern))
        if not key[1] or key in self.index:
            return None
        self.index[key] = len(self.cols)
        self.cols.append(key)
        return self.index[key]

    def add_nodes(
        self, n: Counter[int], N: np.ndarray, nodes: Iterable[tuple[int, Mapping[int, int]]]
    ) -> None:
        """Count packed nodes [(type, pattern)] in `n` (per column, new patterns become
        columns) and `N` (per type); empty nodes are skipped."""
        for t, pattern in nodes:
            if pattern:
                self.add(t, pattern)
                n[self.index[t, pattern_key(pattern)]] += 1
                N[t] += 1


@dataclass
class Solution:
    N: np.ndarray  # [T] nodes per type
    n: dict[int, int]  # column -> nodes
    z: np.ndarray  # [J] jobs placed
    objective: int
    source: str

    @staticmethod
    def of(p: Problem, N: np.ndarray, n: dict[int, int], z: np.ndarray, source: str) -> Solution:
        return Solution(N, n, z, p.objective(N, z), source)


def whole_blocks(p: Problem, N: np.ndarray) -> np.ndarray:
    """Node counts rounded up to whole topology blocks (`nodesPerBlock`)."""
    return np.array([-(-int(k) // b) * b for k, b in zip(N, p.block, strict=True)], dtype=np.int64)


def added_gpus(p: Problem, N: np.ndarray, model: str) -> int:
    """GPUs of `model` the plan adds (against its card quota)."""
    return sum(int(N[t]) * g for t, g in enumerate(p.inp.card_gpus(model)))


def spent(p: Problem, N: np.ndarray) -> float:
    """Cost of the bought nodes, in the catalogue's unit (against the budget)."""
    return sum(int(N[t]) * tt.cost for t, tt in enumerate(p.inp.types) if not tt.existing)


def within_limits(p: Problem, N: np.ndarray) -> bool:
    """maxCount, card quotas and the budget hold for node counts N."""
    if (p.upper < N).any():
        return False
    inp = p.inp
    if any(added_gpus(p, N, model) > lim for model, lim in inp.card_quota):
        return False
    return inp.budget is None or spent(p, N) <= inp.budget + BUDGET_SLACK


def place_covered(inp: PlanInput, cover: np.ndarray, z: np.ndarray | None = None) -> np.ndarray:
    """Jobs placed class by class while the pods of `cover` hold them, on top of `z` (in
    place; none placed when None) -> z. The pods they take are taken from `cover`."""
    if z is None:
        z = np.zeros(len(inp.jobs), dtype=np.int64)
    for j, job in enumerate(inp.jobs):
        more = min(job.count - int(z[j]), min(int(cover[s]) // m for s, m in job.shapes))
        z[j] += more
        for s, m in job.shapes:
            cover[s] -= m * more
    return z


@dataclass
class Trace:
    """Solutions seen: (seconds since start, objective) -- for time to first/best."""

    start: float
    points: list[tuple[float, int]] = field(default_factory=list)

    def add(self, objective: int) -> None:
        if not self.points or objective < self.points[-1][1]:
            self.points.append((time.perf_counter() - self.start, objective))


def cp_solver(workers: int, seed: int, time_limit: float) -> cp_model.CpSolver:
    """A CP-SAT solver with the three parameters every solve sets (it would use every core,
    a seed of its own and no time limit otherwise)."""
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = seed
    solver.parameters.max_time_in_seconds = max(MIN_SOLVE_SECONDS, time_limit)
    return solver
