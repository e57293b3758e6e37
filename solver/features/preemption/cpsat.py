"""Victims and nodes together in CP-SAT: minimise Σ rank of evicted jobs, then the GPU-hours
of work they lose, then evicted pods.

    # x[t, n] = pods of type t nominated to node n;  e[v] = victim v evicted;  z[j] = job j
    # Σ_t x[t, n] · d_tr ≤ free_nr + Σ_{v on n} e_v · d_vr;   e_v ⇒ z_job(v)
    # a victim gang left below minMember is evicted whole
    # per domain rule k: y[k, d] = its pods in domain d;  Σ_d y[k, d] = 1;
    #   x[t, n] ≤ slots_tn · y[k, dom_k(n)] for t of rule k (one domain, chosen with the victims)
    # minimise (Σ_j rank_j · z_j) · (L + 1)(V + 1) + (Σ_v lost_v · e_v) · (V + 1) + Σ_v e_v
    #   lost_v: GPU-hours since the victim's creation (`victims.lost_work`), L = Σ lost_v

Hinted with the greedy plan; the cheaper plan wins (never worse than the greedy's).
"""

from __future__ import annotations

import time

import numpy as np
from ortools.sat.python import cp_model

from solver.features.preemption.plans import PreemptionPlan, plan_cost, plan_lost, whole_gangs
from solver.features.preemption.victims import PreemptionInput
from solver.features.topology.rules import DomainRule
from solver.gate import GATE
from solver.problem import IntArray, Problem

__all__ = ["cpsat_plan"]

_NODES_PER_POD = 4  # candidate nodes kept per required pod on large clusters
_MIN_NODES = 256


def cpsat_plan(
    problem: Problem,
    pre: PreemptionInput,
    u: int,
    required: dict[int, int],
    free: IntArray,
    candidates: IntArray,
    hint: PreemptionPlan,
    workers: int,
    seed: int,
    budget: float,
    rules: list[DomainRule] | None = None,
) -> PreemptionPlan | None:
    """Victims and nodes together: minimise Σ rank of evicted jobs, then evicted pods.

    On large clusters the model keeps the greedy plan's nodes plus the nodes whose cheapest
    victim is cheapest (up to `_NODES_PER_POD` per required pod): a smaller model that
    still contains the greedy plan, so the answer is never worse, only possibly not optimal.
    """
    started = time.perf_counter()
    types = sorted(required)
    limit = max(_MIN_NODES, _NODES_PER_POD * sum(required.values()))
    candidates = _that_can_help(problem, pre, required, free, candidates)
    if np.unique(pre.victim_node[candidates]).size > limit:
        cheapest = np.full(problem.num_nodes, np.iinfo(np.int64).max)
        np.minimum.at(
            cheapest, pre.victim_node[candidates], pre.job_rank[pre.victim_job[candidates]]
        )
        order = np.lexsort((np.arange(problem.num_nodes), cheapest))
        keep = set(order[:limit].tolist()) | {n for nodes in hint.nominated.values() for n in nodes}
        keep |= {int(pre.victim_node[v]) for v in hint.victims}
        for rule in rules or ():  # the whole domain the greedy chose, to choose inside it
            chosen = {int(rule.domain[n]) for t in rule.types for n in hint.nominated.get(t, [])}
            keep |= set(np.flatnonzero(np.isin(rule.domain, sorted(chosen))).tolist())
        candidates = candidates[np.isin(pre.victim_node[candidates], sorted(keep))]
        free = free.copy()
        free[
            ~np.isin(np.arange(problem.num_nodes), sorted(keep))
        ] = -1  # no room off the kept nodes
    cand = candidates.tolist()
    by_node: dict[int, list[int]] = {}
    for v in cand:
        by_node.setdefault(int(pre.victim_node[v]), []).append(v)
    room_all = free.copy()
    np.add.at(room_all, pre.victim_node[candidates], pre.victim_demand[candidates])
    model = cp_model.CpModel()
    # x[t, n] = pods of type t nominated to node n (nodes where one could fit at all)
    x: dict[tuple[int, int], cp_model.IntVar] = {}
    for t in types:
        demand = problem.type_demand[t]
        positive = demand > 0
        slots = np.min(np.maximum(room_all[:, positive], 0) // demand[positive], axis=1)
        slots = np.where(problem.eligible[t], np.minimum(slots, required[t]), 0)
        for n in np.flatnonzero(slots > 0).tolist():
            x[t, n] = model.new_int_var(0, int(slots[n]), f"x[{t},{n}]")
    # e[v] = victim v evicted; z[j] = job j evicted (costs its rank once)
    e = {v: model.new_bool_var(f"e[{v}]") for v in cand}
    jobs = sorted({int(pre.victim_job[v]) for v in cand})
    z = {j: model.new_bool_var(f"z[{j}]") for j in jobs}
    for v in cand:
        model.add_implication(e[v], z[int(pre.victim_job[v])])
    # Σ_t x[t, n] · d_tr ≤ free_nr + Σ_{v on n} e_v · d_vr
    nodes = sorted({n for _, n in x})
    for n in nodes:
        on_node = by_node.get(n, [])
        for r in range(len(problem.resources)):
            load = [
                int(problem.type_demand[t, r]) * x[t, n]
                for t in types
                if (t, n) in x and problem.type_demand[t, r] > 0
            ]
            if not load:
                continue
            freed = [
                int(pre.victim_demand[v, r]) * e[v] for v in on_node if pre.victim_demand[v, r] > 0
            ]
            model.add(
                cp_model.LinearExpr.sum(load) <= int(free[n, r]) + cp_model.LinearExpr.sum(freed)
            )
    for t in types:
        model.add(cp_model.LinearExpr.sum([x[t, n] for n in nodes if (t, n) in x]) == required[t])
    _one_domain(model, x, rules or [], required)
    # a victim gang left below minMember is evicted whole
    for j in jobs:
        members = [v for v in pre.job_members[j].tolist() if v in e]
        if pre.job_min[j] <= 0 or not members:
            continue
        evicted = cp_model.LinearExpr.sum([e[v] for v in members])
        slack = int(pre.job_running[j] - pre.job_min[j])
        if len(members) == pre.job_running[j]:
            whole = model.new_bool_var(f"whole[{j}]")
            model.add(evicted <= slack + len(members) * whole)
            model.add(evicted >= len(members) * whole)
        else:
            model.add(evicted <= slack)
    cost = cp_model.LinearExpr.sum([int(pre.job_rank[j]) * z[j] for j in jobs])
    lost_of = pre.victim_lost if pre.victim_lost is not None else np.zeros(0, dtype=np.int64)
    lost_terms = [int(lost_of[v]) * e[v] for v in cand if lost_of.size and lost_of[v] > 0]
    pods_weight = len(cand) + 1
    lost_weight = (sum(int(lost_of[v]) for v in cand) if lost_terms else 0) * pods_weight
    model.minimize(
        cost * (lost_weight + pods_weight)
        + pods_weight * cp_model.LinearExpr.sum(lost_terms)
        + cp_model.LinearExpr.sum(list(e.values()))
    )
    # the greedy plan as a complete hint
    hinted = set(hint.victims)
    for v in cand:
        model.add_hint(e[v], int(v in hinted))
    hinted_jobs = {int(pre.victim_job[v]) for v in hinted}
    for j in jobs:
        model.add_hint(z[j], int(j in hinted_jobs))
    for (t, n), var in x.items():
        model.add_hint(var, hint.nominated.get(t, []).count(n))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.01, budget - (time.perf_counter() - started))
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = seed
    with GATE.outside():
        status = solver.solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    victims = sorted((v for v in cand if solver.value(e[v])), key=pre.key)
    victims_set = whole_gangs(pre, set(victims))
    victims = sorted(victims_set, key=pre.key)
    new_cost = plan_cost(pre, victims)
    ours = (new_cost, plan_lost(pre, victims), len(victims))
    if ours >= (hint.cost, plan_lost(pre, hint.victims), len(hint.victims)):
        return None
    nominated = {
        t: [n for n in nodes if (t, n) in x for _ in range(int(solver.value(x[t, n])))]
        for t in types
    }
    return PreemptionPlan(u, victims, nominated, new_cost, "cpsat")


def _one_domain(
    model: cp_model.CpModel,
    x: dict[tuple[int, int], cp_model.IntVar],
    rules: list[DomainRule],
    required: dict[int, int],
) -> None:
    """Each rule's pods in one domain: y[k, d] chosen once, x off that domain 0."""
    for k, rule in enumerate(rules):
        ruled = set(rule.types)
        y: dict[int, cp_model.IntVar] = {}
        for (t, n), var in x.items():
            if t not in ruled:
                continue
            d = int(rule.domain[n])
            if d < 0:
                model.add(var == 0)
                continue
            if d not in y:
                y[d] = model.new_bool_var(f"y[{k},{d}]")
            model.add(var <= required[t] * y[d])
        model.add_at_most_one(list(y.values()))
        for layer, (slice_of, size) in enumerate(rule.slices):  # every layer's domains hold
            groups: dict[int, list[cp_model.IntVar]] = {}  # a multiple of its slice size
            for (t, n), var in x.items():
                if t in ruled and slice_of[n] >= 0:
                    groups.setdefault(int(slice_of[n]), []).append(var)
            most = max((required[t] for t in ruled if t in required), default=0) // size
            for e, members in groups.items():
                whole = model.new_int_var(0, most, f"slices[{k},{layer},{e}]")
                model.add(cp_model.LinearExpr.sum(members) == size * whole)


def _that_can_help(
    problem: Problem,
    pre: PreemptionInput,
    required: dict[int, int],
    free: IntArray,
    candidates: IntArray,
) -> IntArray:
    """The candidates whose eviction can make room: a victim that frees nothing of a
    resource the required pods could ever be short of on its node is evicted by an optimal
    plan only as part of a whole victim gang, so it is left out of the model (its gang's
    other members may then not go below minMember, as with the node pre-filter: the model
    stays a restriction, its answer valid and never worse than the greedy's hint).
    Resource r binds on node n only if the most the required pods could load there
    (Σ_t min(count_t, pods of t that fit with every candidate gone) · d_tr) exceeds free."""
    room_all = free.copy()
    np.add.at(room_all, pre.victim_node[candidates], pre.victim_demand[candidates])
    load = np.zeros_like(free)
    for t, count in required.items():
        demand = problem.type_demand[t]
        positive = demand > 0
        if not positive.any():
            continue
        slots = np.min(np.maximum(room_all[:, positive], 0) // demand[positive], axis=1)
        slots = np.where(problem.eligible[t], np.minimum(slots, count), 0)
        load += slots[:, None] * demand[None, :]
    binds = load > free  # [N, R]
    helps = (binds[pre.victim_node[candidates]] & (pre.victim_demand[candidates] > 0)).any(axis=1)
    return candidates[helps]
