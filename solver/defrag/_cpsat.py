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
    # maximise Σ f[d], then minimise moved with Σ f[d] at that   (count goal: Σ f ≥ need,
    #   minimise moved)

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
from solver.defrag._room import GangArrivals
from solver.gate import GATE
from solver.problem import BoolArray
from solver.sat import stop_on

__all__ = ["CpsatResult", "cpsat_choice", "knapsack_bound", "relaxed_bound"]

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
    room_for: GangArrivals | None = None,
) -> CpsatResult | None:
    """The model's best choice, OPTIMAL or FEASIBLE, and the bound (maximise: domains freed
    at most; count: pods moved at least); (None, "INFEASIBLE", 0) when no choice meets the
    count goal (proven), (None, "UNORDERED", bound) when its moves have no valid order;
    None when it found nothing in time. With `room_for` (a pending gang's arrivals): no
    domain is freed; the fewest pods of their own moved so that the gang fits.

    On a large cluster the model keeps the cheapest candidate domains (by the pods only they
    hold: `_DOMAINS_PER_BOUND` × the knapsack bound, at least `_MIN_DOMAINS`, and the
    greedy's) and, past `_ALL_PODS` movable pods, lets move only the pods of those domains
    and of the `_HOLES` nodes per kind closest to having room for it: a smaller model that
    still holds the greedy's plan, so never worse. The bound is the whole cluster's: the
    knapsack bound and a relaxation (`relaxed_bound`), and the model's own when nothing was
    left out."""
    started = time.perf_counter()
    goal, model = inp.goal, cp_model.CpModel()
    # the relaxation's bound first, on a slice of the time: the model then gets the rest
    relaxed = 0.0 if room_for is not None else relaxed_bound(
        inp, None if goal.count is None else max(0, goal.count - int(inp.empty.sum())),
        workers, seed, min(_RELAXED_SECONDS, _RELAXED_SHARE * time_limit),
    )  # fmt: skip
    need = None if goal.count is None else max(0, goal.count - int(inp.empty.sum()))
    if room_for is not None:
        need = 0
    own = _own(inp)
    cand = [] if room_for is not None else _kept(inp, own, hint, need)
    f = {d: model.new_bool_var(f"f{d}") for d in cand}
    gangs = sorted({int(u) for d in cand for u in inp.domain_units[d].tolist()
                    if inp.units[int(u)].gang and inp.units[int(u)].movable})  # fmt: skip
    m = {u: model.new_bool_var(f"m{u}") for u in gangs}
    for d in cand:
        for u in inp.domain_units[d].tolist():
            if int(u) in m:
                model.add_implication(f[d], m[int(u)])
    in_cand = np.isin(inp.node_domain, cand)
    hinted = {n for _, n in hint.moves}
    singles = sum(1 for u in inp.units if u.movable and not u.gang)
    near = room_for.eligible() if room_for is not None else in_cand | _holes(inp, in_cand)
    movers = near if singles > _ALL_PODS else np.ones_like(in_cand)
    flows = _flows(inp, model, m, movers)
    room = inp.free.copy()  # what may be free on a node once its movable pods are gone
    for flow in flows:
        for n, pods in flow.pods.items():
            room[n] += flow.demand * len(pods)
    for u in gangs:
        for p in inp.units[u].pods.tolist():
            room[int(inp.pod_node[p])] += inp.pod_demand[p]
    arrivals: dict[int, list[tuple[Var, IntArray]]] = defaultdict(list)
    departures: dict[int, list[tuple[Var, IntArray]]] = defaultdict(list)
    leaving_all: dict[int, tuple[list[Var], int]] = {}
    moved: list[cp_model.LinearExprT] = [len(inp.units[u].pods) * m[u] for u in gangs]
    building = started + _BUILDING * time_limit  # past it, no time is left to solve
    for k, flow in enumerate(flows):
        if time.perf_counter() > building:
            return None
        for n, pods in flow.pods.items():
            var = model.new_int_var(0, len(pods), f"o{k}_{n}")
            flow.out[n] = var
            departures[n].append((var, flow.demand))
            held, count = leaving_all.get(n, ([], 0))
            leaving_all[n] = ([*held, var], count + len(pods))
            moved.append(var)
        for n, slots in zip(*_slots(inp, flow, room, hinted), strict=True):
            var = model.new_int_var(0, min(int(slots), goal.max_pods), f"i{k}_{n}")
            if flow.gate is not None:
                model.add(var <= min(int(slots), goal.max_pods) * flow.gate[n])
            flow.into[n] = var
            arrivals[n].append((var, flow.demand))
        forced = sum(len(pods) * m[u] for u, pods in flow.forced.items())
        model.add(sum(flow.into.values()) == sum(flow.out.values()) + forced)
    for n, (held, count) in leaving_all.items():  # a freed domain's pods all leave
        d = int(inp.node_domain[n])
        if d in f:
            model.add(sum(held) >= count * f[d])
    for n, landing in arrivals.items():  # nothing lands on a freed domain
        d = int(inp.node_domain[n])
        if d in f:
            model.add(sum(var for var, _ in landing) <= goal.max_pods * (1 - f[d]))
    for u in gangs:
        for p in inp.units[u].pods.tolist():
            departures[int(inp.pod_node[p])].append((m[u], inp.pod_demand[p]))
    if room_for is not None:
        room_for.build(model, room, inp.target)
        for n in room_for.nodes():
            arrivals[n] += room_for.arrivals(n)
    for n, landing in arrivals.items():
        for r in range(len(inp.axis)):
            incoming = sum(var * int(dem[r]) for var, dem in landing if dem[r])
            if isinstance(incoming, int):
                continue
            leaving = sum(var * int(dem[r]) for var, dem in departures.get(n, ()) if dem[r])
            model.add(incoming - leaving <= int(inp.free[n, r]))
    total = cp_model.LinearExpr.sum(moved)
    model.add(total <= goal.max_pods)
    model.add(sum(int(own[d]) * f[d] for d in cand) <= goal.max_pods)
    if time.perf_counter() > building:
        return None
    _hint(inp, model, hint, f, m, flows)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = seed
    solver.parameters.hint_conflict_limit = _HINT_CONFLICTS
    some_domains = room_for is None and len(cand) < int(inp.candidate.sum())
    restricted = some_domains or not _whole(inp, flows)
    freed = cp_model.LinearExpr.sum(list(f.values()))
    found: tuple[Choice | None, int] | None = None  # the last phase's choice, its status
    model_bound = float("inf")
    if need is None:  # lexicographic: the most domains, then the fewest pods moved
        model.maximize(freed)
        status = _run(solver, model, stop, started + _FIRST_PHASE * _SOLVING * time_limit)
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            model_bound = float(np.floor(solver.best_objective_bound + 1e-9))
            found = _choice(inp, solver, cand, f, flows, m, int(cp_model.FEASIBLE))
            most = round(solver.objective_value)
            _rehint(model, solver)
            model.add(freed >= most)
            model.minimize(total)
            second = _run(solver, model, stop, started + _SOLVING * time_limit)
            if second in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                proven = status == cp_model.OPTIMAL and second == cp_model.OPTIMAL
                better = _choice(inp, solver, cand, f, flows, m,
                                 int(cp_model.OPTIMAL if proven else cp_model.FEASIBLE))  # fmt: skip
                found = better if better[0] is not None or found[0] is None else found
    else:
        model.add(freed >= need)
        model.minimize(total)
        status = _run(solver, model, stop, started + _SOLVING * time_limit)
        if status == cp_model.INFEASIBLE and not restricted:
            return None, "INFEASIBLE", 0.0
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            model_bound = float(np.ceil(solver.best_objective_bound - 1e-9))
            found = _choice(inp, solver, cand, f, flows, m, status)
    if found is None:
        return None
    choice, status = found
    if need is None:
        bound = float(min(knapsack_bound(inp), relaxed))
        bound = bound if restricted else min(bound, model_bound)
    else:
        bound = relaxed if restricted else max(relaxed, model_bound)
    name = "OPTIMAL" if status == cp_model.OPTIMAL and not restricted else "FEASIBLE"
    if choice is None:
        return None, "UNORDERED", bound
    return choice, name, bound


_RELAXED_SECONDS, _RELAXED_SHARE = 1.0, 0.1  # the relaxation's time: at most 1 s, a tenth
_BUILDING = 0.5  # of the time: the model built by then, or no CP-SAT answer
_SOLVING = 0.85  # of the time: the solve ends here; the rest extracts, orders and checks
_MIN_SOLVE = 0.01  # s: less left is no solve
_FIRST_PHASE = 0.6  # of the time: the most domains; the rest: the fewest pods moved for them
_HINT_CONFLICTS = 100_000  # CP-SAT's default (10) gives up on completing a large hint


def _choice(
    inp: DefragInput,
    solver: cp_model.CpSolver,
    cand: list[int],
    f: dict[int, Var],
    flows: list[_Flow],
    m: dict[int, Var],
    status: int,
) -> tuple[Choice | None, int]:
    """The solver's current solution as a choice with its moves in a valid order; None
    when they have none."""
    moves = order_moves(inp, _moves(inp, solver, flows, m))
    if moves is None:
        return None, status
    chosen = tuple(d for d in cand if solver.boolean_value(f[d]))
    return Choice(chosen, tuple(moves)), status


def _run(
    solver: cp_model.CpSolver, model: cp_model.CpModel, stop: threading.Event | None, end: float
) -> int:
    """Solve until `end`; no time left (the model's building took it): UNKNOWN."""
    left = end - time.perf_counter()
    if left < _MIN_SOLVE:
        return int(cp_model.UNKNOWN)
    solver.parameters.max_time_in_seconds = left
    with stop_on(stop, solver), GATE.outside():
        return int(solver.solve(model))


def _rehint(model: cp_model.CpModel, solver: cp_model.CpSolver) -> None:
    """Hint every variable with the solution just found (the next phase starts from it)."""
    model.clear_hints()  # type: ignore[no-untyped-call]
    for i in range(len(model.proto.variables)):
        var = model.get_int_var_from_proto_index(i)
        model.add_hint(var, solver.value(var))


def relaxed_bound(
    inp: DefragInput, need: int | None, workers: int, seed: int, seconds: float = 1.0
) -> float:
    """A bound for the whole cluster from a relaxation: per node class and resource, the
    pods of the freed domains need room on the class's other target nodes, summed (no
    packing, no holes: moving pods between kept nodes opens no room in sum); the pods only
    a domain holds count against the budget. Maximise: domains freed at most; count goal:
    pods moved at least."""
    own = _own(inp)
    cand = np.flatnonzero(inp.candidate).tolist()
    model = cp_model.CpModel()
    f = {d: model.new_bool_var(f"f{d}") for d in cand}
    model.add(sum(int(own[d]) * f[d] for d in cand) <= inp.goal.max_pods)
    room = np.where(inp.target[:, None], inp.free.clip(min=0), 0)
    pod_domain = inp.node_domain[inp.pod_node]
    for cls in np.unique(inp.node_class).tolist():
        nodes = inp.node_class == cls
        for r in range(len(inp.axis)):
            need_r = np.zeros(inp.num_domains, dtype=np.int64)
            here = (inp.node_class[inp.pod_node] == cls) & (pod_domain >= 0)
            np.add.at(need_r, pod_domain[here], inp.pod_demand[here, r])
            lost = np.zeros(inp.num_domains, dtype=np.int64)
            inside = nodes & (inp.node_domain >= 0)
            np.add.at(lost, inp.node_domain[inside], room[inside, r])
            terms = [(int(need_r[d] + lost[d]), f[d]) for d in cand if need_r[d]]
            if terms and sum(c for c, _ in terms) > int(room[nodes, r].sum()):
                model.add(sum(c * v for c, v in terms) <= int(room[nodes, r].sum()))
    if need is None:
        model.maximize(sum(f.values()))
    else:
        model.add(sum(f.values()) >= need)
        model.minimize(sum(int(own[d]) * f[d] for d in cand))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.01, seconds)
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = seed
    with GATE.outside():
        status = solver.solve(model)
    if status == cp_model.INFEASIBLE:
        return 0.0 if need is None else float(inp.goal.max_pods + 1)
    bound = solver.best_objective_bound
    if need is None:  # no time for even a bound: every candidate
        return float(np.floor(bound + 1e-9)) if np.isfinite(bound) else float(len(cand))
    return float(np.ceil(bound - 1e-9)) if np.isfinite(bound) else 0.0


_MIN_DOMAINS = 16
_ALL_PODS = 300  # movable pods of their own: more, and only those near the kept domains move
_DOMAINS_PER_BOUND = 3
_HOLES = 8


def _kept(inp: DefragInput, own: IntArray, hint: Choice, need: int | None) -> list[int]:
    """The candidate domains the model keeps: every one on a small cluster; else the
    cheapest by the pods only they hold, and the greedy's."""
    cand = np.flatnonzero(inp.candidate)
    bound = knapsack_bound(inp) if need is None else need
    keep = max(_MIN_DOMAINS, _DOMAINS_PER_BOUND * bound)
    if cand.size <= keep:
        return cand.tolist()
    order = cand[np.lexsort((cand, inp.cost[cand], own[cand]))]
    return sorted(set(order[:keep].tolist()) | set(hint.freed))


def _holes(inp: DefragInput, in_cand: BoolArray) -> BoolArray:
    """[N] nodes where moving pods off may open room for a pod of the kept domains: per
    kind of those pods, the `_HOLES` nodes of its class with the most free room that do not
    fit it now but would once their movable pods of their own are gone."""
    out = np.zeros(len(inp.node_domain), dtype=bool)
    single = np.array([not inp.units[int(u)].gang and inp.units[int(u)].movable
                       for u in inp.pod_unit], dtype=bool)  # fmt: skip
    room = inp.free.copy()
    for r in range(len(inp.axis)):
        room[:, r] += np.bincount(inp.pod_node[single], weights=inp.pod_demand[single, r],
                                  minlength=len(room)).astype(np.int64)  # fmt: skip
    scale = np.maximum(inp.capacity, 1)
    openness = (inp.free.clip(min=0) / scale).sum(axis=1)
    movers = np.flatnonzero(in_cand[inp.pod_node])
    kinds = {
        (int(inp.node_class[inp.pod_node[p]]), tuple(inp.pod_demand[p].tolist()))
        for p in movers.tolist()
    }
    for cls, demand in kinds:
        need = np.array(demand)
        near = (inp.target & (inp.node_class == cls) & ~in_cand
                & ~(inp.free >= need).all(axis=1) & (room >= need).all(axis=1))  # fmt: skip
        nodes = np.flatnonzero(near)
        out[nodes[np.argsort(-openness[nodes], kind="stable")[:_HOLES]]] = True
    return out


def _whole(inp: DefragInput, flows: list[_Flow]) -> bool:
    """Every movable pod of its own is in the model (nothing was left out for size)."""
    modelled = sum(len(pods) for flow in flows for pods in flow.pods.values())
    singles = sum(1 for u in inp.units if u.movable and not u.gang)
    return modelled == singles


def _flows(
    inp: DefragInput, model: cp_model.CpModel, m: dict[int, Var], movers: BoolArray
) -> list[_Flow]:
    """The flows of the pods that may move: pods of their own on `movers` nodes (those of
    the kept domains and the holes), the gangs of `m`."""
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
            if movers[inp.pod_node[p]]:
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


def _slots(
    inp: DefragInput, flow: _Flow, room: IntArray, hinted: set[int]
) -> tuple[list[int], list[int]]:
    """The nodes a pod of `flow` may land on, and how many fit each once every movable pod
    there is gone. On a large cluster: the nodes it fits now best (least room left, up to
    `_TARGETS_PER_POD` per pod of the flow), those it fits only once pods leave (holes),
    and the greedy's (`hinted`)."""
    ok = inp.target & (inp.node_class == flow.node_class)
    if flow.within is not None:
        ok &= flow.within
    asked = flow.demand > 0
    if not asked.any():
        slots = np.full(len(ok), inp.goal.max_pods, dtype=np.int64)
    else:
        slots = (room[:, asked] // flow.demand[asked]).min(axis=1).clip(min=0)
    nodes = np.flatnonzero(ok & (slots > 0))
    pods = sum(len(p) for p in flow.pods.values()) + sum(len(p) for p in flow.forced.values())
    limit = max(_MIN_TARGETS, _TARGETS_PER_POD * pods)
    if flow.gate is None and nodes.size > limit:
        fits_now = (inp.free[nodes] >= flow.demand).all(axis=1)
        now = nodes[fits_now]
        left = ((inp.free[now] - flow.demand) / np.maximum(inp.capacity[now], 1)).sum(axis=1)
        best = now[np.argsort(left, kind="stable")[:limit]]
        keep = set(best.tolist()) | set(nodes[~fits_now].tolist()) | (hinted & set(nodes.tolist()))
        nodes = np.array(sorted(keep), dtype=np.int64)
    return nodes.tolist(), slots[nodes].tolist()


_MIN_TARGETS = 32
_TARGETS_PER_POD = 4


def _hint(
    inp: DefragInput,
    model: cp_model.CpModel,
    hint: Choice,
    f: dict[int, Var],
    m: dict[int, Var],
    flows: list[_Flow],
) -> None:
    """Every variable hinted with the greedy's choice (a complete, feasible hint: the
    greedy's moves land on room free before the plan, which the model keeps)."""
    freed = set(hint.freed)
    for d, var in f.items():
        model.add_hint(var, d in freed)
    target = dict(hint.moves)
    moved = {int(inp.pod_unit[p]) for p in target}
    for u, var in m.items():
        model.add_hint(var, u in moved)
    gates: dict[int, int] = {}
    for flow in flows:
        mine = [p for pods in flow.pods.values() for p in pods]
        mine += [p for pods in flow.forced.values() for p in pods]
        for n, var in flow.out.items():
            model.add_hint(var, sum(1 for p in flow.pods[n] if p in target))
        landing: dict[int, int] = defaultdict(int)
        for p in mine:
            if p in target:
                landing[target[p]] += 1
        for n, var in flow.into.items():
            model.add_hint(var, landing.get(n, 0))
        if flow.gate is not None:
            for n, count in landing.items():
                if n in flow.gate and count:
                    gates[flow.gate[n].index] = 1
    for flow in flows:
        if flow.gate is not None:
            for var in {v.index: v for v in flow.gate.values()}.values():
                if var.index not in gates:
                    gates[var.index] = 0
                    model.add_hint(var, False)
                elif gates[var.index] == 1:
                    gates[var.index] = 2
                    model.add_hint(var, True)


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
