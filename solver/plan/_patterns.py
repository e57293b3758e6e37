"""Node patterns, the columns of the configuration LP: where they come from.

* Enumeration (`seed_columns`): every maximal pattern of every type when there are few
  (up to `PlanOptions.enumerate_limit`); then the integer master over them is exact.
  Otherwise one homogeneous pattern per (shape, type) -- as many pods of the shape as fit.
* Pricing, against the LP's duals `pi` (per shape): the pattern of type t with the most
  value `pi . a`; it improves the LP when that exceeds the dual `sigma_t` of t's node row.
  `greedy_price` fills a node by value per dominant share; `exact_price` is CP-SAT, with
  the GPU devices relaxed (fast) or modelled one by one (a proof for the real patterns).
"""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
from ortools.sat.python import cp_model

from solver.gate import GATE
from solver.plan._model import MILLI
from solver.plan._problem import Columns, Problem, cp_solver

__all__ = ["exact_price", "greedy_price", "seed_columns"]

_EPS = 1e-7  # a dual this small prices nothing
_WORK_PER_PATTERN = 20  # enumeration gives up past this many search nodes per pattern allowed
_MAX_ENUMERATED_SHAPES = 16


class _TooMany(Exception):
    pass


def _enumerate(p: Problem, t: int, limit: int) -> list[dict[int, int]]:
    """Every maximal pattern of type t (raises _TooMany past `limit` patterns or work)."""
    shapes = [s for s in range(p.S) if p.a.compat[s, t] and p.a.demand[s]]
    caps = {s: p.max_copies(s, t) for s in shapes}
    shapes = [s for s in shapes if caps[s] > 0]
    out: list[dict[int, int]] = []
    work = [0]

    if len(shapes) > _MAX_ENUMERATED_SHAPES:
        raise _TooMany

    def dfs(k: int, pat: dict[int, int]) -> None:
        work[0] += 1
        if work[0] > _WORK_PER_PATTERN * limit:
            raise _TooMany
        if k == len(shapes):
            for s in shapes:  # maximal: no pod of any shape fits on top
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


def seed_columns(p: Problem, cols: Columns, limit: int, deadline: float) -> bool:
    """The starting columns: every maximal pattern while there are at most `limit` columns
    in all and time before `deadline` (True: enumerated completely); else one homogeneous
    pattern per (shape, type) on top of what was enumerated."""
    complete = True
    for t in range(p.T):
        try:
            for pattern in _enumerate(p, t, limit - len(cols.cols)):
                cols.add(t, pattern)
        except _TooMany:
            complete = False
            break
        if time.perf_counter() > deadline:
            complete = False
            break
    if not complete:
        for s in range(p.S):
            for t in range(p.T):
                if p.a.compat[s, t] and p.a.demand[s]:
                    k = p.max_copies(s, t)
                    if k:
                        cols.add(t, {s: k})
    return complete


def _priced_shapes(p: Problem, t: int, pi: np.ndarray) -> list[int]:
    """Shapes worth a pod on type t: they fit it, are in demand and have a positive dual."""
    a = p.a
    return [s for s in range(p.S) if a.compat[s, t] and pi[s] > _EPS and a.demand[s]]


def greedy_price(p: Problem, t: int, pi: np.ndarray) -> tuple[dict[int, int], float]:
    """A good pattern for duals `pi` on type t: fill by value per dominant share."""
    a = p.a
    shapes = _priced_shapes(p, t, pi)
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


def exact_price(
    p: Problem,
    t: int,
    pi: np.ndarray,
    time_limit: float,
    seed: int,
    hint: dict[int, int] | None = None,
    devices: bool = False,
) -> tuple[dict[int, int], float, float]:
    """CP-SAT pricing: max pi.a over patterns of type t -> (pattern, value, bound).

    `devices=False` relaxes the GPU device packing (fast); `devices=True` models each
    device (y[s,k] shared pods of shape s on device k, loads in decreasing order to break
    symmetry), so its bound is a proof for the real pattern set.
    """
    a = p.a
    shapes = _priced_shapes(p, t, pi)
    if not shapes:
        return {}, 0.0, 0.0
    m = cp_model.CpModel()
    x = {s: m.new_int_var(0, p.max_copies(s, t), f"x{s}") for s in shapes}
    # sum_s Q[s,r] x_s <= C[t,r] for every resource r
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
    # devices one by one: sum_k y[s,k] = x_s, load_k = sum_s d_s y[s,k] <= f_k, a device
    # taken whole (w_k) holds no shared pod, sum_s g_s x_s (whole) = sum_k w_k
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
    solver = cp_solver(1, seed, time_limit)
    with GATE.outside():
        status = solver.solve(m)
    most = sum(p.max_copies(s, t) for s in shapes)  # each pod loses < 1/K by the rounding
    bound = (solver.best_objective_bound + most) / K
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return {}, 0.0, bound
    pat = {s: int(solver.value(x[s])) for s in shapes if solver.value(x[s])}
    while not p.fits(t, pat):  # repair: drop the smallest-value shared pod
        drop = min((s for s in pat if a.gpus[s] and a.milli[s] < MILLI), key=lambda s: pi[s])
        pat[drop] -= 1
        if not pat[drop]:
            del pat[drop]
    value = sum(float(pi[s]) * n for s, n in pat.items())
    return pat, value, bound
