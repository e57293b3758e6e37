"""Lower bounds computed outside CP-SAT (GLOP, the LP solver that ships with OR-Tools).

The planner minimises `cost + penalty` where `cost = sum_t cost_t N_t` (N_t nodes of type
t; existing nodes cost 0) and `penalty = sum_j pen_j (k_j - z_j)` charges every job left
out (z_j of the k_j jobs of class j are placed). Two bounds on that objective:

* **L1 / sum of sizes (`l1_bound`)**: the fractional relaxation with shape-to-type flows
  f[s,t] >= 0 (only where a pod of s fits t: card types, selectors, size) and per type and
  resource `sum_s f[s,t] q[s,r] <= C[t,r] N_t`, GPU milli `sum_s f[s,t] g_s d_s <= 1000
  G_t N_t`, whole devices `sum_s f[s,t] g_s [d_s = 1000] <= G_t N_t`; maxCount, card
  quota and budget as in the real problem. With one node type and no limits it is the
  classic L1 = max_r ceil(sum of sizes / capacity) (times the cost).
* **Device arc-flow LP (`device_bound`)**: L1 with each GPU device modelled as a bin of
  its free milli (Valerio de Carvalho's arc-flow): per type t and device capacity f, a flow
  of P[t,f] paths from 0 to f where an arc i -> i + d carries one shared pod of d milli
  and a loss arc i -> f ends the device; the shared pods of each size sent to t equal the
  arcs of that size, and `P[t,1000] + whole devices <= devices of 1000 milli x N_t`.
  This is the configuration LP of packing shared pods onto devices, so it sees what L1
  cannot: two 0.6-GPU pods never share a device (on openb, 1,078 pods of 0.81 GPU leave
  0.19 of a device each unless a small pod fills it). Skipped (None) when the graphs
  would be too large.
* **Configuration LP** (Gilmore-Gomory) in `solver.plan._config_lp`: the LP over node
  patterns, with a Lagrangian (Farley-style) bound valid at every column-generation
  iteration.

Objectives are integers (costs are scaled to integers), so a bound may be rounded up.
"""

from __future__ import annotations

import math

import numpy as np
from ortools.linear_solver import pywraplp

from solver.errors import InternalError
from solver.gate import GATE
from solver.plan._model import BUDGET_SLACK, MILLI, PlanInput
from solver.plan._pack import Arrays

__all__ = ["ceil_bound", "device_bound", "l1_bound", "lp_tolerance", "new_lp"]

_MAX_ARCS = 200_000  # device graphs larger than this are not built (bound skipped)


def lp_tolerance(value: float) -> float:
    """The LP's round-off at `value`: relative, absolute near zero."""
    return 1e-6 * max(1.0, abs(value))


def ceil_bound(value: float) -> int:
    """An LP bound on the integer objective, rounded up past the LP's round-off."""
    return math.ceil(value - lp_tolerance(value))


def new_lp() -> pywraplp.Solver:
    """An empty GLOP LP."""
    solver = pywraplp.Solver.CreateSolver("GLOP")
    if solver is None:  # pragma: no cover - GLOP ships with every ortools wheel
        raise InternalError("OR-Tools GLOP is not available")
    return solver


def l1_bound(
    inp: PlanInput,
    arrays: Arrays,
    cost_int: np.ndarray,
    pen: np.ndarray,
    upper: np.ndarray,
) -> float:
    """The sum-of-sizes LP bound on the integer objective (rounded up)."""
    value = _bound_lp(inp, arrays, cost_int, pen, upper, devices=False)
    assert value is not None
    return value


def device_bound(
    inp: PlanInput,
    arrays: Arrays,
    cost_int: np.ndarray,
    pen: np.ndarray,
    upper: np.ndarray,
) -> float | None:
    """L1 with shared pods bin-packed onto devices by arc flow (rounded up); None when
    there is nothing to pack or the device graphs would be too large."""
    return _bound_lp(inp, arrays, cost_int, pen, upper, devices=True)


def _bound_lp(
    inp: PlanInput,
    arrays: Arrays,
    cost_int: np.ndarray,
    pen: np.ndarray,
    upper: np.ndarray,
    devices: bool,
) -> float | None:
    lp = new_lp()
    inf = lp.infinity()
    S, T = arrays.compat.shape
    N = [lp.NumVar(0.0, float(upper[t]), f"N{t}") for t in range(T)]
    z = [lp.NumVar(0.0, float(job.count), f"z{j}") for j, job in enumerate(inp.jobs)]
    f: dict[tuple[int, int], pywraplp.Variable] = {}
    for s in range(S):
        for t in range(T):
            if arrays.compat[s, t] and arrays.demand[s]:
                f[s, t] = lp.NumVar(0.0, inf, f"f{s}_{t}")
    flow: dict[int, pywraplp.Constraint] = {}
    for s in range(S):
        if arrays.demand[s]:
            flow[s] = lp.Constraint(0.0, 0.0)
            for t in range(T):
                if (s, t) in f:
                    flow[s].SetCoefficient(f[s, t], 1.0)
    for j, job in enumerate(inp.jobs):
        for s, m in job.shapes:
            flow[s].SetCoefficient(z[j], -float(m))
    shared = [s for s in range(S) if arrays.gpus[s] == 1 and arrays.milli[s] < MILLI]
    unit = math.gcd(MILLI, *(int(arrays.milli[s]) for s in shared)) if shared else MILLI
    if devices:
        arcs = sum(
            _arc_count(sorted({int(arrays.milli[s]) for s in shared if (s, t) in f}), c, unit)
            for t in range(T)
            for c in set(arrays.devices[t])
        )
        if not shared or arcs > _MAX_ARCS:
            return None
    for t in range(T):
        for r in range(len(arrays.resources)):
            row = lp.Constraint(-inf, 0.0)
            row.SetCoefficient(N[t], -float(arrays.C[t, r]))
            for s in range(S):
                if (s, t) in f and arrays.Q[s, r]:
                    row.SetCoefficient(f[s, t], float(arrays.Q[s, r]))
        G = len(arrays.devices[t])
        if G:
            milli = lp.Constraint(-inf, 0.0)
            milli.SetCoefficient(N[t], -float(sum(arrays.devices[t])))
            whole = lp.Constraint(-inf, 0.0)
            whole.SetCoefficient(N[t], -float(sum(1 for d in arrays.devices[t] if d >= MILLI)))
            for s in range(S):
                if (s, t) in f and arrays.gpus[s]:
                    milli.SetCoefficient(f[s, t], float(arrays.gpus[s] * arrays.milli[s]))
                    if arrays.milli[s] >= MILLI:
                        whole.SetCoefficient(f[s, t], float(arrays.gpus[s]))
            if devices:
                _device_flows(lp, arrays, t, N[t], f, shared, unit)
    _limit_rows(lp, inp, N)
    obj = lp.Objective()
    for t in range(T):
        obj.SetCoefficient(N[t], float(cost_int[t]))
    for j in range(len(inp.jobs)):
        obj.SetCoefficient(z[j], -float(pen[j]))
    obj.SetMinimization()
    with GATE.outside():
        status = lp.Solve()
    if status != pywraplp.Solver.OPTIMAL:
        raise InternalError(f"the bound LP did not solve (status {status})")
    constant = float(sum(pen[j] * job.count for j, job in enumerate(inp.jobs)))
    return float(ceil_bound(float(obj.Value()) + constant))


def _reachable(sizes: list[int], capacity: int, unit: int) -> list[int]:
    """Graph nodes (in units) reachable from 0 by sums of item sizes within capacity."""
    top = capacity // unit
    seen = [False] * (top + 1)
    seen[0] = True
    for i in range(top + 1):
        if seen[i]:
            for d in sizes:
                if i + d // unit <= top:
                    seen[i + d // unit] = True
    return [i for i in range(top + 1) if seen[i]]


def _arc_count(sizes: list[int], capacity: int, unit: int) -> int:
    if not sizes or capacity <= 0:
        return 0
    nodes = _reachable(sizes, capacity, unit)
    top = capacity // unit
    return len(nodes) * (len(sizes) + 1) if top < 1 << 20 else _MAX_ARCS + 1


def _device_flows(
    lp: pywraplp.Solver,
    arrays: Arrays,
    t: int,
    n_t: pywraplp.Variable,
    f: dict[tuple[int, int], pywraplp.Variable],
    shared: list[int],
    unit: int,
) -> None:
    """Arc-flow rows for the shared pods sent to type t (see the module docstring)."""
    inf = lp.infinity()
    here = [s for s in shared if (s, t) in f]
    sizes = sorted({int(arrays.milli[s]) for s in here})
    if not sizes:
        return
    # per size: sum of item arcs of that size == shared pods of that size on t
    per_size: dict[int, pywraplp.Constraint] = {}
    for d in sizes:
        row = per_size[d] = lp.Constraint(0.0, 0.0)
        for s in here:
            if int(arrays.milli[s]) == d:
                row.SetCoefficient(f[s, t], -1.0)
    whole_row = lp.Constraint(-inf, 0.0)
    counts: dict[int, int] = {}
    for c in arrays.devices[t]:
        counts[c] = counts.get(c, 0) + 1
    for s in range(len(arrays.gpus)):
        if (s, t) in f and arrays.gpus[s] and arrays.milli[s] >= MILLI:
            whole_row.SetCoefficient(f[s, t], float(arrays.gpus[s]))
    for capacity, count in counts.items():
        if capacity <= 0:
            continue
        top = capacity // unit
        nodes = _reachable(sizes, capacity, unit)
        # P = paths (devices of this capacity holding shared pods)
        paths = lp.NumVar(0.0, inf, f"P{t}_{capacity}")
        if capacity >= MILLI:
            whole_row.SetCoefficient(paths, 1.0)
            whole_row.SetCoefficient(n_t, -float(count))
        else:
            row = lp.Constraint(-inf, 0.0)
            row.SetCoefficient(paths, 1.0)
            row.SetCoefficient(n_t, -float(count))
        balance = {i: lp.Constraint(0.0, 0.0) for i in nodes}
        balance[0].SetCoefficient(paths, 1.0)  # paths enter at 0 ...
        for i in nodes:
            for d in sizes:
                j = i + d // unit
                if j <= top:
                    arc = lp.NumVar(0.0, inf, "")
                    balance[i].SetCoefficient(arc, -1.0)
                    if j < top:
                        balance[j].SetCoefficient(arc, 1.0)
                    per_size[d].SetCoefficient(arc, 1.0)
            if i > 0:
                # ... and leave from any node (loss arc i -> top)
                loss = lp.NumVar(0.0, inf, "")
                balance[i].SetCoefficient(loss, -1.0)


def _limit_rows(lp: pywraplp.Solver, inp: PlanInput, N: list[pywraplp.Variable]) -> None:
    """Card quota and budget rows over the added (non-existing) types."""
    inf = lp.infinity()
    for model, limit in inp.card_quota:
        row = lp.Constraint(-inf, float(limit))
        for t, gpus in enumerate(inp.card_gpus(model)):
            if gpus:
                row.SetCoefficient(N[t], float(gpus))
    if inp.budget is not None:
        row = lp.Constraint(-inf, float(inp.budget) + BUDGET_SLACK)
        for t, tt in enumerate(inp.types):
            if not tt.existing:
                row.SetCoefficient(N[t], float(tt.cost))
