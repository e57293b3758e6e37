"""The network topology's unit placer for the greedy engine.

* A gang group with a Koordinator `network-topology-spec`: every pending pod of the group
  in one offer-slot plan (`gather.py`), or none; the plan must fit the queue quotas whole.
* A Godel PodGroup with job-level affinity: NodeGroup by NodeGroup (`nodegroups.py`); the
  first group where every gang reaches its share wins, pods spilling circle by circle.
"""

from __future__ import annotations

import numpy as np

from solver.features.topology.block import TopologyBlock
from solver.features.topology.godel.affinity import GodelPlan
from solver.features.topology.godel.block import GodelBlock
from solver.features.topology.godel.nodegroups import godel_groups, godel_metrics
from solver.features.topology.koordinator.block import GatherBlock
from solver.features.topology.koordinator.gather import gather_unit
from solver.features.topology.kueue.block import kueue_pod_sets
from solver.features.topology.kueue.place import place_kueue
from solver.features.topology.workload_api.nested import NestedFill
from solver.problem import (
    GreedyState,
    IntArray,
    Problem,
    fill,
    fit_report,
    format_fit_error,
    minimum_shortfall,
)

__all__ = ["place_topology_unit"]


def place_topology_unit(problem: Problem, u: int, gangs: list[int], state: GreedyState) -> bool:
    """Place unit u if the topology governs it (True), else leave it to the default (False)."""
    if problem.block(TopologyBlock) is None or not gangs:
        return False
    gather = problem.block(GatherBlock)
    if gather is not None and gather.is_gather(u):
        _place_gather(problem, gather, u, gangs, state)
        return True
    kueue = kueue_pod_sets(problem, u)
    if kueue:
        place_kueue(problem, kueue, gangs, state)
        return True
    block = problem.block(GodelBlock)
    godel = block.godel(u) if block is not None else None
    if (
        block is not None
        and godel is not None
        and (
            godel.required is not None or godel.preferred or godel.sub_domains or godel.sub_minimums
        )
    ):
        _place_godel(problem, block, godel, gangs, state)
        return True
    return False


def _place_gather(
    problem: Problem, block: GatherBlock, u: int, gangs: list[int], state: GreedyState
) -> None:
    """Koordinator's gather: every pending pod of the group in one plan, or none."""
    outcome = gather_unit(problem, block, u, gangs, state.free)
    message = (
        outcome.message
        or state.ledger.admits(outcome.pod_node)
        or _terms_refuse(problem, outcome.pod_node, state)
    )
    if message:
        for g in gangs:
            state.gang_reason[g] = message
        return
    state.ledger.charge_plan(outcome.pod_node)
    for t, nodes in outcome.pod_node.items():
        state.pod_node[t][:] = nodes
        placed = nodes[nodes >= 0]
        np.subtract.at(state.free, placed, problem.type_demand[t])


def _place_godel(
    problem: Problem, block: GodelBlock, plan: GodelPlan, gangs: list[int], state: GreedyState
) -> None:
    """Godel: the first NodeGroup where every gang reaches its share wins; pods spill by circle."""
    groups = godel_groups(problem, block, plan, state.free)
    if not groups:
        for g in gangs:
            state.gang_reason[g] = (
                f"gang {problem.gang_ids[g]}: no valid node groups are available "
                f"({plan.source}: every domain is empty or smaller than the job)"
            )
        return
    best: tuple[int, str, _Failure] = (-1, "", "")
    base = state.tracker.checkpoint()
    for group in groups:
        state.tracker.restore(base)
        trial = state.free.copy()
        chosen: dict[int, list[int]] = {}
        placed = dict.fromkeys(gangs, 0)
        first_failure: _Failure = ""
        nested: set[int] = set()
        if plan.sub_domains or plan.sub_minimums:
            metrics = godel_metrics(problem, block, trial)
            search = NestedFill(problem, plan, group.circles, trial, state.tracker, metrics)
            search.run()
            search.fill_minimums()
            chosen, nested, first_failure = search.chosen, search.nested_types, search.failure
        for g in gangs:
            for t in problem.gang_types(g):
                picked = chosen.setdefault(t, [])
                remaining = 0 if t in nested else len(problem.type_pods[t]) - len(picked)
                for circle in group.circles:
                    if remaining <= 0:
                        break
                    nodes = fill(problem, t, remaining, trial, circle, state.tracker)
                    picked.extend(nodes.tolist())
                    remaining -= int(nodes.size)
                placed[g] += len(picked)
                if remaining > 0 and not first_failure:
                    # counted only for the group whose words are used (O(nodes) each); the
                    # call's own pod rules read the tracker now, before the next group
                    first_failure = (
                        _failure_words(problem, t, trial, state)
                        if state.tracker.involved(t)
                        else (t, trial)
                    )
        short = minimum_shortfall(plan.sub_minimums, chosen)
        first_failure = short or first_failure
        ok = not short and all(
            placed[g] >= problem.gang_need[g] and (placed[g] > 0 or problem.gang_pending[g] == 0)
            for g in gangs
        )
        trial_plan = {t: np.array(picked, dtype=np.int64) for t, picked in chosen.items()}
        over = state.ledger.admits(trial_plan) if ok else None
        if over:
            state.tracker.restore(base)
            for g in gangs:
                state.gang_reason[g] = f"gang {problem.gang_ids[g]}: {over}"
            return
        if ok:
            state.free[:] = trial
            state.ledger.charge_plan(trial_plan)
            for t, picked in chosen.items():
                state.pod_node[t][: len(picked)] = picked
            if first_failure:
                words = _words(problem, first_failure, state)
                for g in gangs:
                    state.gang_reason.setdefault(g, words)
            return
        total = sum(placed.values())
        if total > best[0]:
            best = (total, group.name, first_failure)
    state.tracker.restore(base)
    for g in gangs:
        need = max(int(problem.gang_need[g]), 1)
        state.gang_reason[g] = (
            f"gang {problem.gang_ids[g]}: no node group holds {need} required pod(s) "
            f"({plan.source}, {len(groups)} group(s) tried; best {best[1]}: "
            f"{best[0]} fit); {_words(problem, best[2], state)}"
        ).rstrip("; ")


_Failure = str | tuple[int, IntArray]
"""The first shortfall of a NodeGroup trial: its words, or (type, the trial's free room) to
count them from when they are used."""


def _failure_words(problem: Problem, t: int, free: IntArray, state: GreedyState) -> str:
    _, counts = fit_report(problem, t, free, state.tracker)
    return format_fit_error(problem.num_nodes, counts)


def _words(problem: Problem, failure: _Failure, state: GreedyState) -> str:
    if isinstance(failure, str):
        return failure
    t, free = failure
    return _failure_words(problem, t, free, state)


def _terms_refuse(
    problem: Problem, pod_node: dict[int, IntArray], state: GreedyState
) -> str | None:
    """The gather plan (made without the call's inter-pod rules) checked against them pod by
    pod and counted in them when it holds; why not when it breaks one."""
    tracker = state.tracker
    if not any(tracker.involved(t) for t in pod_node):
        return None
    saved = tracker.checkpoint()
    for t, nodes in pod_node.items():
        for node in nodes[nodes >= 0].tolist():
            code = int(tracker.verdict(t)[node]) if tracker.involved(t) else 0
            if code:
                tracker.restore(saved)
                return (
                    f"the network-topology plan puts pod type {t} on {problem.node_names[node]}, "
                    f"where {problem.reason_texts[code]}"
                )
            tracker.place(t, node)
    return None
