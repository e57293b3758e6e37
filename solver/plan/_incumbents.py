"""Integral plans that can be the incumbent (the best plan so far and CP-SAT's hint).

* The greedy's packing (`greedy_solution`, `GreedyPacker`): the first incumbent; its node
  patterns are the first columns.
* A known packing (`given_solution`, e.g. the placement an online scheduler made).
* The configuration LP made integral four ways: every column rounded up (when the limits
  allow, `round_up`); rounded down with the left-over jobs packed by the greedy (onto nodes
  the LP left unused, or new ones), with and without first giving each fractional column
  one node (`round_down_fill`); and iterated rounding, which re-solves the LP for what is
  left after each rounding (`round_iterated`).
"""

from __future__ import annotations

import copy
import math
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from solver.plan._config_lp import ConfigLP, LPPoint
from solver.plan._pack import GreedyPacker, pods_per_shape
from solver.plan._problem import (
    NO_PLAN,
    Columns,
    Problem,
    Solution,
    added_gpus,
    place_covered,
    spent,
    whole_blocks,
    within_limits,
)

__all__ = ["given_solution", "greedy_solution", "round_down_fill", "round_iterated", "round_up"]

Nodes = Sequence[tuple[int, Mapping[int, int]]]  # [(type, {shape: pods})] per node
_INTEGRAL = 1e-6  # an LP value this close to an integer is that integer


def _packed(p: Problem, cols: Columns, nodes: Nodes, z: np.ndarray, source: str) -> Solution:
    """A packing with jobs `z` placed, as a solution; its node patterns become columns.
    NO_PLAN when its whole blocks exceed a maxCount."""
    n: Counter[int] = Counter()
    N = np.zeros(p.T, dtype=np.int64)
    cols.add_nodes(n, N, nodes)
    N = whole_blocks(p, N)
    objective = p.objective(N, z) if not (p.upper < N).any() else NO_PLAN
    return Solution(N, dict(n), z, objective, source)


def greedy_solution(p: Problem, cols: Columns) -> Solution:
    """The greedy's plan (NO_PLAN when its whole blocks exceed a maxCount)."""
    placed, nodes = GreedyPacker(p.inp, p.a).run()
    return _packed(p, cols, nodes, np.array(placed, dtype=np.int64), "greedy")


def given_solution(p: Problem, cols: Columns, nodes: Nodes) -> Solution:
    """A known packing as a plan: jobs are placed class by class while their pods are
    covered."""
    cover = np.zeros(p.S, dtype=np.int64)
    for _, pattern in nodes:
        for s, k in pattern.items():
            cover[s] += k
    return _packed(p, cols, nodes, place_covered(p.inp, cover), "start")


def round_up(p: Problem, cols: Columns, lp: LPPoint) -> Solution | None:
    """Every LP column rounded up (covers stay covered), jobs placed as the LP places them
    rounded down; None when that breaks a limit."""
    n = {c: math.ceil(v - _INTEGRAL) for c, v in enumerate(lp.n)}
    n = {c: k for c, k in n.items() if k > 0}
    z = np.array([math.floor(v + _INTEGRAL) for v in lp.z], dtype=np.int64)
    N = np.zeros(p.T, dtype=np.int64)
    for c, k in n.items():
        N[cols.cols[c][0]] += k
    N = whole_blocks(p, N)
    if not within_limits(p, N):
        return None
    return Solution.of(p, N, n, z, "lp-round-up")


def _add_rounded_down(
    cols: Columns, values: Sequence[float], n: Counter[int], used: np.ndarray, cover: np.ndarray
) -> int:
    """Every column's LP value rounded down, added to `n` (per column), `used` (nodes per
    type) and `cover` (pods per shape) -> the nodes added."""
    fixed = 0
    for c, value in enumerate(values):
        k = math.floor(value + _INTEGRAL)
        if k > 0:
            t, pattern = cols.cols[c]
            n[c] += k
            used[t] += k
            fixed += k
            for s, a in pattern:
                cover[s] += k * a
    return fixed


def round_down_fill(
    p: Problem, cols: Columns, lp: LPPoint, fractional_nodes: bool
) -> Solution | None:
    """The LP solution made integral: (1) every column rounded down; (2) when
    `fractional_nodes`, the columns by fractional part, largest first, one node each while
    the type has nodes left (existing classes: their count; bought types: the LP's count
    rounded up), holding only pods not yet covered -- what a fixed, oversubscribed cluster
    needs, where (4) alone refills hundreds of nodes; (3) jobs placed while their pods are
    covered; (4) the jobs left over packed by the greedy onto nodes still unused or new
    ones. None when that breaks a limit."""
    n: Counter[int] = Counter()
    opened = np.zeros(p.T, dtype=np.int64)
    cover = np.zeros(p.S, dtype=np.int64)
    _add_rounded_down(cols, lp.n, n, opened, cover)
    fractional = [
        (k - value, c)
        for c, value in enumerate(lp.n)
        if value - (k := math.floor(value + _INTEGRAL)) > _INTEGRAL
    ]
    cap = np.minimum(p.upper, np.array([math.ceil(v - _INTEGRAL) for v in lp.N], dtype=np.int64))
    for _, c in sorted(fractional) if fractional_nodes else ():
        t, pattern = cols.cols[c]
        if opened[t] >= cap[t]:
            continue
        held = {s: min(a, int(p.a.demand[s] - cover[s])) for s, a in pattern}
        held = {s: a for s, a in held.items() if a > 0}
        if held:
            cols.add_nodes(n, opened, [(t, held)])
            for s, a in held.items():
                cover[s] += a
    z = place_covered(p.inp, cover)
    source = "lp-round-fill" if fractional_nodes else "lp-round-down"
    return _finish_with_greedy(p, cols, n, opened, z, source)


def round_iterated(p: Problem, cols: Columns, deadline: float, rounds: int = 8) -> Solution | None:
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
            card_quota=tuple((m, lim - added_gpus(p, used, m)) for m, lim in inp.card_quota),
            budget=None if inp.budget is None else inp.budget - spent(p, used),
        )
        sub.a = replace(p.a, demand=pods_per_shape(inp, left))
        master = ConfigLP(sub, cols.cols)
        if not math.isfinite(master.solve()):
            break
        fixed = _add_rounded_down(cols, master.point().n, n, used, cover)
        place_covered(inp, cover, z)
        if not fixed:
            break
    return _finish_with_greedy(p, cols, n, used, z, "lp-round-iterated")


def _finish_with_greedy(
    p: Problem,
    cols: Columns,
    n: Counter[int],
    used: np.ndarray,
    z: np.ndarray,
    source: str,
) -> Solution | None:
    """A partial integral plan (`n` nodes per column, `used` per type, `z` jobs placed)
    completed by the greedy for the jobs left; None when that breaks a limit."""
    inp = p.inp
    packer = GreedyPacker(inp, p.a, opened=np.minimum(used, p.upper))
    placed, nodes = packer.run([job.count - int(z[j]) for j, job in enumerate(inp.jobs)])
    N = used.copy()
    cols.add_nodes(n, N, nodes)
    z = z + np.array(placed, dtype=np.int64)
    N = whole_blocks(p, N)
    if not within_limits(p, N):
        return None
    return Solution.of(p, N, dict(n), z, source)
