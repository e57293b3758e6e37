"""Model + scheduler conf -> Problem: run every enabled policy and pack the result into arrays.

Pending pods are grouped into pod types by (gang, demand, eligibility, scores); nodes are
kept one by one (node classes are the CP-SAT engine's business). Placement order inside a
gang is by pod name, except in topology-gathered gang groups, where it is the
`network-topology-index` order (`Problem.type_rank`). Unit-level node restrictions
(nodes outside the network tree, a Godel PodGroup's nodeSelector and required keys) are
folded into `eligible` with their own counted reasons.
"""

from __future__ import annotations

import numpy as np

from solver.config import SchedulerConf
from solver.model import ClusterModel, Pod
from solver.policies.binpack import binpack_weights
from solver.policies.cards import CARD_NAME
from solver.policies.gang import plan_gangs
from solver.policies.predicates import node_fit_reason
from solver.policies.queues import compile_queues
from solver.policies.topology import compile_topology
from solver.problem import Problem
from solver.quantity import CPU, MEMORY, PODS

__all__ = ["compile_problem"]


def _resource_axis(model: ClusterModel) -> tuple[str, ...]:
    """cpu, memory, pods first, then every other resource a pending pod requests, sorted."""
    extra = sorted({r for p in model.pending_pods for r in p.requests} - {CPU, MEMORY, PODS})
    return (CPU, MEMORY, PODS, *extra)


def _eligibility_signature(pod: Pod) -> tuple[object, ...]:
    return (
        tuple(sorted(pod.node_selector.items())),
        pod.required_affinity,
        pod.tolerations,
    )


def compile_problem(model: ClusterModel, conf: SchedulerConf) -> Problem:
    resources = _resource_axis(model)
    r_index = {r: i for i, r in enumerate(resources)}
    nodes = model.nodes
    table = model.node_table
    n_index = table.index
    capacity = table.capacity(resources)
    free = capacity.copy()
    for pod in model.bound_pods:
        i = n_index.get(pod.node_name or "")
        if i is None:
            continue  # bound to a node not in the input: it uses nothing we schedule on
        for r, v in pod.requests.items():
            if r in r_index:
                free[i, r_index[r]] -= v

    predicates_on = conf.enabled("predicates")
    no_verdicts = np.zeros(len(nodes), dtype=np.int64)

    def eligibility(pod: Pod) -> np.ndarray:
        if not predicates_on:
            return no_verdicts
        return table.verdicts(_eligibility_signature(pod), pod, node_fit_reason)

    gang_plan = plan_gangs(model, conf)
    g_index = {gid: i for i, gid in enumerate(gang_plan.gang_ids)}

    types: dict[tuple[object, ...], int] = {}
    type_demand: list[list[int]] = []
    type_gang: list[int] = []
    type_pods: list[list[str]] = []
    type_reason: list[np.ndarray] = []
    for pod in model.pending_pods:  # sorted by key, so pods of a type stay in name order
        demand = [pod.requests.get(r, 0) for r in resources]
        row = eligibility(pod)
        key = (pod.gang, tuple(demand), _eligibility_signature(pod), pod.annotations.get(CARD_NAME))
        if key not in types:
            types[key] = len(type_pods)
            type_demand.append(demand)
            type_gang.append(g_index[pod.gang])
            type_pods.append([])
            type_reason.append(row)
        type_pods[types[key]].append(pod.key)

    num_types = len(type_pods)
    reasons = np.array(type_reason, dtype=np.int64).reshape(num_types, len(nodes))
    # Every code in the rows above is in the table's texts by now; this call's own
    # reasons (topology, queues, cards) get codes after them.
    reason_texts = table.reason_texts()
    reason_code = {text: code for code, text in enumerate(reason_texts)}

    def code_of(reason: str) -> int:
        if reason not in reason_code:
            reason_code[reason] = len(reason_texts)
            reason_texts.append(reason)
        return reason_code[reason]

    topo = compile_topology(model, conf, gang_plan, code_of)
    for t in range(num_types):
        for mask, code in topo.gang_masks.get(type_gang[t], ()):
            reasons[t] = np.where((reasons[t] == 0) & ~mask, code, reasons[t])
    type_rank = topo.rank_types(type_gang, type_pods, gang_plan.unit)

    num_units = len(gang_plan.unit_ids)
    unit_priority = np.full(num_units, np.iinfo(np.int64).min, dtype=np.int64)
    unit_created: list[str] = ["~"] * num_units  # "~" sorts after every timestamp
    for pod in model.pending_pods:
        u = gang_plan.unit[g_index[pod.gang]]
        unit_priority[u] = max(unit_priority[u], pod.priority)
    for gid, gang in model.gangs.items():
        u = gang_plan.unit[g_index[gid]]
        if gang.created:
            unit_created[u] = min(unit_created[u], gang.created)
    unit_priority[unit_priority == np.iinfo(np.int64).min] = 0
    unit_order = np.array(
        sorted(
            range(num_units),
            key=lambda u: (-int(unit_priority[u]), unit_created[u], gang_plan.unit_ids[u]),
        ),
        dtype=np.int64,
    )

    unit_keys = [
        (-int(unit_priority[u]), unit_created[u], gang_plan.unit_ids[u]) for u in range(num_units)
    ]
    queues = compile_queues(
        model,
        conf,
        gang_plan.gang_ids,
        gang_plan.unit,
        unit_keys,
        type_gang,
        type_pods,
        type_demand,
        resources,
        code_of,
    )
    static_score = np.zeros((num_types, len(nodes)))
    for t in range(num_types):
        for allowed, code in queues.masks.get(type_gang[t], ()):
            reasons[t] = np.where((reasons[t] == 0) & ~np.array(allowed), code, reasons[t])
        if type_gang[t] in queues.scores:
            static_score[t] += np.array(queues.scores[type_gang[t]])
        for allowed, code in queues.card_masks.get(t, ()):
            reasons[t] = np.where((reasons[t] == 0) & ~np.array(allowed), code, reasons[t])
        if t in queues.card_scores:
            static_score[t] += np.array(queues.card_scores[t])
    if queues.unit_order is not None:
        unit_order = np.array(queues.unit_order, dtype=np.int64)
    blocked = list(topo.blocked(gang_plan.blocked))
    enqueue_reason: list[str | None] = [None] * len(gang_plan.gang_ids)
    for g, why in queues.enqueue_rejected.items():
        enqueue_reason[g] = why
        blocked[g] = blocked[g] or f"not enqueued: {why}"

    weight, per_resource = 0.0, dict[str, float]()
    if conf.enabled("binpack"):
        weight, per_resource = binpack_weights(conf.arguments("binpack"), resources)

    return Problem(
        resources=resources,
        node_names=table.names,
        capacity=capacity,
        free=free,
        type_demand=np.array(type_demand, dtype=np.int64).reshape(num_types, len(resources)),
        type_gang=np.array(type_gang, dtype=np.int64),
        type_pods=tuple(tuple(p) for p in type_pods),  # rank order (rank_types sorted them)
        eligible=reasons == 0,
        ineligible_reason=reasons,
        reason_texts=tuple(reason_texts),
        static_score=static_score,
        gang_ids=gang_plan.gang_ids,
        gang_need=np.array(gang_plan.need, dtype=np.int64),
        gang_pending=np.array(gang_plan.pending, dtype=np.int64),
        gang_unit=np.array(gang_plan.unit, dtype=np.int64),
        gang_requires=gang_plan.requires,
        gang_blocked=tuple(blocked),
        unit_ids=gang_plan.unit_ids,
        unit_priority=unit_priority,
        unit_order=unit_order,
        binpack_weight=weight,
        binpack_resource_weight=np.array(
            [per_resource.get(r, 0.0) for r in resources], dtype=np.float64
        ),
        notes=model.notes + conf.notes + topo.notes,
        topo_layers=topo.layers,
        topo_domains=topo.domains,
        topo_parent=topo.parent,
        node_domain=topo.node_domain,
        unit_gather=topo.unit_gather,
        unit_gather_layer=topo.unit_gather_layer,
        unit_pod_multiple=topo.unit_pod_multiple,
        unit_peers=topo.unit_peers,
        gather_multiple_text=topo.multiple_text,
        unit_domain=topo.unit_domain,
        unit_domain_names=topo.unit_domain_names,
        unit_godel=topo.unit_godel,
        godel_allocatable=topo.godel_allocatable,
        godel_requested=topo.godel_requested,
        type_rank=type_rank,
        queue_names=queues.queue_names,
        quota_dims=queues.quota_dims,
        queue_headroom=np.array(queues.headroom, dtype=np.int64).reshape(
            len(queues.queue_names), len(queues.quota_dims)
        ),
        type_queues=tuple(tuple(q) for q in queues.type_queues),
        type_quota_demand=np.array(queues.type_quota_demand, dtype=np.int64).reshape(
            num_types, len(queues.quota_dims)
        ),
        type_card_dims=tuple(tuple(d) for d in queues.type_card_dims),
        type_card_count=np.array(queues.type_card_count, dtype=np.int64),
        type_node_card=np.array(queues.type_node_card, dtype=np.int64).reshape(
            num_types, len(nodes)
        ),
        gang_enqueue_reason=tuple(enqueue_reason),
    )
