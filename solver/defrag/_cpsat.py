"""Which domains to free and which pods move where, in one CP-SAT model — moves included
that only make room (a pod moved off a busy node so that another fits there).

    # f[d] = candidate domain d freed;  m[u] = gang u moved (whole)
    # pods of their own, by kind k = (node class, requests), flow between nodes:
    #   out[k, n] ∈ [0, on_kn] leave node n;  in[k, n] ∈ [0, slots_kn] arrive on n
    #   out[k, n] = on_kn when f[dom n];  in[k, n] = 0 when f[dom n]
    #   Σ_n in[k, n] = Σ_n out[k, n] + Σ_u pods_uk · m[u]   (u a gang without a where-value)
    # a gang in one value of where-labels: v[u, w] its value, Σ_w v[u, w] = m[u],
    #   in[u, k, n] = 0 unless v[u, val n],  Σ_n in[u, k, n] = pods_uk · m[u]
    # m[u] ≥ f[d] for every gang u on d
    # room: Σ in · d_r − Σ out · d_r − Σ_{u on n} m[u] · d_ur ≤ free_nr   (the final state)
    # moved = Σ out + Σ_u |u| · m[u] ≤ max_pods;  Σ_d own_d · f[d] ≤ max_pods (a cut: own_d
    #   the pods of the units inside d alone)
    # maximise Σ f[d] · (max_pods + 1) − moved   (count goal: Σ f ≥ need, minimise moved)

A pod that leaves and an identical one that arrives on the same node cancel out; the moves
are then put in an order in which every step has room (`order_moves`). Hinted with the
greedy's choice; `defragment` keeps the better of the two.
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
from solver.defrag._plan import Choice, order_moves
from solver.problem import BoolArray
from solver.sat import stop_on

__all__ = ["CpsatResult", "cpsat_choice", "knapsack_bound"]

CpsatResult = tuple[Choice | None, str, float]  # the choice, its status, the bound
Var = cp_model.IntVar


@dataclass
class _Flow:
    """Pods that land alike: one kind of pods of their own (`out`: leaving each node), or
    one compact gang's pods of one class and request vector (`gate`: its where-value)."""

    demand: IntArray
    node_class: int
    pods: dict[int, list[int]] = field(default_factory=dict)  # node -> movable pods there
    gate: dict[int, Var] | None = None
    within: BoolArray | None = None
    forced: dict[int, list[int]] = field(default_factory=dict)  # gang -> its pods of this kind
    into: dict[int, Var] = field(default_factory=dict)  # node -> in[k, n]
    out: dict[int, Var] = field(default_factory=dict)  # node -> out[k, n]


def knapsack_bound(inp: DefragInput) -> int:
    """Domains freeable at most: the cheapest candidates by the pods only they hold, within
    the budget (the units inside one domain alone are disjoint: a valid bound)."""
    own = np.sort(_own(inp)[inp.candidate])
    return int(np.searchsorted(np.cumsum(own), inp.goal.max_pods, side="right"))


def _own(inp: DefragInput) -> IntArray:
    pod_domain = inp.node_domain[inp.pod_node]
    out = np.zeros(inp.num_domains, dtype=np.int64)
    for d in range(inp.num_domains):
        for u in inp.domain_units[d].tolist():
            if (pod_domain[inp.units[u].pods] == d).all():
                out[d] += inp.units[u].pods.size
    return out


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
    count goal (proven), (None, "UNORDERED", bound) when its moves have no valid order;
    None when it found nothing in time."""
    started = time.perf_counter()
    goal, model = inp.goal, cp_model.CpModel()
    need = None if goal.count is None else max(0, goal.count - int(inp.empty.sum()))
    cand = np.flatnonzero(inp.candidate).tolist()
    f = {d: model.new_bool_var(f"f{d}") for d in cand}
    gangs = sorted({int(u) for d in cand for u in inp.domain_units[d].tolist()
                    if inp.units[int(u)].gang})  # fmt: skip
    m = {u: model.new_bool_var(f"m{u}") for u in gangs}
    for d in cand:
        for u in inp.domain_units[d].tolist():
            if int(u) in m:
                model.add_implication(f[d], m[int(u)])
    flows = _flows(inp, model, m)
    room = inp.free.copy()  # what may be free on a node once its movable pods are gone
    for flow in flows:
        for n, pods in flow.pods.items():
            room[n] += flow.demand * len(pods)
    for u in gangs:
        for p in inp.units[u].pods.tolist():
            room[int(inp.pod_node[p])] += inp.pod_demand[p]
    arrivals: dict[int, list[tuple[Var, IntArray]]] = defaultdict(list)
    departures: dict[int, list[tuple[Var, IntArray]]] = defaultdict(list)
    moved: list[cp_model.LinearExprT] = [len(inp.units[u].pods) * m[u] for u in gangs]
    for k, flow in enumerate(flows):
        for n, pods in flow.pods.items():
            var = model.new_int_var(0, len(pods), f"o{k}_{n}")
            d = int(inp.node_domain[n])
            if d in f:
                model.add(var == len(pods)).only_enforce_if(f[d])
            flow.out[n] = var
            departures[n].append((var, flow.demand))
            moved.append(var)
        for n, slots in zip(*_slots(inp, flow, room), strict=True):
            var = model.new_int_var(0, min(int(slots), goal.max_pods), f"i{k}_{n}")
            d = int(inp.node_domain[n])
            if d in f:
                model.add(var == 0).only_enforce_if(f[d])
            if flow.gate is not None:
                model.add(var == 0).only_enforce_if(flow.gate[n].Not())
            flow.into[n] = var
            arrivals[n].append((var, flow.demand))
        forced = sum(len(pods) * m[u] for u, pods in flow.forced.items())
        model.add(sum(flow.into.values()) == sum(flow.out.values()) + forced)
    for u in gangs:
        for p in inp.units[u].pods.tolist():
            departures[int(inp.pod_node[p])].append((m[u], inp.pod_demand[p]))
    for n, landing in arrivals.items():
        for r in range(len(inp.axis)):
            incoming = sum(var * int(dem[r]) for var, dem in landing if dem[r])
            if isinstance(incoming, int):
                continue
            leaving = sum(var * int(dem[r]) for var, dem in departures.get(n, ()) if dem[r])
            model.add(incoming - leaving <= int(inp.free[n, r]))
    total = cp_model.LinearExpr.sum(moved)
    model.add(total <= goal.max_pods)
    own = _own(inp)
    model.add(sum(int(own[d]) * f[d] for d in cand) <= goal.max_pods)
    weight = goal.max_pods + 1
    if need is None:
        model.maximize(cp_model.LinearExpr.sum(list(f.values())) * weight - total)
    else:
        model.add(sum(f.values()) >= need)
        model.minimize(total)
    _hint(inp, model, hint, f, m, flows)

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
    bound = float(solver.best_objective_bound)
    if need is None:  # objective = freed · weight − moved with 0 ≤ moved < weight
        bound = float(np.ceil(round(bound) / weight)) if bound > 0 else 0.0
        bound = min(bound, float(knapsack_bound(inp)))
    moves = order_moves(inp, _moves(inp, solver, flows, m))
    name = "OPTIMAL" if status == cp_model.OPTIMAL else "FEASIBLE"
    if moves is None:
        return None, "UNORDERED", bound
    chosen = tuple(d for d in cand if solver.boolean_value(f[d]))
    return Choice(chosen, tuple(moves)), name, bound


def _flows(inp: DefragInput, model: cp_model.CpModel, m: dict[int, Var]) -> list[_Flow]:
    loose: dict[tuple[int, tuple[int, ...]], _Flow] = {}

    def kind(p: int) -> _Flow:
        cls = int(inp.node_class[inp.pod_node[p]])
        demand = inp.pod_demand[p]
        return loose.setdefault((cls, tuple(demand.tolist())), _Flow(demand, cls))

    out: list[_Flow] = []
    for u, unit in enumerate(inp.units):
        if not unit.movable:
            continue
        if not unit.gang:
            p = int(unit.pods[0])
            kind(p).pods.setdefault(int(inp.pod_node[p]), []).append(p)
        elif u in m and not unit.compact:
            for p in unit.pods.tolist():
                kind(p).forced.setdefault(u, []).append(p)
        elif u in m:
            out += _compact(inp, model, u, m[u])
    return [*(loose[k] for k in sorted(loose)), *out]


def _compact(inp: DefragInput, model: cp_model.CpModel, u: int, moved: Var) -> list[_Flow]:
    """The flows of a gang that lies in one value of its where-labels: one Boolean per
    value it may land in, one flow per (class, requests) of its pods."""
    unit = inp.units[u]
    values = np.stack([inp.where[k] for k in unit.compact], axis=1)
    labelled = np.asarray((values >= 0).all(axis=1), dtype=bool)
    which = {
        tuple(row): model.new_bool_var(f"v{u}_{i}")
        for i, row in enumerate(np.unique(values[labelled], axis=0).tolist())
    }
    model.add(sum(which.values()) == moved)
    gate = {n: which[tuple(values[n].tolist())] for n in np.flatnonzero(labelled).tolist()}
    flows: dict[tuple[int, tuple[int, ...]], _Flow] = {}
    for p in unit.pods.tolist():
        cls, demand = int(inp.node_class[inp.pod_node[p]]), inp.pod_demand[p]
        key = (cls, tuple(demand.tolist()))
        flow = flows.setdefault(key, _Flow(demand, cls, gate=gate, within=labelled))
        flow.forced.setdefault(u, []).append(p)
    return list(flows.values())


def _slots(inp: DefragInput, flow: _Flow, room: IntArray) -> tuple[list[int], list[int]]:
    """The nodes a pod of `flow` may land on, and how many fit each once every movable pod
    there is gone."""
    ok = inp.target & (inp.node_class == flow.node_class)
    if flow.within is not None:
        ok &= flow.within
    asked = flow.demand > 0
    if not asked.any():
        slots = np.full(len(ok), inp.goal.max_pods, dtype=np.int64)
    else:
        slots = (room[:, asked] // flow.demand[asked]).min(axis=1).clip(min=0)
    nodes = np.flatnonzero(ok & (slots > 0))
    return nodes.tolist(), slots[nodes].tolist()


def _hint(
    inp: DefragInput,
    model: cp_model.CpModel,
    hint: Choice,
    f: dict[int, Var],
    m: dict[int, Var],
    flows: list[_Flow],
) -> None:
    freed = set(hint.freed)
    for d, var in f.items():
        model.add_hint(var, d in freed)
    moved = {int(inp.pod_unit[p]) for p, _ in hint.moves}
    for u, var in m.items():
        model.add_hint(var, u in moved)
    left: dict[tuple[int, int], int] = defaultdict(int)
    came: dict[tuple[int, int], int] = defaultdict(int)
    for p, target in hint.moves:
        left[(int(inp.pod_node[p]), p)] += 1
        came[(target, p)] += 1
    for flow in flows:
        if flow.gate is not None or flow.forced:
            continue
        mine = {p for pods in flow.pods.values() for p in pods}
        for n, var in flow.out.items():
            model.add_hint(var, sum(1 for p in flow.pods[n] if (n, p) in left))
        for n, var in flow.into.items():
            model.add_hint(var, sum(c for (t, p), c in came.items() if t == n and p in mine))


def _moves(
    inp: DefragInput, solver: cp_model.CpSolver, flows: list[_Flow], m: dict[int, Var]
) -> list[tuple[int, int]]:
    """(pod, target) per moved pod: each flow's leaving pods matched to its arrivals; a pod
    of its own leaving a node an identical pod arrives on stays instead (both cancel)."""
    out: list[tuple[int, int]] = []
    for flow in flows:
        arriving: dict[int, int] = {n: solver.value(var) for n, var in flow.into.items()}
        leaving = [p for u, pods in flow.forced.items() if solver.boolean_value(m[u]) for p in pods]
        for n, var in flow.out.items():
            for p in flow.pods[n][: solver.value(var)]:
                if arriving.get(n, 0) > 0:
                    arriving[n] -= 1  # an identical pod arrives here: this one stays
                else:
                    leaving.append(p)
        targets = [n for n, count in arriving.items() for _ in range(count)]
        out += zip(leaving, targets, strict=True)
    return out
