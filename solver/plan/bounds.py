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
* **Configuration LP** (Gilmore-Gomory) in `solver.plan.planner`: the LP over node
  patterns, with a Lagrangian (Farley-style) bound valid at every column-generation
  iteration.

Objectives are integers (costs are scaled to integers), so a bound may be rounded up.
"""

from __future__ import annotations

import math

import numpy as np
from ortools.linear_solver import pywraplp

from solver.errors import InternalError
from solver.plan._model import MILLI, PlanInput
from solver.plan._pack import Arrays

__all__ = ["l1_bound", "new_lp"]


def new_lp() -> pywraplp.Solver:
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
    _limit_rows(lp, inp, N)
    obj = lp.Objective()
    for t in range(T):
        obj.SetCoefficient(N[t], float(cost_int[t]))
    for j in range(len(inp.jobs)):
        obj.SetCoefficient(z[j], -float(pen[j]))
    obj.SetMinimization()
    status = lp.Solve()
    if status != pywraplp.Solver.OPTIMAL:
        raise InternalError(f"the L1 bound LP did not solve (status {status})")
    constant = float(sum(pen[j] * job.count for j, job in enumerate(inp.jobs)))
    value = float(obj.Value()) + constant
    return float(math.ceil(value - 1e-6 * max(1.0, abs(value))))


def _limit_rows(lp: pywraplp.Solver, inp: PlanInput, N: list[pywraplp.Variable]) -> None:
    """Card quota and budget rows over the added (non-existing) types."""
    inf = lp.infinity()
    for model, limit in inp.card_quota:
        row = lp.Constraint(-inf, float(limit))
        for t, tt in enumerate(inp.types):
            if not tt.existing and tt.gpu_model == model and tt.gpus:
                row.SetCoefficient(N[t], float(tt.gpus))
    if inp.budget is not None:
        row = lp.Constraint(-inf, float(inp.budget) + 1e-9)
        for t, tt in enumerate(inp.types):
            if not tt.existing:
                row.SetCoefficient(N[t], float(tt.cost))
