"""Snapshot + workload + scheduler conf -> Problem: run every enabled feature, pack arrays.

1. The resource axis: cpu, memory, pods, then every other resource a pending pod requests.
2. Free room per node: allocatable minus the snapshot's running usage (its derived totals).
3. Gangs and units of the workload (`features.gang`), with their task roles' minimums.
4. Pod types: pending pods with the same gang, demand and feature keys (eligibility
   signature, card alternatives), in pod-key order.
5. Every enabled feature's compile step, in registry order (`features.FEATURES`): filters,
   scores, blocked gangs, admission, unit order, its block.
6. Eligibility and static scores as shared rows (`Rows`): types with the same filters and
   scores share one row; each pod's rank in its unit's order.

Nothing here walks the running pods: a call costs its nodes and its own pods.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from solver.config import SchedulerConf
from solver.features import FACTS, FEATURES, CompileContext, GangPlan
from solver.features._base import combine_filters
from solver.features.gang import plan_gangs
from solver.gate import GATE
from solver.model import ClusterModel, Pod, task_role
from solver.problem import (
    FloatArray,
    IntArray,
    Minimum,
    Problem,
    Rows,
    SharedRows,
    not_enqueued,
)
from solver.quantity import CPU, MEMORY, PODS
from solver.snapshot import Lineage, PodSchema, Snapshot, Workload

__all__ = ["Compiled", "compile_problem"]


@dataclass(frozen=True)
class Compiled:
    """A Problem and each plugin's static scores (for `explain`)."""

    problem: Problem
    score_log: tuple[tuple[str, tuple[int, ...], FloatArray], ...]


def resource_axis(workload: Workload) -> tuple[str, ...]:
    """cpu, memory, pods first, then every other resource a pending pod requests, sorted."""
    extra = sorted({r for p in workload.pods for r in p.requests} - {CPU, MEMORY, PODS})
    return (CPU, MEMORY, PODS, *extra)


def _type_keys(snapshot: Snapshot, workload: Workload) -> list[Callable[[Pod], Hashable]]:
    """What pods of one type must agree on besides gang and demand, feature by feature."""
    keys = [f.type_key for f in FEATURES if f.type_key is not None]
    keys += [f.call_type_key(snapshot, workload) for f in FEATURES if f.call_type_key is not None]
    return keys


_SHAPE_FIELDS = operator.itemgetter(*(f for f in Pod.model_fields if f not in ("name", "gang")))


def _shape(pod: Pod) -> tuple[object, ...]:
    """A pod's gang and the identity of each of its other fields but the name: pods the
    codec copies from one template (a gang's members) share those objects, so their type
    key is computed once. Equal shapes imply equal fields, never the converse; a type key
    reads no pod's name (pods of one type differ only in it)."""
    return (pod.gang, *map(id, _SHAPE_FIELDS(pod.__dict__)))


def _free(snapshot: Snapshot, workload: Workload, resources: tuple[str, ...]) -> IntArray:
    """Free room per node: allocatable less the running pods' requests (once per generation
    and axis, read-only), less the room held for pods nominated elsewhere in the cluster
    (not placed by this call).

    Their priority must be >= the placed pod's (kube-scheduler's `addGENominatedPods`);
    one free column serves every pod of the call, so the call's lowest priority decides:
    a call mixing priorities gives its higher pods less room than kube-scheduler would,
    never more (verify checks the exact rule node by node).
    """

    def base() -> IntArray:
        out: IntArray = snapshot.nodes.capacity(resources) - snapshot.used(resources)
        out.flags.writeable = False
        return out

    free = snapshot.memo(("snapshot", "free", resources), base)
    if not workload.pods:
        return free
    lowest = min(p.priority for p in workload.pods)
    held = snapshot.nominated_room(resources, lowest, (p.key for p in workload.pods))
    return free if held is None else free - held


def compile_problem(
    question: ClusterModel | Snapshot, conf: SchedulerConf, workload: Workload | None = None
) -> Problem:
    """The Problem of a whole input (`ClusterModel`), or of one call on a snapshot."""
    snapshot = (
        question
        if isinstance(question, Snapshot)
        else Snapshot.from_model(question, PodSchema(FACTS))
    )
    return compile_parts(snapshot, workload or Workload.everything(snapshot), conf).problem


def compile_parts(snapshot: Snapshot, workload: Workload, conf: SchedulerConf) -> Compiled:
    resources = resource_axis(workload)
    capacity = snapshot.nodes.capacity(resources)
    free = _free(snapshot, workload, resources)
    plan = plan_gangs(snapshot, workload, conf)
    g_index = {gid: g for g, gid in enumerate(plan.gang_ids)}

    types: dict[tuple[Hashable, ...], int] = {}
    type_demand: list[tuple[int, ...]] = []
    type_gang: list[int] = []
    type_pods: list[list[str]] = []
    type_keys = _type_keys(snapshot, workload)
    by_shape: dict[tuple[object, ...], tuple[tuple[int, ...], tuple[Hashable, ...]]] = {}
    for pod in workload.pods:  # sorted by key, so pods of a type stay in name order
        shape = _shape(pod)
        if shape not in by_shape:
            demand = tuple(pod.requests.get(r, 0) for r in resources)
            by_shape[shape] = demand, (pod.gang, demand, *(f(pod) for f in type_keys))
        demand, key = by_shape[shape]
        if key not in types:
            types[key] = len(type_pods)
            type_demand.append(demand)
            type_gang.append(g_index[pod.gang])
            type_pods.append([])
        type_pods[types[key]].append(pod.key)

    num_units = len(plan.unit_ids)
    unit_priority = np.full(num_units, np.iinfo(np.int64).min, dtype=np.int64)
    unit_created = ["~"] * num_units  # "~" sorts after every timestamp
    unit_nominated = [False] * num_units
    for pod in workload.pods:
        u = plan.unit[g_index[pod.gang]]
        unit_priority[u] = max(unit_priority[u], pod.priority)
        unit_nominated[u] = unit_nominated[u] or pod.nominated_node is not None
    for gid, gang in workload.gangs.items():
        u = plan.unit[g_index[gid]]
        if gang.created:
            unit_created[u] = min(unit_created[u], gang.created)
    unit_priority[unit_priority == np.iinfo(np.int64).min] = 0

    ctx = CompileContext(
        snapshot=snapshot,
        workload=workload,
        conf=conf,
        resources=resources,
        gangs=plan,
        type_gang=type_gang,
        type_pods=type_pods,
        type_demand=np.array(type_demand, dtype=np.int64).reshape(len(type_pods), len(resources)),
        unit_priority=unit_priority,
        unit_created=unit_created,
        unit_nominated=unit_nominated,
    )
    ctx.enqueue_gates = [
        gate
        for feature in FEATURES
        if feature.enqueue is not None
        and feature.enabled(conf)
        and (gate := feature.enqueue(ctx)) is not None
    ]
    for feature in FEATURES:
        if feature.enabled(conf):
            GATE.pause()
            feature.compile(ctx)

    num_nodes = len(snapshot.nodes)
    reasons = _shared_rows(
        [tuple((id(mask), code) for mask, code in f) for f in ctx.filters],
        lambda t: combine_filters(ctx.filters[t], num_nodes),
        np.int64,
        num_nodes,
    )
    scores = _shared_rows(
        [tuple(id(row) for row in s) for s in ctx.scores],
        lambda t: _sum_rows(ctx.scores[t], num_nodes),
        np.float64,
        num_nodes,
    )
    order = (
        ctx.unit_order if ctx.unit_order is not None else sorted(range(num_units), key=ctx.unit_key)
    )
    type_rank = _rank_types(ctx, type_pods)  # sorts type_pods into rank order
    return Compiled(
        Problem(
            resources=resources,
            node_names=snapshot.nodes.names,
            capacity=capacity,
            free=free,
            type_demand=ctx.type_demand,
            type_gang=np.array(type_gang, dtype=np.int64),
            type_pods=tuple(tuple(p) for p in type_pods),
            eligible=Rows(reasons.rows == 0, reasons.of_type),
            ineligible_reason=reasons,
            reason_texts=tuple(ctx.reason_texts),
            static_score=scores,
            gang_ids=plan.gang_ids,
            gang_need=np.array(plan.need, dtype=np.int64),
            gang_pending=np.array(plan.pending, dtype=np.int64),
            gang_unit=np.array(plan.unit, dtype=np.int64),
            gang_requires=plan.requires,
            gang_blocked=_blocked(ctx, plan),
            gang_minimums=_minimums(plan, workload, type_gang, type_pods),
            gang_enqueue_reason=tuple(ctx.not_enqueued.get(g) for g in range(len(plan.gang_ids))),
            gang_enqueue_ahead=tuple(
                ctx.enqueued_ahead.get(g, ()) for g in range(len(plan.gang_ids))
            ),
            unit_ids=plan.unit_ids,
            unit_priority=unit_priority,
            unit_order=np.array(order, dtype=np.int64),
            type_rank=type_rank,
            notes=tuple(dict.fromkeys((*snapshot.notes, *conf.notes, *ctx.notes))),
            blocks={type(b): b for b in ctx.blocks},
            shared_rows=_shared_rows_of(snapshot),
        ),
        tuple(ctx.score_log),
    )


def _shared_rows_of(snapshot: Snapshot) -> SharedRows:
    """The greedy's fill rows shared by the calls on this snapshot, carried to its later
    generations while the nodes stay the same (each entry knows the room it was computed
    on, so a generation's changed pods cost the changed nodes)."""

    def build(s: Snapshot) -> SharedRows:
        return SharedRows(s.nodes)

    def carry(before: SharedRows, _: Lineage) -> SharedRows:
        return before if before.nodes is snapshot.nodes else SharedRows(snapshot.nodes)

    return snapshot.derive(("fill", "rows"), build, carry)


def _minimums(
    plan: GangPlan, workload: Workload, type_gang: list[int], type_pods: list[list[str]]
) -> tuple[tuple[Minimum, ...], ...]:
    """Each gang's task roles' minimums (`GangPlan.roles`) over its types (one role each)."""
    if not plan.roles:
        return ()
    role_types: dict[tuple[int, str], list[int]] = {}
    for t, g in enumerate(type_gang):
        if plan.roles[g]:
            pod = workload.pod_by_key[type_pods[t][0]]
            role_types.setdefault((g, task_role(pod.labels, pod.annotations)), []).append(t)
    return tuple(
        tuple(
            Minimum(f"task {role}", tuple(role_types.get((g, role), ())), need)
            for role, need in roles
        )
        for g, roles in enumerate(plan.roles)
    )


def _blocked(ctx: CompileContext, plan: GangPlan) -> tuple[str | None, ...]:
    """Why each gang cannot be placed at all: its own plan, a feature, or its queue."""
    out: list[str | None] = []
    for g, own in enumerate(plan.blocked):
        why = own or ctx.blocked.get(g)
        if why is None and g in ctx.not_enqueued:
            why = not_enqueued(ctx.not_enqueued[g])
        out.append(why)
    return tuple(out)


def _shared_rows(
    keys: list[tuple[Hashable, ...]],
    row_of: Callable[[int], npt.NDArray[Any]],
    dtype: type,
    num_nodes: int,
) -> Rows[Any]:
    """One row per distinct key (`row_of(t)` for its first type)."""
    index: dict[tuple[Hashable, ...], int] = {}
    rows: list[np.ndarray] = []
    of_type = np.zeros(len(keys), dtype=np.int64)
    for t, key in enumerate(keys):
        if key not in index:
            index[key] = len(rows)
            rows.append(row_of(t))
        of_type[t] = index[key]
    matrix: npt.NDArray[Any] = np.array(rows, dtype=dtype).reshape(len(rows), num_nodes)
    return Rows(matrix, of_type)


def _sum_rows(rows: list[FloatArray], num_nodes: int) -> FloatArray:
    total = np.zeros(num_nodes)
    for row in rows:
        total = total + row
    return total


def _rank_types(ctx: CompileContext, type_pods: list[list[str]]) -> tuple[IntArray, ...]:
    """Each pod's rank in its unit's order; sorts `type_pods` in place into rank order.
    The pods a gang's task roles need come first (in that order), so a placer that takes
    a unit's first `need` pods (HyperNodes, gathers) takes its roles' minimums."""
    unit_of = ctx.gangs.unit
    members: dict[int, list[tuple[int, str]]] = {}
    for t, pods in enumerate(type_pods):
        members.setdefault(unit_of[ctx.type_gang[t]], []).extend((t, key) for key in pods)
    ranks: list[dict[str, int]] = [{} for _ in type_pods]
    roles = ctx.gangs.roles
    role_left = {(g, role): need for g, rs in enumerate(roles) for role, need in rs}
    role_units = {unit_of[g] for g, _ in role_left}
    for u, items in members.items():
        sort_key = ctx.unit_sort_key.get(u)
        if sort_key is not None:
            items.sort(key=lambda item: sort_key(ctx.workload.pod_by_key[item[1]]))
        else:
            items.sort(key=lambda item: item[1])
        if u in role_units:
            items = _minimums_first(ctx, items, role_left)
        for rank, (t, key) in enumerate(items):
            ranks[t][key] = rank
    out: list[IntArray] = []
    for t, pods in enumerate(type_pods):
        pods.sort(key=lambda key: ranks[t][key])
        out.append(np.array([ranks[t][key] for key in pods], dtype=np.int64))
    return tuple(out)


def _minimums_first(
    ctx: CompileContext, items: list[tuple[int, str]], left: dict[tuple[int, str], int]
) -> list[tuple[int, str]]:
    """`items` (type, pod key) with the first `need` pods of each gang's task role (`left`,
    counted down) moved to the front, both parts in their order."""
    first: list[tuple[int, str]] = []
    rest: list[tuple[int, str]] = []
    for item in items:
        pod = ctx.workload.pod_by_key[item[1]]
        role = (ctx.type_gang[item[0]], task_role(pod.labels, pod.annotations))
        if left.get(role, 0) > 0:
            left[role] -= 1
            first.append(item)
        else:
            rest.append(item)
    return first + rest
