"""Preemption inside one domain: victims chosen so the freed room lands where the gang may run.

For a unit under hard domain rules (`solver.features.topology.domain_rules`: Godel and the
Workload API's required topology, Volcano HyperNode tiers, Kueue required pod sets), the
dry run of `greedy.py` is made per candidate domain, and the cheapest domain wins:

1. **Candidates**: the domains whose dry-run room (free + every potential victim gone)
   holds the rule's pods by the sum of their pod slots, ordered by how many of those pods
   their free room alone lacks (fewest first), then domain index; at most `_MAX_DOMAINS`
   are tried (a gang that fits without evicting anything stops the search).
2. **Per domain**: the rule's pods on the domain's nodes in (job-aware cost ↑, node index)
   order, whole nodes first; its dry-run cost is the nodes' job-aware cost summed (what
   evicting every candidate there would cost).
3. **Reprieve**: the `_REPRIEVED` domains of lowest (dry-run cost, pods short, index) get
   Koordinator's reprieve on the nodes used; of those, (plan cost, victims, domain index) ↑
   wins — the same lexicographic cost as the unconstrained plan.

Rules are planned one after the other (a unit with two Kueue pod sets: the first set's
domain first, its pods then hold their room), then the unit's pods under no rule anywhere,
then one reprieve over every node used. Rules that hold the same pods (KAI sub-groups
inside their PodGroup's domain) are planned by `nested_plan`: each domain of the outer rule
in turn, with the inner rules cut to it, the cheapest plan winning. Never "freed 8 GPUs on 4 nodes": a plan either
places every required pod inside its domains or evicts nothing (Kueue #5243).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from solver.features.preemption.greedy import finish_plan, reprieve, rule_nodes
from solver.features.preemption.plans import PreemptionPlan, plan_cost
from solver.features.preemption.pool import CandidatePool
from solver.features.preemption.victims import PreemptionInput
from solver.features.topology.rules import DomainRule, overlapping
from solver.problem import IntArray, Problem

__all__ = ["domain_need", "domain_plan", "nested_plan"]

_MAX_DOMAINS = 512  # candidate domains tried per rule
_REPRIEVED = 4  # of those, the ones with the cheapest dry run get the reprieve


def domain_need(problem: Problem, rule: DomainRule, required: dict[int, int]) -> dict[int, int]:
    """Pods per type the rule places: the gang's required pods, or every pod when whole."""
    need = {t: len(problem.type_pods[t]) if rule.whole else required.get(t, 0) for t in rule.types}
    return {t: c for t, c in need.items() if c > 0}


def domain_plan(
    problem: Problem,
    pre: PreemptionInput,
    u: int,
    rules: list[DomainRule],
    required: dict[int, int],
    free: IntArray,
    pool: CandidatePool,
) -> PreemptionPlan | str:
    """The cheapest plan that keeps every rule in one domain; a reason when none exists."""
    if pool.size == 0:
        return "preemption not helpful: no potential victims"
    room = free + pool.room
    nominated: dict[int, list[int]] = {}
    victims: list[int] | None = None
    for rule in rules:
        need = domain_need(problem, rule, required)
        if not need:
            continue
        best = _best_domain(problem, pre, rule, need, free, room, pool)
        if isinstance(best, str):
            return best
        placed, victims = best
        for t, nodes in placed.items():
            np.subtract.at(room, nodes, problem.type_demand[t])
            nominated[t] = nominated.get(t, []) + nodes
    if victims is not None and len(rules) == 1 and set(required) <= set(nominated):
        # one rule placed every required pod: its domain's reprieve is the plan's
        return PreemptionPlan(u, victims, nominated, plan_cost(pre, victims), "greedy")
    return finish_plan(problem, pre, pool, u, required, room, nominated)


def nested_plan(
    problem: Problem,
    pre: PreemptionInput,
    u: int,
    rules: list[DomainRule],
    required: dict[int, int],
    free: IntArray,
    pool: CandidatePool,
) -> PreemptionPlan | str:
    """Rules that nest (a KAI PodGroup's domain over its sub-groups' own): one outer rule
    holding every pod (the first such), the others side by side inside it. Each of the outer rule's domains that can
    hold its pods (fewest pods short first, at most `_MAX_OUTER`) is tried with the inner
    rules cut to it — `domain_plan` there, the outer rule's pods under no inner rule one
    more rule inside the domain — and the cheapest plan wins."""
    root = next((r for r in rules if all(set(o.types) <= set(r.types) for o in rules)), None)
    inner = [r for r in rules if r is not root]
    if root is None or overlapping(inner):
        return "not planned for nested domain rules side by side or more than one level deep"
    if pool.size == 0:
        return "preemption not helpful: no potential victims"
    need = domain_need(problem, root, required)
    fits = _fits(problem, root, need, free, free + pool.room)
    if isinstance(fits, str):
        return fits
    rest = tuple(sorted(set(root.types) - {t for r in inner for t in r.types}))
    best: tuple[tuple[int, int, int], PreemptionPlan] | None = None
    reason = ""
    for d in fits[0][:_MAX_OUTER]:
        inside = root.domain == d
        cut = [replace(r, domain=np.where(inside, r.domain, -1)) for r in inner]
        if rest:
            whole = np.where(inside, 0, -1)
            cut.append(DomainRule(rest, whole, (root.names[d],), root.rule, whole=root.whole))
        plan = domain_plan(problem, pre, u, cut, required, free, pool)
        if isinstance(plan, str):
            reason = reason or plan
            continue
        key = (plan.cost, len(plan.victims), d)
        if best is None or key < best[0]:
            best = (key, plan)
    return best[1] if best is not None else reason


_MAX_OUTER = 32  # outer domains tried by `nested_plan`


def _fits(
    problem: Problem, rule: DomainRule, need: dict[int, int], free: IntArray, room: IntArray
) -> tuple[list[int], IntArray] | str:
    """The rule's domains whose room holds its pods by their slots, fewest pods short now
    first (then index), and how many each domain's free room alone lacks; why none does."""
    domains = len(rule.names)
    holds = np.ones(domains, dtype=bool)
    lacking = np.zeros(domains, dtype=np.int64)
    held = np.zeros(domains, dtype=np.int64)  # the rule's pods each domain holds, at most
    for t, count in need.items():
        demand = problem.type_demand[t]
        positive = demand > 0
        usable = problem.eligible[t] & (rule.domain >= 0)
        at = np.maximum(rule.domain, 0)
        slots = np.where(usable, _slots(room, demand, positive), 0)
        now = np.where(usable, _slots(free, demand, positive), 0)
        per_domain = np.bincount(at, weights=slots, minlength=domains)[:domains]
        per_domain_now = np.bincount(at, weights=now, minlength=domains)[:domains]
        holds &= per_domain >= count
        lacking += np.maximum(count - per_domain_now, 0).astype(np.int64)
        held += np.minimum(per_domain, count).astype(np.int64)
    candidates = np.flatnonzero(holds)
    if candidates.size == 0:
        top = int(np.argmax(held)) if domains else -1
        most = f"; the best, {rule.names[top]}, holds {int(held[top])}" if top >= 0 else ""
        return (
            f"preemption not helpful: with every eligible lower-priority pod evicted, no "
            f"domain holds its {sum(need.values())} pod(s) under its rule ({rule.rule}){most}"
        )
    ordered: list[int] = candidates[np.lexsort((candidates, lacking[candidates]))].tolist()
    return ordered, lacking


def _best_domain(
    problem: Problem,
    pre: PreemptionInput,
    rule: DomainRule,
    need: dict[int, int],
    free: IntArray,
    room: IntArray,
    pool: CandidatePool,
) -> tuple[dict[int, list[int]], list[int]] | str:
    """The rule's pods in its cheapest domain (type -> nodes) and the victims there, or why
    no domain holds them."""
    domains = len(rule.names)
    fits = _fits(problem, rule, need, free, room)
    if isinstance(fits, str):
        return fits
    candidates = np.array(fits[0][:_MAX_DOMAINS], dtype=np.int64)
    lacking = fits[1]
    order = np.argsort(rule.domain, kind="stable")
    bounds = np.searchsorted(rule.domain[order], np.arange(domains + 1))
    trials: list[tuple[tuple[int, int], int, dict[int, list[int]]]] = []
    for d in candidates.tolist():
        nodes = np.sort(order[bounds[d] : bounds[d + 1]])
        saved = room[nodes].copy()
        placed: dict[int, list[int]] = {}
        for t, count in need.items():
            chosen = rule_nodes(problem, rule, t, count, room, pool.node_cost, nodes)
            if chosen.size < count:
                placed = {}
                break
            np.subtract.at(room, chosen, problem.type_demand[t])
            placed[t] = chosen.tolist()
        room[nodes] = saved
        if placed:
            used = np.unique(np.concatenate([np.asarray(v) for v in placed.values()]))
            trials.append(((int(pool.node_cost[used].sum()), int(lacking[d])), d, placed))
            if trials[-1][0] == (0, 0):
                break  # nothing to evict: no domain does better
    if not trials:
        return (
            f"preemption not helpful: with every eligible lower-priority pod evicted, no "
            f"domain holds its pods node by node under its rule ({rule.rule})"
        )
    trials.sort(key=lambda trial: (trial[0], trial[1]))
    best: tuple[tuple[int, int, int], dict[int, list[int]], list[int]] | None = None
    for _, d, placed in trials[:_REPRIEVED]:
        local = room.copy()
        for t, nodes_of in placed.items():
            np.subtract.at(local, nodes_of, problem.type_demand[t])
        victims = reprieve(problem, pre, pool, placed, local)
        key = (plan_cost(pre, victims), len(victims), d)
        if best is None or key < best[0]:
            best = (key, placed, victims)
    assert best is not None
    return best[1], best[2]


def _slots(room: IntArray, demand: IntArray, positive: np.ndarray) -> IntArray:
    if not positive.any():
        return np.full(len(room), 1 << 30, dtype=np.int64)
    slots: IntArray = np.min(np.maximum(room[:, positive], 0) // demand[positive], axis=1)
    return slots
