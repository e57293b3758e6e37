"""Which domains to free, which units move and where they land, in one CP-SAT model.

    # f[d] = candidate domain d freed;  m[u] = unit u moved (a gang whole)
    # m[u] ≥ f[d] for every unit u on d;  Σ_u |u| · m[u] ≤ max_pods;  Σ_u m[u] ≤ max_gangs
    # a group is the pods that land alike: the loose pods of one kind k = (node class,
    #   requests), or one compact gang's pods of one request vector
    # c[g, n] ∈ [0, slots_gn] pods of group g on node n;  Σ_n c[g, n] = Σ_u pods_ug · m[u]
    # c[g, n] = 0 when f[dom n] (nothing lands on a freed domain)
    # a gang in one value of where-labels: v[u, w] its value, Σ_w v[u, w] = m[u],
    #   c[g, n] = 0 unless v[u, val n]
    # room: Σ_g c[g, n] · d_gr ≤ free_nr  (room free before the plan: every order is valid)
    # maximise Σ f[d] · (max_pods + 1) − Σ_u |u| · m[u]   (count goal: Σ f ≥ need, min pods)

Hinted with the greedy's choice; `defragment` keeps the better of the two.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
from ortools.sat.python import cp_model

from solver.arrays import IntArray
from solver.defrag._input import DefragInput
from solver.defrag._plan import Choice
from solver.problem import BoolArray
from solver.sat import stop_on

__all__ = ["CpsatResult", "cpsat_choice"]

CpsatResult = tuple[Choice | None, str, float]  # the choice, its status, the bound


@dataclass
class _Group:
    """Pods that land alike: `members` (unit, pod) in unit order, their requests `demand`."""

    demand: IntArray
    node_class: int
    members: list[tuple[int, int]] = field(default_factory=list)
    gate: dict[int, cp_model.IntVar] | None = None  # node -> its where-value's Boolean
    nodes_ok: BoolArray | None = None
    on: dict[int, cp_model.IntVar] = field(default_factory=dict)  # node -> c[g, n]


def cpsat_choice(
    inp: DefragInput,
    hint: Choice,
    *,
    time_limit: float,
    workers: int,
    seed: int,
    stop: threading.Event | None = None,
) -> CpsatResult | None:
    """The model's best choice, OPTIMAL or FEASIBLE, and the bound (maximise: domains freed
    at most; count: pods moved at least); (None, "INFEASIBLE", 0) when no choice meets the
    count goal (proven); None when it found nothing in time."""
    started = time.perf_counter()
    goal, model = inp.goal, cp_model.CpModel()
    need = None if goal.count is None else max(0, goal.count - int(inp.empty.sum()))
    cand = np.flatnonzero(inp.candidate).tolist()
    f = {d: model.new_bool_var(f"f{d}") for d in cand}
    touched = sorted({int(u) for d in cand for u in inp.domain_units[d].tolist()})
    m = {u: model.new_bool_var(f"m{u}") for u in touched}
    for d in cand:
        for u in inp.domain_units[d].tolist():
            model.add_implication(f[d], m[int(u)])
    pods = sum(int(inp.units[u].pods.size) * m[u] for u in touched)
    model.add(pods <= goal.max_pods)
    if goal.max_gangs is not None:
        model.add(sum(m.values()) <= goal.max_gangs)

    groups = _groups(inp, model, touched, m)
    room: dict[int, list[tuple[cp_model.IntVar, IntArray, int]]] = defaultdict(list)
    for g, group in enumerate(groups):
        per_unit: dict[int, int] = defaultdict(int)
        for u, _ in group.members:
            per_unit[u] += 1
        nodes, slots = _slots(inp, group)
        for n, s in zip(nodes.tolist(), slots.tolist(), strict=True):
            ub = min(int(s), goal.max_pods)
            var = model.new_int_var(0, ub, f"c{g}_{n}")
            d = int(inp.node_domain[n])
            if d in f:
                model.add(var == 0).only_enforce_if(f[d])
            if group.gate is not None:
                model.add(var == 0).only_enforce_if(group.gate[n].Not())
            room[n].append((var, group.demand, ub))
            group.on[n] = var
        model.add(sum(group.on.values()) == sum(c * m[u] for u, c in per_unit.items()))
    for n, arrivals in room.items():
        for r in range(len(inp.axis)):
            if sum(ub * int(dem[r]) for _, dem, ub in arrivals) > inp.free[n, r]:
                used = sum(var * int(dem[r]) for var, dem, _ in arrivals if dem[r])
                model.add(used <= int(inp.free[n, r]))

    weight = goal.max_pods + 1
    if need is None:
        model.maximize(sum(f.values()) * weight - pods)
    else:
        model.add(sum(f.values()) >= need)
        model.minimize(pods)
    hinted = set(hint.freed)
    moved_hint = {int(u) for d in hint.freed for u in inp.domain_units[d].tolist()}
    for d, var in f.items():
        model.add_hint(var, d in hinted)
    for u, var in m.items():
        model.add_hint(var, u in moved_hint)

    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.05, time_limit - (time.perf_counter() - started))
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = seed
    with stop_on(stop, solver):
        status = solver.solve(model)
    if status == cp_model.INFEASIBLE:
        return None, "INFEASIBLE", 0.0
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    moved = {u for u in touched if solver.boolean_value(m[u])}
    targets: dict[int, int] = {}
    for group in groups:
        landing = [n for n, var in group.on.items() for _ in range(solver.value(var))]
        members = [p for u, p in group.members if u in moved]
        targets.update(zip(members, landing, strict=True))
    bound = float(solver.best_objective_bound)
    if need is None:  # objective = freed · weight − pods with 0 ≤ pods < weight
        bound = float(np.ceil(round(bound) / weight)) if bound > 0 else 0.0
    chosen = tuple(d for d in cand if solver.boolean_value(f[d]))
    name = "OPTIMAL" if status == cp_model.OPTIMAL else "FEASIBLE"
    return Choice(chosen, targets), name, bound


def _groups(
    inp: DefragInput, model: cp_model.CpModel, touched: list[int], m: dict[int, cp_model.IntVar]
) -> list[_Group]:
    loose: dict[tuple[int, tuple[int, ...]], _Group] = {}
    out: list[_Group] = []
    for u in touched:
        unit = inp.units[u]
        cls = int(inp.node_class[inp.pod_node[unit.pods[0]]])
        if not unit.compact:
            for p in unit.pods.tolist():
                demand = inp.pod_demand[p]
                key = (cls, tuple(demand.tolist()))
                loose.setdefault(key, _Group(demand, cls)).members.append((u, p))
            continue
        values = np.stack([inp.where[k] for k in unit.compact], axis=1)
        labelled = np.asarray((values >= 0).all(axis=1), dtype=bool)
        which = {
            tuple(row): model.new_bool_var(f"v{u}_{i}")
            for i, row in enumerate(np.unique(values[labelled], axis=0).tolist())
        }
        model.add(sum(which.values()) == m[u])
        gate = {n: which[tuple(values[n].tolist())] for n in np.flatnonzero(labelled).tolist()}
        by_demand: dict[tuple[int, ...], _Group] = {}
        for p in unit.pods.tolist():
            demand = inp.pod_demand[p]
            group = by_demand.setdefault(
                tuple(demand.tolist()), _Group(demand, cls, gate=gate, nodes_ok=labelled)
            )
            group.members.append((u, p))
        out += by_demand.values()
    return [*(loose[k] for k in sorted(loose)), *out]


def _slots(inp: DefragInput, group: _Group) -> tuple[IntArray, IntArray]:
    """The nodes a pod of `group` may land on, and how many of them fit each on its own."""
    ok = inp.target & (inp.node_class == group.node_class)
    if group.nodes_ok is not None:
        ok &= group.nodes_ok
    asked = group.demand > 0
    if not asked.any():
        slots = np.full(len(ok), 10**6, dtype=np.int64)
    else:
        slots = (inp.free[:, asked] // group.demand[asked]).min(axis=1).clip(min=0)
    nodes = np.flatnonzero(ok & (slots > 0))
    return nodes, slots[nodes]
