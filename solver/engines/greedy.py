"""The greedy engine: gang groups one at a time, pods packed by Volcano's binpack score.

Gang groups (units) are placed in this order (Problem.unit_order):

1. highest pending-pod priority first;
2. earliest PodGroup creationTimestamp first (missing timestamps last);
3. GangGroup id, as the stable tie-break.

Inside a unit, each gang first gets its `need` pods (its minMember share for this cycle),
gang by gang in id order and pod by pod in name order; then the remaining members are
placed where they still fit. If some gang ends below its need, everything placed for the
unit is rolled back, that gang and every gang requiring it are dropped, and the rest of
the unit is tried again (so a group never ends half-placed).

Topology-aware units are placed differently (`solver/engines/gather.py`): a gang group
with a Koordinator `network-topology-spec` by the offer-slot gather (all of its pending
pods in one plan, or none), a Godel PodGroup with job-level affinity NodeGroup by NodeGroup
(the first group where it reaches its share wins; pods spill circle by circle). Units
without topology are placed exactly as below.

A pod goes to the node with the highest score (static policy scores + binpack) among the
nodes where it fits, lowest node name on ties. Because binpack only grows on the node that
just received a pod, the pods of one type are placed in one vectorised step: nodes sorted
by score, each filled up to its free slots, which is exactly the pod-by-pod result.
"""

from __future__ import annotations

import time

import numpy as np

from solver.engines._result import EngineResult, fit_report, format_fit_error
from solver.engines.gather import gather_unit, godel_groups
from solver.problem import QUOTA_UNLIMITED, GodelPlan, IntArray, Problem
from solver.quantity import format_quantity

__all__ = ["QuotaState", "fill_type", "solve_greedy"]


def _fill(
    problem: Problem, t: int, count: int, free: IntArray, nodes: IntArray | None = None
) -> IntArray:
    """Node index for up to `count` pods of type `t` (on `nodes`, default all), updating `free`."""
    if count <= 0:
        return np.empty(0, dtype=np.int64)
    demand = problem.type_demand[t]
    positive = demand > 0
    pool = free if nodes is None else free[nodes]
    with np.errstate(divide="ignore"):
        slots = np.min(np.maximum(pool[:, positive], 0) // demand[positive], axis=1)
    if nodes is None:
        slots = np.where(problem.eligible[t], slots, 0)
        candidates = np.flatnonzero(slots > 0)
    else:
        slots = np.where(problem.eligible[t, nodes], slots, 0)
        keep = slots > 0
        candidates, slots = nodes[keep], slots[keep]
        slots_all = np.zeros(problem.num_nodes, dtype=np.int64)
        slots_all[candidates] = slots
        slots = slots_all
    if candidates.size == 0:
        return np.empty(0, dtype=np.int64)
    used = problem.capacity[candidates] - free[candidates]
    score = problem.static_score[t, candidates] + problem.binpack_scores(t, used, candidates)
    order = candidates[np.lexsort((candidates, -score))]
    take = np.minimum(slots[order], np.maximum(count - (np.cumsum(slots[order]) - slots[order]), 0))
    chosen = order[take > 0]
    take = take[take > 0]
    free[chosen] -= take[:, None] * demand[None, :]
    return np.repeat(chosen, take)


class QuotaState:
    """Queue headroom during one run: the capacity (or capacity-card) allocate gate.

    A pod of type t may be placed only if, for the type's leaf queue and every ancestor,
    `allocated + request ≤ realCapability` on each quota dimension it uses (Volcano checks
    it per task before choosing a node); under capacity-card a card pod also uses the quota
    of the card type of the node it lands on. `left` is the headroom still free.
    """

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.left = problem.queue_headroom.copy()
        self.finite = self.left < QUOTA_UNLIMITED

    def _use(self, t: int, card: int | None) -> IntArray:
        use: IntArray = self.problem.type_quota_demand[t].copy()
        if card is not None and card >= 0:
            use[card] += int(self.problem.type_card_count[t])
        return use

    def cap(self, t: int, count: int, card: int | None = None) -> tuple[int, str | None]:
        """How many of `count` pods of type t the quotas admit, and why fewer when so."""
        problem = self.problem
        if not problem.type_queues or not problem.type_queues[t]:
            return count, None
        use = self._use(t, card)
        allowed, why = count, None
        for q in problem.type_queues[t]:
            for d in np.flatnonzero((use > 0) & self.finite[q]).tolist():
                fits = int(self.left[q, d] // use[d])
                if fits < allowed:
                    allowed = max(fits, 0)
                    name = problem.quota_dims[d]
                    reason = _quota_reason(problem, name)
                    why = (
                        f"queue {problem.queue_names[q]}: {reason} for {name.removeprefix('card:')} "
                        f"({format_quantity(name, int(self.left[q, d]))} left, "
                        f"{format_quantity(name, int(use[d]))} per pod)"
                    )
        return allowed, why

    def charge(self, t: int, n: int, card: int | None = None) -> None:
        if n and self.problem.type_queues and self.problem.type_queues[t]:
            rows = list(self.problem.type_queues[t])
            taken = np.where(self.finite[rows], n * self._use(t, card), 0)
            self.left[rows] -= taken

    def admits(self, pod_node: dict[int, IntArray]) -> str | None:
        """Whether a whole plan (node per pod, per type) fits every quota; the reason when not."""
        trial = QuotaState.__new__(QuotaState)
        trial.problem, trial.left, trial.finite = self.problem, self.left.copy(), self.finite
        for t, n, card in _by_card(self.problem, pod_node):
            allowed, why = trial.cap(t, n, card)
            if allowed < n:
                return why
            trial.charge(t, n, card)
        return None

    def charge_plan(self, pod_node: dict[int, IntArray]) -> None:
        for t, n, card in _by_card(self.problem, pod_node):
            self.charge(t, n, card)


def _quota_reason(problem: Problem, dim: str) -> str:
    """capacity-card's event reason names; plain words under the capacity plugin."""
    if not any(d.startswith("card:") for d in problem.quota_dims):
        return f"insufficient {dim} quota"
    return {"cpu": "InsufficientCPUQuota", "memory": "InsufficientMemoryQuota"}.get(
        dim, "InsufficientScalarQuota"
    )


def _by_card(problem: Problem, pod_node: dict[int, IntArray]) -> list[tuple[int, int, int | None]]:
    """(type, pods, card dim) counts of a plan; card None for types without card demand."""
    out: list[tuple[int, int, int | None]] = []
    for t, nodes in pod_node.items():
        placed = nodes[nodes >= 0]
        if not problem.type_card_dims or not problem.type_card_dims[t]:
            out.append((t, int(placed.size), None))
            continue
        cards, counts = np.unique(problem.type_node_card[t, placed], return_counts=True)
        out.extend(
            (t, int(c), int(k)) for k, c in zip(cards.tolist(), counts.tolist(), strict=True)
        )
    return out


def solve_greedy(problem: Problem) -> EngineResult:
    started = time.perf_counter()
    free = problem.free.copy()
    quota = QuotaState(problem)
    pod_node = [np.full(len(pods), -1, dtype=np.int64) for pods in problem.type_pods]
    gang_reason: dict[int, str] = {}
    unit_gangs: dict[int, list[int]] = {}
    for g in np.flatnonzero(problem.gang_pending > 0).tolist():
        unit_gangs.setdefault(int(problem.gang_unit[g]), []).append(g)
    for g, u in enumerate(problem.gang_unit.tolist()):  # gangs required by pending ones
        if u in unit_gangs and g not in unit_gangs[u]:
            unit_gangs[u].append(g)
    for u in problem.unit_order.tolist():
        if u not in unit_gangs:
            continue  # nothing pending in this gang group
        gangs = sorted(unit_gangs[u])
        active = []
        for g in gangs:
            if problem.gang_blocked[g] is not None:
                gang_reason[g] = problem.gang_blocked[g] or ""
            else:
                active.append(g)
        if active and problem.is_gather(u):
            _place_gather_unit(problem, u, active, free, quota, pod_node, gang_reason)
            continue
        godel = problem.unit_godel[u] if problem.unit_godel else None
        if active and godel is not None and (godel.required is not None or godel.preferred):
            _place_godel_unit(problem, godel, active, free, quota, pod_node, gang_reason)
            continue
        while active:
            failed = _place_unit(problem, active, free, quota, pod_node, gang_reason)
            if not failed:
                break
            dropped = _with_dependents(problem, set(failed), active, gang_reason)
            active = [g for g in active if g not in dropped]
    return EngineResult(
        engine="greedy",
        status="HEURISTIC",
        pod_node=pod_node,
        gang_reason=gang_reason,
        stats={"seconds": time.perf_counter() - started},
    )


def _fill_with_quota(
    problem: Problem, t: int, count: int, free: IntArray, quota: QuotaState
) -> tuple[IntArray, int, str | None]:
    """_fill under the quotas: card pods card type by card type, preferred type first.

    Returns the chosen nodes, how many the quotas admitted, and the quota's reason when
    that was fewer than `count`.
    """
    cards = problem.type_card_dims[t] if problem.type_card_dims else ()
    if not cards:
        allowed, why = quota.cap(t, count)
        nodes = _fill(problem, t, allowed, free)
        quota.charge(t, int(nodes.size))
        return nodes, allowed, why
    chosen: list[IntArray] = []
    admitted, why, remaining = 0, None, count
    for card in cards:
        if remaining <= 0:
            break
        allowed, reason = quota.cap(t, remaining, card)
        why = why or (reason if allowed < remaining else None)
        subset = np.flatnonzero(problem.type_node_card[t] == card)
        nodes = (
            _fill(problem, t, allowed, free, subset) if subset.size else np.empty(0, dtype=np.int64)
        )
        quota.charge(t, int(nodes.size), card)
        admitted += allowed
        remaining -= int(nodes.size)
        chosen.append(nodes)
    nodes = np.concatenate(chosen) if chosen else np.empty(0, dtype=np.int64)
    return nodes, min(admitted, count), why


def _place_unit(
    problem: Problem,
    gangs: list[int],
    free: IntArray,
    quota: QuotaState,
    pod_node: list[IntArray],
    gang_reason: dict[int, str],
) -> list[int]:
    """Try to place the unit; on success commit and return [], else roll back and return failures."""
    snapshot, quota_snapshot = free.copy(), quota.left.copy()
    tentative: dict[int, list[int]] = {}  # type -> node per pod, in order
    placed = dict.fromkeys(gangs, 0)
    first_failure: dict[int, str] = {}

    def place(t: int, count: int) -> int:
        nodes, allowed, why = _fill_with_quota(problem, t, count, free, quota)
        tentative.setdefault(t, []).extend(nodes.tolist())
        if nodes.size < count:
            g = int(problem.type_gang[t])
            if g not in first_failure:
                if nodes.size == allowed and why:
                    first_failure[g] = why
                else:
                    _, counts = fit_report(problem, t, free)
                    first_failure[g] = format_fit_error(problem.num_nodes, counts)
        return int(nodes.size)

    # Phase 1: each gang's required share; phase 2: optional extra members.
    for g in gangs:
        remaining = int(problem.gang_need[g])
        for t in problem.gang_types(g):
            if remaining <= 0:
                break
            got = place(t, min(remaining, len(problem.type_pods[t])))
            placed[g] += got
            remaining -= got
    failed = [g for g in gangs if placed[g] < problem.gang_need[g]]
    if failed:
        free[:] = snapshot
        quota.left[:] = quota_snapshot
        for g in failed:
            need = int(problem.gang_need[g])
            parts = [f"gang {problem.gang_ids[g]}: {placed[g]} of {need} required pod(s) fit"]
            parts += _shortfall(problem, g, need, snapshot)
            parts.append(first_failure.get(g, ""))
            gang_reason[g] = "; ".join(p for p in parts if p)
        return failed
    for g in gangs:
        for t in problem.gang_types(g):
            done = len(tentative.get(t, []))
            rest = len(problem.type_pods[t]) - done
            if rest > 0:
                place(t, rest)
    for t, chosen in tentative.items():
        pod_node[t][: len(chosen)] = chosen
    for g, message in first_failure.items():
        gang_reason.setdefault(g, message)  # why some optional members stayed pending
    return []


def _place_gather_unit(
    problem: Problem,
    u: int,
    gangs: list[int],
    free: IntArray,
    quota: QuotaState,
    pod_node: list[IntArray],
    gang_reason: dict[int, str],
) -> None:
    """Koordinator's gather: every pending pod of the group in one plan, or none (gather.py)."""
    outcome = gather_unit(problem, u, gangs, free)
    message = outcome.message or quota.admits(outcome.pod_node)
    if message:
        for g in gangs:
            gang_reason[g] = message
        return
    quota.charge_plan(outcome.pod_node)
    for t, nodes in outcome.pod_node.items():
        pod_node[t][:] = nodes
        placed = nodes[nodes >= 0]
        np.subtract.at(free, placed, problem.type_demand[t])


def _place_godel_unit(
    problem: Problem,
    plan: GodelPlan,
    gangs: list[int],
    free: IntArray,
    quota: QuotaState,
    pod_node: list[IntArray],
    gang_reason: dict[int, str],
) -> None:
    """Godel: the first NodeGroup where every gang reaches its share wins; pods spill by circle."""
    groups = godel_groups(problem, plan, free)
    if not groups:
        for g in gangs:
            gang_reason[g] = (
                f"gang {problem.gang_ids[g]}: no valid node groups are available "
                "(Godel job-level affinity: every domain is empty or smaller than the job)"
            )
        return
    best: tuple[int, str, str] = (-1, "", "")
    for group in groups:
        trial = free.copy()
        chosen: dict[int, list[int]] = {}
        placed = dict.fromkeys(gangs, 0)
        first_failure = ""
        for g in gangs:
            for t in problem.gang_types(g):
                remaining = len(problem.type_pods[t])
                for circle in group.circles:
                    if remaining <= 0:
                        break
                    nodes = _fill(problem, t, remaining, trial, circle)
                    chosen.setdefault(t, []).extend(nodes.tolist())
                    remaining -= int(nodes.size)
                placed[g] += len(chosen.get(t, []))
                if remaining > 0 and not first_failure:
                    _, counts = fit_report(problem, t, trial)
                    first_failure = format_fit_error(problem.num_nodes, counts)
        ok = all(
            placed[g] >= problem.gang_need[g] and (placed[g] > 0 or problem.gang_pending[g] == 0)
            for g in gangs
        )
        trial_plan = {t: np.array(picked, dtype=np.int64) for t, picked in chosen.items()}
        over = quota.admits(trial_plan) if ok else None
        if over:
            for g in gangs:
                gang_reason[g] = f"gang {problem.gang_ids[g]}: {over}"
            return
        if ok:
            free[:] = trial
            quota.charge_plan(trial_plan)
            for t, picked in chosen.items():
                pod_node[t][: len(picked)] = picked
            if first_failure:
                for g in gangs:
                    gang_reason.setdefault(g, first_failure)
            return
        total = sum(placed.values())
        if total > best[0]:
            best = (total, group.name, first_failure)
    for g in gangs:
        need = max(int(problem.gang_need[g]), 1)
        gang_reason[g] = (
            f"gang {problem.gang_ids[g]}: no node group holds {need} required pod(s) "
            f"(Godel job-level affinity, {len(groups)} group(s) tried; best {best[1]}: "
            f"{best[0]} fit); {best[2]}"
        ).rstrip("; ")


def _shortfall(problem: Problem, g: int, need: int, free: IntArray) -> list[str]:
    """`needs 16 nvidia.com/gpu, eligible nodes have 11 free` for each resource that is short."""
    types = problem.gang_types(g)
    if not types:
        return []
    # The cheapest `need` pods of the gang, against all free room on nodes any of them may use.
    per_pod = np.array([problem.type_demand[t] for t in types for _ in problem.type_pods[t]])
    wanted = np.sort(per_pod, axis=0)[:need].sum(axis=0)
    eligible = np.any([problem.eligible[t] for t in types], axis=0)
    offered = np.maximum(free[eligible], 0).sum(axis=0)
    return [
        f"needs {format_quantity(name, int(wanted[r]))} {name}, eligible nodes have "
        f"{format_quantity(name, int(offered[r]))} free"
        for r, name in enumerate(problem.resources)
        if wanted[r] > offered[r]
    ]


def _with_dependents(
    problem: Problem, failed: set[int], active: list[int], gang_reason: dict[int, str]
) -> set[int]:
    """The failed gangs plus, transitively, every active gang that requires one of them."""
    dropped = set(failed)
    changed = True
    while changed:
        changed = False
        for g, h in problem.gang_requires:
            if g in active and g not in dropped and h in dropped:
                dropped.add(g)
                gang_reason[g] = (
                    f"gang group member {problem.gang_ids[h]} cannot be placed: {gang_reason[h]}"
                )
                changed = True
    return dropped


fill_type = _fill
"""Public name of the vectorised fill: up to `count` pods of type t, best nodes first."""
