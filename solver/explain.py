"""Why a pod can or cannot go to each node, and how every node scores for it.

The verdicts are for the cluster as the input shows it, before this cycle places any
other pending pod; `placement` says where `schedule` actually put the pod.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solver.compile import compile_problem
from solver.config import SchedulerConf
from solver.errors import InputError
from solver.model import ClusterModel, Pod
from solver.policies.nodegroup import nodegroup_verdict
from solver.policies.queues import card_weight, job_queue
from solver.problem import Problem
from solver.schedule import schedule

__all__ = ["explain"]


def explain(model: ClusterModel, conf: SchedulerConf | None, pod_key: str) -> dict[str, Any]:
    conf = conf or SchedulerConf.default()
    pod = model.pod_by_key.get(pod_key)
    if pod is None:
        raise InputError(f"pod {pod_key!r} is not in the input (give it as namespace/name)")
    if not pod.pending:
        raise InputError(f"pod {pod_key!r} is not pending: it is bound to {pod.node_name}")
    problem = compile_problem(model, conf)
    t = next(i for i, pods in enumerate(problem.type_pods) if pod_key in pods)
    demand = problem.type_demand[t]
    used = problem.capacity - problem.free
    binpack = problem.binpack_scores(t, used)
    plugin_scores = _policy_scores(model, conf, pod, problem)
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
        if feasible and conf.enabled("binpack"):
            scores["binpack"] = round(float(binpack[n]), 3)
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
    decision = schedule(model, conf)
    placement = decision.placements[pod_key]
    card = placement.card
    return {
        "pod": pod_key,
        "gang": pod.gang,
        "placement": placement.node,
        "card": card,
        "reason": placement.reason,
        "nodes": nodes,
    }


def _policy_scores(
    model: ClusterModel, conf: SchedulerConf, pod: Pod, problem: Problem
) -> dict[str, np.ndarray]:
    """The static score each policy plugin gives this pod on every node (by conf name)."""
    out: dict[str, np.ndarray] = {}
    queue = job_queue(model, pod.gang)
    if conf.enabled("nodegroup") and queue is not None:
        _, scores = nodegroup_verdict(model, conf, queue)
        if scores.any():
            out["nodegroup"] = scores
    if conf.enabled("capacity-card"):
        t = next(i for i, pods in enumerate(problem.type_pods) if pod.key in pods)
        dims = problem.type_card_dims[t] if problem.type_card_dims else ()
        if len(dims) > 1:
            weight = card_weight(conf.arguments("capacity-card").get("nodeOrderWeight", 1.0))
            rank = {d: i for i, d in enumerate(dims)}
            row = problem.type_node_card[t]
            out["capacity-card"] = np.array(
                [100 * 0.5 ** rank[int(d)] * weight if d >= 0 else 0.0 for d in row.tolist()]
            )
    return out
