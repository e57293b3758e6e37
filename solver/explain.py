"""Why a pod can or cannot go to each node, and how every node scores for it.

The verdicts are for the cluster as the input shows it, before this cycle places any
other pending pod; `placement` says where `schedule` actually put the pod.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solver.compile import compile_parts
from solver.config import Plugin, SchedulerConf
from solver.errors import InputError
from solver.model import ClusterModel
from solver.schedule import schedule, snapshot_of
from solver.snapshot import Workload

__all__ = ["explain"]


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
    nodes: dict[str, Any] = {}
    for n, name in enumerate(problem.node_names):
        reasons: list[str] = []
        code = int(problem.ineligible_reason[t, n])
        if code:
            reasons.append(problem.reason_texts[code])
        short = np.flatnonzero((problem.free[n] < demand) & (demand > 0))
        reasons.extend(f"Insufficient {problem.resources[r]}" for r in short.tolist())
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
    decision = schedule(snapshot, conf, workload=workload)
    placement = decision.placements[pod_key]
    return {
        "pod": pod_key,
        "gang": pod.gang,
        "placement": placement.node,
        "card": placement.card,
        "reason": placement.reason,
        "nodes": nodes,
    }
