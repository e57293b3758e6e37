"""Job-level preemption and queue reclaim: free room for a whole gang group, evict little.

With the `reclaim` action and a queue tree, Volcano's reclaim is tried first for a group in
a queue (solver/policies/reclaim.py gives the victim order and eligibility; victims are
evicted in that order until the group fits, or none are). Otherwise, or when reclaim does
not help, Koordinator's priority preemption runs:

For every gang group left unplaced by the placement engine, highest priority first
(Problem.unit_order), against the cluster as the placement left it:

1. **Eligibility** (Koordinator §4.3): the trigger pod (the group's first pending pod by
   name) must not say `preemptionPolicy: Never`; no member may be nominated to a node where
   a lower-priority pod is still terminating from an earlier preemption.
2. **Dry run**: every potential victim of lower priority is removed, and the group's
   required pods (each gang's minMember share; all pending pods of a gathered group) are
   placed. Greedy = Koordinator's rule: per pod type, nodes by the job-aware cost (Σ over
   distinct victim jobs on the node of their priority rank) ↑, then name — with the room of
   the whole node, so a node is filled before the next. If some required pod still has no
   node, **nothing is evicted** and the reason says so.
3. **Reprieve** (greedy), per chosen node: its potential victims in (priority ↓, job, name)
   order are added back while the planned pods still fit; the rest are victims.
   **CP-SAT** instead chooses victims and nodes together, minimising Σ rank of evicted jobs
   exactly across nodes, then the number of evicted pods, hinted with the greedy plan; the
   cheaper plan wins (never worse than the greedy's).
4. A victim gang left below its minMember is evicted whole (it costs once either way).

The group's pods are then *nominated* to their nodes (not bound: the victims must terminate
first); later groups see the victims gone and the nominated pods' room taken.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from ortools.sat.python import cp_model

from solver.engines._params import SolveParams
from solver.engines._result import fit_report, format_fit_error
from solver.engines.gather import gather_unit
from solver.engines.greedy import QuotaState
from solver.engines.greedy import fill_type as fill
from solver.policies.preemption import PreemptionInput
from solver.policies.reclaim import ReclaimPlanner
from solver.problem import IntArray, Problem

__all__ = ["PreemptionPlan", "PreemptionResult", "preempt"]

_NODES_PER_POD = 4  # CP-SAT model: candidate nodes kept per required pod on large clusters
_MIN_NODES = 256


@dataclass
class PreemptionPlan:
    unit: int
    victims: list[int]  # victim indices into PreemptionInput
    nominated: dict[int, list[int]]  # type -> node per nominated pod (in type_pods order)
    cost: int  # Σ rank of the distinct evicted jobs
    engine: str  # greedy | cpsat (Koordinator preemption) or reclaim (Volcano)
    queue: str = ""  # the reclaiming queue (reclaim only)


@dataclass
class PreemptionResult:
    plans: list[PreemptionPlan] = field(default_factory=list)
    reasons: dict[int, str] = field(default_factory=dict)  # gang -> why preemption did not help
    seconds: float = 0.0


def _required(problem: Problem, gangs: list[int]) -> dict[int, int]:
    """Pods per type that must be placed for the group: each gang's need (all if gathered)."""
    out: dict[int, int] = {}
    for g in gangs:
        gathered = problem.is_gather(int(problem.gang_unit[g]))
        need = int(problem.gang_pending[g]) if gathered else max(int(problem.gang_need[g]), 1)
        for t in problem.gang_types(g):
            take = min(need, len(problem.type_pods[t]))
            if take > 0:
                out[t] = take
                need -= take
    return out


def plan_cost(pre: PreemptionInput, victims: list[int]) -> int:
    return int(sum(pre.job_rank[j] for j in {int(pre.victim_job[v]) for v in victims}))


def _whole_gangs(pre: PreemptionInput, victims: set[int]) -> set[int]:
    """Add the rest of every victim gang left below its minMember."""
    out = set(victims)
    for j in {int(pre.victim_job[v]) for v in victims}:
        if pre.job_min[j] <= 0:
            continue
        evicted = sum(1 for v in pre.job_members[j] if v in out)
        if pre.job_bound[j] - evicted < pre.job_min[j]:
            out.update(pre.job_members[j])
    return out


def preempt(
    problem: Problem,
    pre: PreemptionInput,
    pod_node: list[IntArray],
    params: SolveParams,
    engine: str,
    reclaim: ReclaimPlanner | None = None,
) -> PreemptionResult:
    started = time.perf_counter()
    result = PreemptionResult()
    free = problem.free.copy()
    for t, nodes in enumerate(pod_node):
        placed = nodes[nodes >= 0]
        np.subtract.at(free, placed, problem.type_demand[t])
    removed = np.zeros(len(pre.victim_keys), dtype=bool)
    quota = QuotaState(problem)
    quota.charge_plan(dict(enumerate(pod_node)))
    placed_gangs = {
        int(problem.type_gang[t]) for t, nodes in enumerate(pod_node) if (nodes >= 0).any()
    }
    deadline = started + params.time_limit
    pending_gangs: dict[int, list[int]] = {}
    for g in np.flatnonzero(problem.gang_pending > 0).tolist():
        pending_gangs.setdefault(int(problem.gang_unit[g]), []).append(g)
    for u in problem.unit_order.tolist():
        gangs = pending_gangs.get(u, [])
        if not gangs or any(g in placed_gangs for g in gangs):
            continue
        if any(problem.gang_blocked[g] is not None for g in gangs):
            continue  # not enqueued, too few members, ...: preemption cannot help
        why = _ineligible(problem, pre, u, gangs)
        if why:
            for g in gangs:
                result.reasons[g] = f"preemption: {why}"
            continue
        domain = problem.unit_domain[u] if problem.unit_domain else None
        if domain is not None and not problem.is_gather(u):
            for g in gangs:
                result.reasons[g] = "preemption: not supported for Godel job-level affinity"
            continue
        priority = int(problem.unit_priority[u])
        required = _required(problem, gangs)
        plan: PreemptionPlan | str | None = None
        if reclaim is not None:
            plan = _reclaim_plan(problem, pre, reclaim, u, required, free, removed)
            if isinstance(plan, str):
                for g in gangs:
                    result.reasons[g] = f"reclaim: {plan}"
                plan = None
        if plan is None:
            candidates = np.flatnonzero(~removed & (pre.victim_priority < priority))
            plan = _greedy_plan(problem, pre, u, gangs, required, free, candidates)
        if isinstance(plan, str):
            for g in gangs:
                earlier = result.reasons.get(g)
                result.reasons[g] = "; ".join(x for x in (earlier, f"preemption: {plan}") if x)
            continue
        if (
            engine != "greedy"
            and plan.engine == "greedy"
            and not problem.is_gather(u)
            and time.perf_counter() < deadline - 0.05
        ):
            budget = max(0.05, deadline - time.perf_counter() - 0.05)
            better = _cpsat_plan(problem, pre, u, required, free, candidates, plan, params, budget)
            if better is not None:
                plan = better
        over = quota.admits({t: np.array(n, dtype=np.int64) for t, n in plan.nominated.items()})
        if over:
            for g in gangs:
                result.reasons[g] = f"preemption: not helpful, {over}"
            continue
        quota.charge_plan({t: np.array(n, dtype=np.int64) for t, n in plan.nominated.items()})
        victims = plan.victims
        removed[victims] = True
        for v in victims:
            free[pre.victim_node[v]] += pre.victim_demand[v]
        for t, targets in plan.nominated.items():
            np.subtract.at(free, np.array(targets, dtype=np.int64), problem.type_demand[t])
        result.plans.append(plan)
    result.seconds = time.perf_counter() - started
    return result


def _fill_all(
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


def _reclaim_plan(
    problem: Problem,
    pre: PreemptionInput,
    planner: ReclaimPlanner,
    u: int,
    required: dict[int, int],
    free: IntArray,
    removed: np.ndarray,
) -> PreemptionPlan | str | None:
    """Volcano's reclaim for unit u: evict in victim order until the job fits (or nothing).

    None when the unit is in no queue; a reason when reclaim cannot help.
    """
    t0 = next(iter(required), None)
    if t0 is None or not problem.type_queues or not problem.type_queues[t0]:
        return None
    queue = problem.queue_names[problem.type_queues[t0][0]]
    request: dict[str, int] = {}
    for t, count in required.items():
        for r, v in zip(problem.resources, problem.type_demand[t].tolist(), strict=True):
            request[r] = request.get(r, 0) + v * count
    why = planner.may_reclaim(queue, request)
    if why:
        return why
    index = {key: i for i, key in enumerate(pre.victim_keys)}
    room = free.copy()
    chosen: list[int] = []
    for k in planner.eligible_in_order(queue, request):
        v = index.get(planner.victims[k][0])
        if v is None or removed[v]:
            continue
        chosen.append(v)
        room[pre.victim_node[v]] += pre.victim_demand[v]
        nominated = _fill_all(problem, required, room)
        if nominated is not None:
            victims = sorted(_whole_gangs(pre, set(chosen)), key=lambda x: pre.victim_keys[x])
            return PreemptionPlan(u, victims, nominated, plan_cost(pre, victims), "reclaim", queue)
    return (
        "evicting every reclaimable pod of other queues does not make room for the job "
        f"of queue {queue}"
    )


def _ineligible(problem: Problem, pre: PreemptionInput, u: int, gangs: list[int]) -> str | None:
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


def _greedy_plan(
    problem: Problem,
    pre: PreemptionInput,
    u: int,
    gangs: list[int],
    required: dict[int, int],
    free: IntArray,
    candidates: IntArray,
) -> PreemptionPlan | str:
    """Koordinator's dry run, min-cost nodes, and per-node reprieve; a reason when it fails."""
    if candidates.size == 0:
        return "preemption not helpful: no potential victims"
    room = free.copy()
    np.add.at(room, pre.victim_node[candidates], pre.victim_demand[candidates])
    # job-aware cost per node: Σ over distinct candidate jobs on the node of their rank
    jobs = len(pre.job_ids)
    pairs = np.unique(pre.victim_node[candidates] * jobs + pre.victim_job[candidates])
    node_cost = np.bincount(
        pairs // jobs, weights=pre.job_rank[pairs % jobs], minlength=problem.num_nodes
    ).astype(np.int64)
    nominated: dict[int, list[int]] = {}
    if problem.is_gather(u):
        # Koordinator plans topology gangs with the gather solver on the dry-run cluster.
        outcome = gather_unit(problem, u, gangs, room)
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
    on_used = candidates[np.isin(pre.victim_node[candidates], sorted(used_nodes))]
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
                pre.job_ids[pre.victim_job[v]],
                pre.victim_keys[v],
            ),
        )
        for v in reprieve_order:
            after = left - pre.victim_demand[v]
            if np.all(after[checked] >= 0):
                left = after  # reprieved: it stays
            else:
                victims.add(v)
    victims = _whole_gangs(pre, victims)
    listed = sorted(victims, key=lambda v: pre.victim_keys[v])
    return PreemptionPlan(u, listed, nominated, plan_cost(pre, listed), "greedy")


def _cpsat_plan(
    problem: Problem,
    pre: PreemptionInput,
    u: int,
    required: dict[int, int],
    free: IntArray,
    candidates: IntArray,
    hint: PreemptionPlan,
    params: SolveParams,
    budget: float,
) -> PreemptionPlan | None:
    """Victims and nodes together: minimise Σ rank of evicted jobs, then evicted pods.

    On large clusters the model keeps the greedy plan's nodes plus the nodes whose cheapest
    victim is cheapest (up to `_NODES_PER_POD` per required pod): a smaller model that
    still contains the greedy plan, so the answer is never worse, only possibly not optimal.
    """
    types = sorted(required)
    limit = max(_MIN_NODES, _NODES_PER_POD * sum(required.values()))
    if np.unique(pre.victim_node[candidates]).size > limit:
        cheapest = np.full(problem.num_nodes, np.iinfo(np.int64).max)
        np.minimum.at(
            cheapest, pre.victim_node[candidates], pre.job_rank[pre.victim_job[candidates]]
        )
        order = np.lexsort((np.arange(problem.num_nodes), cheapest))
        keep = set(order[:limit].tolist()) | {n for nodes in hint.nominated.values() for n in nodes}
        keep |= {int(pre.victim_node[v]) for v in hint.victims}
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
    # a victim gang left below minMember is evicted whole
    for j in jobs:
        members = [v for v in pre.job_members[j] if v in e]
        if pre.job_min[j] <= 0 or not members:
            continue
        evicted = cp_model.LinearExpr.sum([e[v] for v in members])
        slack = int(pre.job_bound[j] - pre.job_min[j])
        if len(members) == pre.job_bound[j]:
            whole = model.new_bool_var(f"whole[{j}]")
            model.add(evicted <= slack + len(members) * whole)
            model.add(evicted >= len(members) * whole)
        else:
            model.add(evicted <= slack)
    cost = cp_model.LinearExpr.sum([int(pre.job_rank[j]) * z[j] for j in jobs])
    model.minimize(cost * (len(cand) + 1) + cp_model.LinearExpr.sum(list(e.values())))
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
    solver.parameters.max_time_in_seconds = budget
    solver.parameters.num_workers = params.num_workers
    solver.parameters.random_seed = params.seed
    status = solver.solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    victims = sorted((v for v in cand if solver.value(e[v])), key=lambda v: pre.victim_keys[v])
    victims_set = _whole_gangs(pre, set(victims))
    victims = sorted(victims_set, key=lambda v: pre.victim_keys[v])
    new_cost = plan_cost(pre, victims)
    if (new_cost, len(victims)) >= (hint.cost, len(hint.victims)):
        return None
    nominated = {
        t: [n for n in nodes for _ in range(int(solver.value(x[t, n]))) if (t, n) in x]
        for t in types
    }
    return PreemptionPlan(u, victims, nominated, new_cost, "cpsat")
