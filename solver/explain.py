"""Why a pod can or cannot go to each node, and how every node scores for it.

The filters and the room are the cluster as the input shows it, before this cycle places
any other pending pod; the rules between the call's own pods (pod affinity, anti-affinity
and spread among them, node-group limits) are evaluated with every other pod of this
cycle placed where `schedule` put it, and say so. `placement` says where `schedule` put
the pod.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solver.compile import compile_parts
from solver.config import Plugin, SchedulerConf
from solver.consolidate import CONSOLIDATION
from solver.engines.greedy import TRACKERS
from solver.errors import InputError
from solver.model import ClusterModel
from solver.problem import IntArray, Problem, Trackers
from solver.schedule import schedule, snapshot_of
from solver.snapshot import Workload

__all__ = ["WITH_THE_OTHERS", "explain"]

WITH_THE_OTHERS = "(with this cycle's other pods placed)"
"""Marks a reason from the rules between the call's own pods, read against the answer."""


def _among_the_others(
    problem: Problem, placed: dict[str, str], pod_key: str, t: int
) -> IntArray | None:
    """[N] the reason code of the rules between the call's pods for one more pod of type t,
    with every other pod of the answer placed (None: no such rule concerns it)."""
    tracker = Trackers.of(*(make(problem) for make in TRACKERS))
    if tracker is None or not tracker.involved(t):
        return None
    node_index = {name: n for n, name in enumerate(problem.node_names)}
    for other, pods in enumerate(problem.type_pods):
        if not tracker.involved(other):
            continue
        for key in pods:
            if key != pod_key and key in placed:
                tracker.place(other, node_index[placed[key]])
    return tracker.verdict(t)


def explain(model: ClusterModel, conf: SchedulerConf | None, pod_key: str) -> dict[str, Any]:
    conf = conf or SchedulerConf.default()
    pod = model.pod_by_key.get(pod_key)
    if pod is None:
        raise InputError(f"pod {pod_key!r} is not in the input (give it as namespace/name)")
    if not pod.pending:
        raise InputError(f"pod {pod_key!r} is not pending: it is bound to {pod.node_name}")
    snapshot = snapshot_of(model)
    workload = Workload.everything(snapshot)
    compiled = compile_parts(snapshot, workload, conf)
    problem = compiled.problem
    t = next(i for i, pods in enumerate(problem.type_pods) if pod_key in pods)
    demand = problem.type_demand[t]
    used = problem.capacity - problem.free
    dynamic = problem.dynamic_scores(t, used)
    plugin_scores: dict[str, np.ndarray] = {}
    for plugin, types, row in compiled.score_log:
        if t in types:
            plugin_scores[plugin] = plugin_scores.get(plugin, np.zeros(problem.num_nodes)) + row
    decision = schedule(snapshot, conf, workload=workload)
    among = _among_the_others(problem, decision.placed, pod_key, t)
    nodes: dict[str, Any] = {}
    for n, name in enumerate(problem.node_names):
        reasons: list[str] = []
        code = int(problem.ineligible_reason[t, n])
        if code:
            reasons.append(problem.reason_texts[code])
        short = np.flatnonzero((problem.free[n] < demand) & (demand > 0))
        reasons.extend(f"Insufficient {problem.resources[r]}" for r in short.tolist())
        if among is not None and among[n] and not code:  # a filter's reason stands first
            reasons.append(f"{problem.reason_texts[int(among[n])]} {WITH_THE_OTHERS}")
        feasible = not reasons
        scores: dict[str, float] = {}
        if feasible and conf.enabled(Plugin.BINPACK):
            scores["binpack"] = round(float(dynamic[n]), 3)
        if feasible:
            scores.update(
                {plugin: round(float(row[n]), 3) for plugin, row in plugin_scores.items()}
            )
        nodes[name] = {
            "feasible": feasible,
            "reasons": reasons,
            "scores": scores,
            "total": round(sum(scores.values()), 3),
        }
    placement = decision.placements[pod_key]
    notes = []
    if CONSOLIDATION in conf.actions:
        notes.append(
            "the conf's consolidation action is not applied here: each node is shown as the "
            "cluster is (gangplan schedule gives the moves and where the pod goes after them)"
        )
    return {
        "pod": pod_key,
        "gang": pod.gang,
        "placement": placement.node,
        "card": placement.card,
        "reason": placement.reason,
        "nodes": nodes,
        **({"notes": notes} if notes else {}),
    }
