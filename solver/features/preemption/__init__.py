"""Job-level preemption (Koordinator) and queue reclaim (Volcano): free room for a whole gang
group, evict little.

    victims.py  who may be evicted, as columns of the snapshot
    pool.py     the potential victims of one priority, kept by deltas across a call's plans
    reclaim.py  Volcano's hierarchy-aware reclaim: who may reclaim, victim order, eligibility
    greedy.py   Koordinator's dry run and reprieve; reclaim in victim order
    domains.py  the dry run per candidate domain, for gangs under a hard domain rule
    cpsat.py    victims and nodes chosen together, exactly
    plans.py    a plan, its cost, whole victim gangs

For every gang group left unplaced by the placement engine, highest priority first
(Problem.unit_order), against the cluster as the placement left it:

1. **Eligibility** (Koordinator §4.3): the trigger pod (the group's first pending pod by
   name) must not say `preemptionPolicy: Never`; no member may be nominated to a node where
   a lower-priority pod is still terminating from an earlier preemption.
2. **Reclaim first** (with the `reclaim` action and a capacity or proportion queue tree), else or when
   it does not help, **priority preemption**: the greedy plan (Koordinator's gather
   planner for gathered groups, `domains.py` for the other hard domain rules), then
   (engines cpsat/auto; not for a Koordinator group with podCountMultiple) the CP-SAT plan,
   under the same domain rules, when it is cheaper.
3. **All or nothing**: if even evicting every eligible pod leaves a required pod without a
   node, nothing is evicted and the reason says so; the plan must fit the queue quotas and
   the queues' node-group resource limits, checked after the victims' use is released at
   their queue and every ancestor (and from their node group's limit), as Volcano's
   `DeallocateFunc` does on `Evict` before the preemptor is pipelined.

The group's pods are then *nominated* to their nodes (not bound: the victims must terminate
first); later groups see the victims gone and the nominated pods' room taken.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Literal

import numpy as np

from solver.config import Plugin, SchedulerConf
from solver.decision import Preemption, Victim
from solver.features._base import CompileContext, Feature
from solver.features._steps import AfterSteps
from solver.features.drf.preempt import DrfRule, drf_rule
from solver.features.interpod import InterPodBlock
from solver.features.kaishare.minruntime import preempt_held_rows
from solver.features.nodegroup.greedy import GroupLimitTracker, nodegroup_tracker
from solver.features.pdb import BudgetLedger, victim_budgets
from solver.features.preemption.cpsat import cpsat_plan
from solver.features.preemption.domains import domain_need, domain_plan, nested_plan
from solver.features.preemption.greedy import greedy_plan, ineligible, reclaim_plan
from solver.features.preemption.plans import (
    PreemptionPlan,
    PreemptionResult,
    plan_lost,
    required_pods,
)
from solver.features.preemption.pool import CandidatePool
from solver.features.preemption.reclaim import Reclaimer, ReclaimPlanner, reclaim_planner
from solver.features.preemption.victims import (
    JOB_FACT,
    PROTECTED_FACT,
    PreemptionInput,
    compile_preemption,
    evictable,
    preemption_enabled,
)
from solver.features.queues import QuotaBlock, QuotaLedger, QuotaMode, build_queue_tree
from solver.features.topology import GatherBlock
from solver.features.topology.rules import domain_rules, overlapping
from solver.problem import FloatArray, IntArray, Ledger, NoLimits, Problem
from solver.snapshot import NONE, Snapshot, Workload, charged_queue

__all__ = [
    "FACTS",
    "FEATURE",
    "PreemptionInput",
    "PreemptionPlan",
    "ReclaimPlanner",
    "Reclaimer",
    "compile_preemption",
    "preempt",
    "preemption_enabled",
    "queue_paths",
    "reclaim_planner",
    "run_preemption",
]

FACTS = (PROTECTED_FACT, JOB_FACT)


def preempt(
    problem: Problem,
    pre: PreemptionInput,
    pod_node: list[IntArray],
    *,
    exact: bool,
    workers: int,
    seed: int,
    deadline: float,
    reclaim: Reclaimer | None = None,
    queue_path: Callable[[int], Sequence[str]] | None = None,
    drf: tuple[DrfRule, Callable[[int], FloatArray]] | None = None,
) -> PreemptionResult:
    """Plans for the unplaced gang groups (module docstring); `exact` adds CP-SAT plans.
    `queue_path(row)`: the queue a running pod is charged to and its ancestors (leaf first),
    for releasing a victim's use. `drf`: Volcano drf's preemption rule and each unit's
    running use (`features.drf.preempt`): a unit takes only from jobs it stays poorer than."""
    started = time.perf_counter()
    result = PreemptionResult()
    free = problem.free.copy()
    for t, nodes in enumerate(pod_node):
        placed = nodes[nodes >= 0]
        np.subtract.at(free, placed, problem.type_demand[t])
    removed = np.zeros(len(pre.rows), dtype=bool)
    budgets = BudgetLedger(
        pre.budgets, pre.victim_priority, lambda vs: pre.snapshot.running.keys(pre.rows[vs])
    )
    held = budgets.held(removed)  # members of PodDisruptionBudgets beyond what is left
    pools: dict[int, CandidatePool] = {}  # priority -> its potential victims, kept by deltas
    quota_block = problem.block(QuotaBlock)
    ledger: Ledger = QuotaLedger(problem, quota_block) if quota_block is not None else NoLimits()
    ledger.charge_plan(dict(enumerate(pod_node)))
    limits = nodegroup_tracker(problem)
    if limits is not None:
        limits.charge_plan(dict(enumerate(pod_node)))
    topology = problem.block(GatherBlock)
    placed_gangs = {
        int(problem.type_gang[t]) for t, nodes in enumerate(pod_node) if (nodes >= 0).any()
    }
    pending_gangs: dict[int, list[int]] = {}
    for g in np.flatnonzero(problem.gang_pending > 0).tolist():
        pending_gangs.setdefault(int(problem.gang_unit[g]), []).append(g)
    for u in problem.unit_order.tolist():
        gangs = pending_gangs.get(u, [])
        if not gangs or any(g in placed_gangs for g in gangs):
            continue
        if any(problem.gang_blocked[g] is not None for g in gangs):
            continue  # not enqueued, too few members, ...: preemption cannot help
        why = ineligible(problem, pre, u, gangs)
        if why:
            for g in gangs:
                result.reasons[g] = f"preemption: {why}"
            continue
        gathered = topology is not None and topology.is_gather(u)
        rules = domain_rules(problem, u)
        if isinstance(rules, str):
            for g in gangs:
                result.reasons[g] = f"preemption: not planned for {rules}"
            continue
        terms = problem.block(InterPodBlock)
        if terms is not None and terms.unit_involved(
            [t for g in gangs for t in problem.gang_types(g)]
        ):
            for g in gangs:
                result.reasons[g] = (
                    "preemption: not planned for pods with pod affinity, anti-affinity or "
                    "topology spread terms among the call's pods"
                )
            continue
        priority = int(problem.unit_priority[u])
        required = required_pods(problem, gangs)
        for rule in rules:
            required.update(domain_need(problem, rule, required))
        plan: PreemptionPlan | str | None = None
        if reclaim is not None:
            plan = reclaim_plan(problem, pre, reclaim, u, required, free, removed | held, rules)
            if isinstance(plan, str):
                for g in gangs:
                    result.reasons[g] = f"reclaim: {plan}"
                plan = None
        pool = pools.get(priority)
        share = 0.0
        if drf is not None:  # the unit's own candidates: those it stays poorer than
            judge, unit_use = drf
            asked = sum((problem.type_demand[t] * n for t, n in required.items()), unit_use(u))
            share = float(judge.share(np.asarray(asked, dtype=np.float64)))
            richer = judge.allowed(share, pre.victim_job, pre.victim_demand)
            candidates = np.flatnonzero(
                ~removed & ~held & (pre.victim_priority < priority) & richer
            )
            pool = CandidatePool.build(pre, problem.num_nodes, candidates)
        elif pool is None:
            candidates = np.flatnonzero(~removed & ~held & (pre.victim_priority < priority))
            pool = pools[priority] = CandidatePool.build(pre, problem.num_nodes, candidates)
        if plan is None and rules and not gathered:
            planner = nested_plan if overlapping(rules) else domain_plan
            plan = planner(problem, pre, u, rules, required, free, pool)
        elif plan is None:
            plan = greedy_plan(problem, pre, u, gangs, required, free, pool)
        if isinstance(plan, str):
            by_budget = int((held & ~removed & (pre.victim_priority < priority)).sum())
            if by_budget:
                plan += f" ({by_budget} lower-priority pod(s) kept by PodDisruptionBudgets)"
            for g in gangs:
                earlier = result.reasons.get(g)
                result.reasons[g] = "; ".join(x for x in (earlier, f"preemption: {plan}") if x)
            continue
        if (
            exact
            and plan.engine == "greedy"
            and not (gathered and topology is not None and topology.has_multiples(u))
            and time.perf_counter() < deadline - 0.05
        ):
            budget = max(0.05, deadline - time.perf_counter() - 0.05)
            better = cpsat_plan(
                problem, pre, u, required, free, pool.candidates(), plan, workers, seed, budget,
                rules,
            )  # fmt: skip
            if better is not None:
                plan = better
        beyond = budgets.over(plan.victims)  # a victim gang's other members may be held
        if drf is not None and plan.engine != "reclaim" and not beyond:
            jobs = {int(pre.victim_job[v]) for v in plan.victims}
            beyond = next(
                (
                    why
                    for j in sorted(jobs)
                    if (
                        why := drf[0].refuses(
                            share,
                            [v for v in plan.victims if pre.victim_job[v] == j],
                            pre.victim_job,
                            pre.victim_demand,
                            pre.job_name(j),
                        )
                    )
                ),
                None,
            )
        if beyond:
            for g in gangs:
                result.reasons[g] = f"preemption: not helpful, {beyond}"
            continue
        nominated = {t: np.array(n, dtype=np.int64) for t, n in plan.nominated.items()}
        saved = (ledger.checkpoint(), limits.checkpoint() if limits is not None else None)
        _release(pre, plan.victims, ledger, limits, queue_path)
        over = ledger.admits(nominated) or (
            limits.refuses(nominated) if limits is not None else None
        )
        if over:
            ledger.restore(saved[0])
            if limits is not None:
                limits.restore(saved[1])
            for g in gangs:
                result.reasons[g] = f"preemption: not helpful, {over}"
            continue
        ledger.charge_plan(nominated)  # (`refuses` has counted the plan in the limits)
        removed[plan.victims] = True
        budgets.charge(plan.victims)
        now_held = budgets.held(removed)
        newly = np.flatnonzero(now_held & ~held).tolist()
        held = now_held
        for kept in pools.values():
            kept.remove([*plan.victims, *newly])
        for v in plan.victims:
            free[pre.victim_node[v]] += pre.victim_demand[v]
        for t, targets in nominated.items():
            np.subtract.at(free, targets, problem.type_demand[t])
        result.plans.append(plan)
    result.seconds = time.perf_counter() - started
    return result


def _release(
    pre: PreemptionInput,
    victims: Sequence[int],
    ledger: Ledger,
    limits: GroupLimitTracker | None,
    queue_path: Callable[[int], Sequence[str]] | None,
) -> None:
    """The victims' use no longer counts: at their queue and every ancestor, and against
    their queue's limit for their node's group."""
    if queue_path is None:
        return
    for v in victims:
        path = queue_path(int(pre.rows[v]))
        if not path:
            continue
        if isinstance(ledger, QuotaLedger):
            ledger.release(path, pre.victim_demand[v])
        if limits is not None:
            limits.release(path[0], int(pre.victim_node[v]), pre.victim_demand[v])


def queue_paths(
    snapshot: Snapshot, conf: SchedulerConf, planner: Reclaimer | None
) -> Callable[[int], Sequence[str]]:
    """`queue_path(row)` for `preempt`: the queue a running pod is charged to (its gang's
    spec.queue, else its own annotation) and, with the capacity plugin, its ancestors."""
    tree = planner.tree if planner is not None else None
    if tree is None and conf.enabled(Plugin.CAPACITY):
        tree = build_queue_tree(snapshot, QuotaMode(conf))
    running = snapshot.running

    def path(row: int) -> Sequence[str]:
        q = int(charged_queue(running, np.array([row], dtype=np.int64), snapshot.gang_queue)[0])
        if q == NONE:
            return ()
        name = running.queue_names.value(q)
        if tree is None or tree.broken or name not in tree.queues:
            return (name,)
        return tree.path(name)

    return path


def run_preemption(
    problem: Problem,
    snapshot: Snapshot,
    workload: Workload,
    conf: SchedulerConf,
    pod_node: list[IntArray],
    *,
    exact: bool,
    workers: int,
    seed: int,
    deadline: float,
) -> tuple[Preemption, float]:
    """The Decision's preemption part: victims with their DisruptionTarget message and cause,
    each member's nominated node, and why preemption did not help the rest."""
    critical = conf.enabled(Plugin.CONFORMANCE)
    held = preempt_held_rows(snapshot, conf, evictable(snapshot, critical))
    pre = compile_preemption(snapshot, workload, problem, critical=critical, held=held)
    pre = replace(pre, budgets=victim_budgets(snapshot, conf, pre.rows))
    planner = reclaim_planner(snapshot, conf, workload)
    outcome = preempt(
        problem, pre, pod_node, exact=exact, workers=workers, seed=seed, deadline=deadline,
        reclaim=planner, queue_path=queue_paths(snapshot, conf, planner),
        drf=drf_rule(problem, pre, snapshot, conf),
    )  # fmt: skip
    victims: list[Victim] = []
    nominated: dict[str, str] = {}
    cost = evicted = lost = 0
    for plan in outcome.plans:
        unit_id = problem.unit_ids[plan.unit]
        gangs = unit_id.split(",")
        trigger = min((pre.trigger[g][0] for g in gangs if g in pre.trigger), default="")
        scheduler = next((pre.scheduler_name[g] for g in gangs if g in pre.scheduler_name), "")
        cause: Literal["preemption", "reclaim"]
        if plan.engine == "reclaim":
            cause = "reclaim"
            message = (
                f"{scheduler}: reclaiming for queue {plan.queue}, "
                f"preemptor: {unit_id}, triggerpod: {trigger}"
            )
        else:
            cause = "preemption"
            message = (
                f"{scheduler}: preempting to accommodate higher priority pods, "
                f"preemptor: {unit_id}, triggerpod: {trigger}"
            )
        for v in plan.victims:
            victims.append(
                Victim(
                    pod=pre.key(v),
                    node=problem.node_names[pre.victim_node[v]],
                    message=message,
                    cause=cause,
                    queue=plan.queue,
                )
            )
        for t, nodes in plan.nominated.items():
            for pod, n in zip(problem.type_pods[t], nodes, strict=False):
                nominated[pod] = problem.node_names[n]
        cost += plan.cost
        lost += plan_lost(pre, plan.victims)
        evicted += len(plan.victims)
    preemption = Preemption(tuple(victims), nominated, outcome.reasons, cost, evicted, lost)
    return preemption, outcome.seconds


def _no_compile(ctx: CompileContext) -> None:
    """Nothing per type: preemption runs on the engine's answer (`after`)."""


FEATURE = Feature(
    name="preemption",
    plugins=(),  # the `preempt` / `reclaim` actions (or the caller's flag) turn it on
    compile=_no_compile,
    facts=FACTS,
    after=AfterSteps(wanted=preemption_enabled, run=run_preemption),
)
