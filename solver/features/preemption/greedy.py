"""Koordinator's preemption and Volcano's reclaim, as the greedy makes them.

Dry run: every potential victim of lower priority is removed, and the group's required
pods are placed per pod type on nodes by the job-aware cost (Σ over distinct victim jobs on
the node of their priority rank) ↑, then node index — with the room of the whole node, so a
node is filled before the next (topology gangs by the gather solver, each node scored
`−cost`: the cost breaks ties after existing peers and offer slots). Then, per chosen
node, its potential victims in (priority ↓, job, name) order are reprieved while the
planned pods still fit; the rest are victims. Reclaim evicts in its victim order until the
job fits, or nothing.
"""

from __future__ import annotations

import numpy as np

from solver.features.preemption.plans import PreemptionPlan, plan_cost, whole_gangs
from solver.features.preemption.pool import CandidatePool
from solver.features.preemption.reclaim import Reclaimer
from solver.features.preemption.victims import PreemptionInput
from solver.features.queues import QuotaBlock
from solver.features.topology import GatherBlock
from solver.features.topology.koordinator.gather import gather_unit
from solver.features.topology.rules import DomainRule
from solver.problem import IntArray, Problem, fill, fit_report, format_fit_error

__all__ = [
    "cheapest_nodes",
    "fill_all",
    "finish_plan",
    "greedy_plan",
    "ineligible",
    "reclaim_plan",
    "reprieve",
    "rule_nodes",
    "shortfall",
]


def fill_all(
    problem: Problem,
    required: dict[int, int],
    room: IntArray,
    rules: list[DomainRule] | None = None,
) -> dict[int, list[int]] | None:
    """Nodes for every required pod on `room` (binpack order, as the greedy places), each
    rule's pods in its first domain (by index) that holds them all; or None."""
    trial = room.copy()
    out: dict[int, list[int]] = {}
    ruled: set[int] = set()
    for rule in rules or ():
        ruled.update(rule.types)
        found = _in_one_domain(problem, rule, required, trial)
        if found is None:
            return None
        out.update(found)
    for t, count in required.items():
        if t in ruled:
            continue
        nodes = fill(problem, t, count, trial)
        if nodes.size < count:
            return None
        out[t] = nodes.tolist()
    return out


def _in_one_domain(
    problem: Problem, rule: DomainRule, required: dict[int, int], trial: IntArray
) -> dict[int, list[int]] | None:
    """The rule's required pods in its first domain that holds them (`trial` charged)."""
    need = {t: required[t] for t in rule.types if required.get(t, 0) > 0}
    zero = np.zeros(problem.num_nodes, dtype=np.int64)
    order = np.argsort(rule.domain, kind="stable")
    bounds = np.searchsorted(rule.domain[order], np.arange(len(rule.names) + 1))
    for d in range(len(rule.names)):
        nodes = order[bounds[d] : bounds[d + 1]]
        saved = trial[nodes].copy()
        out: dict[int, list[int]] = {}
        for t, count in need.items():
            chosen = rule_nodes(problem, rule, t, count, trial, zero, nodes)
            if chosen.size < count:
                break
            np.subtract.at(trial, chosen, problem.type_demand[t])
            out[t] = chosen.tolist()
        else:
            return out
        trial[nodes] = saved
    return None


def reclaim_plan(
    problem: Problem,
    pre: PreemptionInput,
    planner: Reclaimer,
    u: int,
    required: dict[int, int],
    free: IntArray,
    removed: np.ndarray,
    rules: list[DomainRule],
) -> PreemptionPlan | str | None:
    """Volcano's reclaim for unit u: evict in victim order until the job fits (or nothing),
    inside one domain of each of its `rules`.

    None when the unit is in no queue; a reason when reclaim cannot help.
    """
    t0 = next(iter(required), None)
    quota = problem.block(QuotaBlock)
    if t0 is None or quota is None or not quota.type_queues or not quota.type_queues[t0]:
        return None
    queue = quota.queue_names[quota.type_queues[t0][0]]
    request: dict[str, int] = {}
    for t, count in required.items():
        for r, v in zip(problem.resources, problem.type_demand[t].tolist(), strict=True):
            request[r] = request.get(r, 0) + v * count
    unit_gangs = [gid for g, gid in enumerate(problem.gang_ids) if problem.gang_unit[g] == u]
    why = planner.may_reclaim(queue, request, int(problem.unit_priority[u]), unit_gangs)
    if why:
        return why
    index = {int(row): v for v, row in enumerate(pre.rows.tolist())}
    room = free.copy()
    chosen: list[int] = []
    for k in planner.eligible_in_order(queue, request, unit_gangs):
        v = index.get(int(planner.rows[k]))
        if v is None or removed[v]:
            continue
        chosen.append(v)
        room[pre.victim_node[v]] += pre.victim_demand[v]
        nominated = fill_all(problem, required, room, rules)
        if nominated is not None:
            victims = sorted(whole_gangs(pre, set(chosen)), key=pre.key)
            return PreemptionPlan(u, victims, nominated, plan_cost(pre, victims), "reclaim", queue)
    why = (
        "evicting every reclaimable pod of other queues does not make room for the job "
        f"of queue {queue}"
    )
    return f"{why}; {planner.refused}" if planner.refused else why


def ineligible(problem: Problem, pre: PreemptionInput, u: int, gangs: list[int]) -> str | None:
    first = min(
        (pre.trigger[problem.gang_ids[g]] for g in gangs if problem.gang_ids[g] in pre.trigger),
        default=None,
    )
    if first is not None and first[1] == "Never":
        return "not eligible due to preemptionPolicy=Never."
    priority = int(problem.unit_priority[u])
    for g in gangs:
        for n in pre.nominated.get(problem.gang_ids[g], ()):
            if n in pre.terminating_on and pre.terminating_on[n] < priority:
                return "not eligible due to terminating pod on the nominated node."
    return None


def greedy_plan(
    problem: Problem,
    pre: PreemptionInput,
    u: int,
    gangs: list[int],
    required: dict[int, int],
    free: IntArray,
    pool: CandidatePool,
) -> PreemptionPlan | str:
    """Koordinator's dry run, min-cost nodes, and per-node reprieve; a reason when it fails."""
    if pool.size == 0:
        return "preemption not helpful: no potential victims"
    room = free + pool.room
    # job-aware cost per node: Σ over distinct candidate jobs on the node of their rank
    node_cost = pool.node_cost
    nominated: dict[int, list[int]] = {}
    topology = problem.block(GatherBlock)
    if topology is not None and topology.is_gather(u):
        # Koordinator plans topology gangs with the gather solver on the dry-run cluster,
        # each node scored −cost (`PlanNodes`: nodeScore = −cost), so the cost breaks ties
        # only after existing peers and the offer-slot chain (koordinator.md §4.4).
        outcome = gather_unit(problem, topology, u, gangs, room, node_score=-node_cost)
        if outcome.message:
            return f"preemption not helpful: {outcome.message}"
        for t, nodes in outcome.pod_node.items():
            chosen = nodes[nodes >= 0]
            np.subtract.at(room, chosen, problem.type_demand[t])
            nominated[t] = chosen.tolist()
        required = {}
    return finish_plan(problem, pre, pool, u, required, room, nominated)


def finish_plan(
    problem: Problem,
    pre: PreemptionInput,
    pool: CandidatePool,
    u: int,
    required: dict[int, int],
    room: IntArray,
    nominated: dict[int, list[int]],
) -> PreemptionPlan | str:
    """The required pods of types not yet in `nominated` on the cheapest nodes of the dry
    run's `room`, then the reprieve: the plan, or why a pod has no node."""
    for t, count in required.items():
        if t in nominated:
            continue
        chosen = cheapest_nodes(problem, t, count, room, pool.node_cost)
        if chosen.size < count:
            return shortfall(problem, t, chosen.size, count, room)
        np.subtract.at(room, chosen, problem.type_demand[t])
        nominated[t] = chosen.tolist()
    victims = reprieve(problem, pre, pool, nominated, room)
    return PreemptionPlan(u, victims, nominated, plan_cost(pre, victims), "greedy")


def cheapest_nodes(
    problem: Problem,
    t: int,
    count: int,
    room: IntArray,
    node_cost: IntArray,
    nodes: IntArray | None = None,
) -> IntArray:
    """Up to `count` nodes for pods of type t (a node once per pod), whole nodes first in
    (job-aware cost ↑, node index) order, among `nodes` (every node when None)."""
    demand = problem.type_demand[t]
    positive = demand > 0
    if nodes is None:
        nodes = np.arange(problem.num_nodes)
    slots = np.min(np.maximum(room[nodes][:, positive], 0) // demand[positive], axis=1)
    slots = np.where(problem.eligible[t][nodes], slots, 0)
    order = np.lexsort((nodes, node_cost[nodes]))
    order = order[slots[order] > 0]
    take = np.minimum(slots[order], np.maximum(count - (np.cumsum(slots[order]) - slots[order]), 0))
    return np.repeat(nodes[order[take > 0]], take[take > 0])


def rule_nodes(
    problem: Problem,
    rule: DomainRule,
    t: int,
    count: int,
    room: IntArray,
    node_cost: IntArray,
    nodes: IntArray,
) -> IntArray:
    """`cheapest_nodes` among `nodes` (one domain of the rule), in whole slices when the rule
    has them: slice domains in (their nodes' summed cost ↑, index) order, each taking as
    many whole slices as its room holds, until `count` pods have nodes; with several layers,
    each slice of a layer made of whole slices of the next."""
    return _in_slices(problem, t, count, room, node_cost, nodes, rule.slices)


def _in_slices(
    problem: Problem,
    t: int,
    count: int,
    room: IntArray,
    node_cost: IntArray,
    nodes: IntArray,
    layers: tuple[tuple[IntArray, int], ...],
) -> IntArray:
    if not layers:
        return cheapest_nodes(problem, t, count, room, node_cost, nodes)
    (slice_of, size), inner = layers[0], layers[1:]
    inside = slice_of[nodes]
    nodes, inside = nodes[inside >= 0], inside[inside >= 0]
    values, at = np.unique(inside, return_inverse=True)
    cost = np.bincount(at, weights=node_cost[nodes], minlength=values.size)
    chosen: list[IntArray] = []
    left = count
    for k in np.lexsort((values, cost)).tolist():
        members = nodes[at == k]
        fits = _in_slices(problem, t, left, room, node_cost, members, inner)
        take = (fits.size // size) * size  # whole inner slices too: their sizes divide it
        if take:
            chosen.append(fits[:take])
            np.subtract.at(room, fits[:take], problem.type_demand[t])
            left -= take
        if left == 0:
            break
    picked = np.concatenate(chosen) if chosen else np.zeros(0, dtype=np.int64)
    np.add.at(room, picked, problem.type_demand[t])  # the caller charges them
    return picked


def shortfall(problem: Problem, t: int, placed: int, count: int, room: IntArray) -> str:
    _, counts = fit_report(problem, t, room)
    return (
        "preemption not helpful: after evicting every eligible lower-priority pod, "
        f"{placed} of {count} required pod(s) fit; {format_fit_error(problem.num_nodes, counts)}"
    )


def reprieve(
    problem: Problem,
    pre: PreemptionInput,
    pool: CandidatePool,
    nominated: dict[int, list[int]],
    room: IntArray,
) -> list[int]:
    """The victims: per node the plan uses, its potential victims in (priority ↓, job, name)
    order are reprieved while the planned pods still fit (`room`: the dry run's room left
    after the planned pods, indexed by node); victim gangs left below minMember go whole."""
    used_nodes = sorted({n for nodes in nominated.values() for n in nodes})
    found = pool.on_nodes(used_nodes)
    if found.size == 0:
        return []
    checked = np.zeros((problem.num_nodes, len(problem.resources)), dtype=bool)
    for t, targets in nominated.items():
        checked[targets] |= problem.type_demand[t] > 0
    ordered = _reprieve_order(pre, found)
    nodes_of = pre.victim_node[ordered].tolist()
    demands = pre.victim_demand[ordered].tolist()
    victims: set[int] = set()
    left: list[int] = []
    mask: list[int] = []
    current = -1
    for i, v in enumerate(ordered.tolist()):
        n = nodes_of[i]
        if n != current:
            current = n
            mask = np.flatnonzero(checked[n]).tolist()
            left = room[n].tolist()
        d = demands[i]
        if all(left[r] - d[r] >= 0 for r in mask):
            for r in mask:
                left[r] -= d[r]  # reprieved: it stays
        else:
            victims.add(v)
    return sorted(whole_gangs(pre, victims), key=pre.key)


def _reprieve_order(pre: PreemptionInput, found: IntArray) -> IntArray:
    """`found` by node, then the reprieve order: priority ↓, job name, pod key (the key is
    read only where node, priority and job tie)."""
    jobs = pre.victim_job[found]
    unique_jobs, job_index = np.unique(jobs, return_inverse=True)
    names = [pre.job_name(int(j)) for j in unique_jobs.tolist()]
    name_rank = np.empty(len(names), dtype=np.int64)
    name_rank[sorted(range(len(names)), key=names.__getitem__)] = np.arange(len(names))
    nodes = pre.victim_node[found]
    priority = pre.victim_priority[found]
    job_rank = name_rank[job_index]
    order = np.lexsort((job_rank, -priority, nodes))
    group = np.stack([nodes[order], priority[order], job_rank[order]], axis=1)
    same = (group[1:] == group[:-1]).all(axis=1)
    if same.any():  # runs of equal (node, priority, job): by pod key
        starts = np.flatnonzero(np.r_[True, ~same])
        ends = np.r_[starts[1:], order.size]
        for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
            if b - a > 1:
                order[a:b] = sorted(order[a:b].tolist(), key=lambda i: pre.key(int(found[i])))
    ordered: IntArray = found[order]
    return ordered
