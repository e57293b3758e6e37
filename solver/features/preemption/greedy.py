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
from solver.features.topology import TopologyBlock
from solver.features.topology.koordinator.gather import gather_unit
from solver.problem import IntArray, Problem, fill, fit_report, format_fit_error

__all__ = ["fill_all", "greedy_plan", "ineligible", "reclaim_plan"]


def fill_all(
    problem: Problem, required: dict[int, int], room: IntArray
) -> dict[int, list[int]] | None:
    """Nodes for every required pod on `room` (binpack order, as the greedy places), or None."""
    trial = room.copy()
    out: dict[int, list[int]] = {}
    for t, count in required.items():
        nodes = fill(problem, t, count, trial)
        if nodes.size < count:
            return None
        out[t] = nodes.tolist()
    return out


def reclaim_plan(
    problem: Problem,
    pre: PreemptionInput,
    planner: Reclaimer,
    u: int,
    required: dict[int, int],
    free: IntArray,
    removed: np.ndarray,
) -> PreemptionPlan | str | None:
    """Volcano's reclaim for unit u: evict in victim order until the job fits (or nothing).

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
    why = planner.may_reclaim(queue, request)
    if why:
        return why
    index = {int(row): v for v, row in enumerate(pre.rows.tolist())}
    room = free.copy()
    chosen: list[int] = []
    for k in planner.eligible_in_order(queue, request):
        v = index.get(int(planner.rows[k]))
        if v is None or removed[v]:
            continue
        chosen.append(v)
        room[pre.victim_node[v]] += pre.victim_demand[v]
        nominated = fill_all(problem, required, room)
        if nominated is not None:
            victims = sorted(whole_gangs(pre, set(chosen)), key=pre.key)
            return PreemptionPlan(u, victims, nominated, plan_cost(pre, victims), "reclaim", queue)
    return (
        "evicting every reclaimable pod of other queues does not make room for the job "
        f"of queue {queue}"
    )


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
    node_cost = pool.node_cost.copy()
    nominated: dict[int, list[int]] = {}
    topology = problem.block(TopologyBlock)
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
    for t, count in required.items():
        demand = problem.type_demand[t]
        positive = demand > 0
        slots = np.min(np.maximum(room[:, positive], 0) // demand[positive], axis=1)
        slots = np.where(problem.eligible[t], slots, 0)
        order = np.lexsort((np.arange(problem.num_nodes), node_cost))
        order = order[slots[order] > 0]
        take = np.minimum(
            slots[order], np.maximum(count - (np.cumsum(slots[order]) - slots[order]), 0)
        )
        chosen = np.repeat(order[take > 0], take[take > 0])
        if chosen.size < count:
            _, counts = fit_report(problem, t, room)
            return (
                "preemption not helpful: after evicting every eligible lower-priority pod, "
                f"{chosen.size} of {count} required pod(s) fit; {format_fit_error(problem.num_nodes, counts)}"
            )
        np.subtract.at(room, chosen, demand)
        nominated[t] = chosen.tolist()
    # reprieve, node by node, in (priority ↓, job, name) order
    victims: set[int] = set()
    used_nodes = {n for nodes in nominated.values() for n in nodes}
    per_node: dict[int, list[int]] = {}
    on_used = pool.on_nodes(sorted(used_nodes))
    for v in on_used.tolist():
        per_node.setdefault(int(pre.victim_node[v]), []).append(v)
    for n in sorted(used_nodes):
        checked = np.zeros(len(problem.resources), dtype=bool)
        for t, targets in nominated.items():
            if n in targets:
                checked |= problem.type_demand[t] > 0
        left = room[n].copy()
        reprieve_order = sorted(
            per_node.get(n, []),
            key=lambda v: (
                -int(pre.victim_priority[v]),
                pre.job_name(int(pre.victim_job[v])),
                pre.key(v),
            ),
        )
        for v in reprieve_order:
            after = left - pre.victim_demand[v]
            if np.all(after[checked] >= 0):
                left = after  # reprieved: it stays
            else:
                victims.add(v)
    victims = whole_gangs(pre, victims)
    listed = sorted(victims, key=pre.key)
    return PreemptionPlan(u, listed, nominated, plan_cost(pre, listed), "greedy")
