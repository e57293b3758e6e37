"""Kueue Topology Aware Scheduling as a topology dialect (`reference/godel_kueue.md` §2): a
reader (`solver.kube.kueue`, the pod annotations in `solver.model`) plus Kueue's ordering
rule (`kueue_tas.py`), on the one topology block and both engines.

A **pod set** is the pending pods of one gang that share the `kueue.x-k8s.io/podset` label
(a Kueue Workload's pod set; absent: one pod set per gang), their topology request and
their request per pod. Its **flavor** is the first TAS ResourceFlavor (by name) whose
Topology has the requested levels and whose `nodeLabels` agree with the pods'
`nodeSelector` (Kueue tries a ClusterQueue's flavors in its order; gangplan reads no
ClusterQueue). Its pods may only use the flavor's **pool**: nodes matching `nodeLabels`,
Ready, schedulable and carrying every level label (`tas_flavor.go`); elsewhere they are
ineligible with their own reason. A pod set is placed whole or not at all (Kueue admits a
workload whole).

A **group** (`kueue.x-k8s.io/podset-group-name`) is two pod sets of a gang, one of a single
pod (the leader), with the same required or preferred level (`ValidatePodSetGroupingTopology`
in `jobframework/tas_validation.go`; other groups are refused with its message): it is one
`KueuePodSet` of the workers' request carrying its `leader`, placed by one Kueue call.

The tree of a flavor's pool is a snapshot fact: memoised per node generation, Topology
and flavor, with domains numbered in level-value order (Kueue's tie-break).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solver.features._base import CompileContext
from solver.features.predicates import tolerates
from solver.features.topology.kueue.tas import KueueTree, LeaderLeaves, TasRequest
from solver.model import (
    HOSTNAME,
    KUEUE_ANNOTATIONS,
    KUEUE_PODSET_LABEL,
    KueueFlavor,
    KueueRequest,
    KueueTopology,
    NetworkTopology,
    Pod,
    cluster_queue_flavors,
    parse_kueue_request,
    pod_set_group_error,
)
from solver.problem import BoolArray, IntArray
from solver.snapshot import NodeTable

__all__ = [
    "PODSET_LABEL",
    "KueueLeader",
    "KueuePodSet",
    "compile_kueue",
    "kueue_tree",
    "leader_leaves",
    "leaf_pods",
    "pod_set_key",
]

PODSET_LABEL = KUEUE_PODSET_LABEL
REASON_POOL = "node(s) are outside the Kueue TAS flavor {flavor}'s node pool"


@dataclass(frozen=True)
class KueueLeader:
    """The one-pod pod set of a group, placed beside the workers."""

    name: str
    types: tuple[int, ...]


@dataclass(frozen=True, eq=False)
class KueuePodSet:
    """One pod set's topology request, resolved against its flavor's tree."""

    gang: int
    name: str  # the pod set's name (its `kueue.x-k8s.io/podset` label; "main" without)
    types: tuple[int, ...]  # pod types of the set (one request per pod)
    flavor: str
    tree: KueueTree
    request: TasRequest
    mode: str  # required | preferred | unconstrained (what the user asked for)
    leader: KueueLeader | None = None  # the group's leader pod set

    @property
    def all_types(self) -> tuple[int, ...]:
        return self.types + (self.leader.types if self.leader else ())

    @property
    def total(self) -> int:
        """Pods of the set and its leader."""
        return self.request.count + (1 if self.leader else 0)

    @property
    def hostname_leaves(self) -> bool:
        return self.tree.levels[-1] == HOSTNAME


def pod_set_key(pod: Pod) -> tuple[str, ...]:
    """What pods of one type must agree on for Kueue: the pod set and its request."""
    keys = sorted(k for k in pod.annotations if k.startswith(KUEUE_ANNOTATIONS.PREFIX))
    if not keys:
        return ()
    return (pod.labels.get(PODSET_LABEL, ""), *(f"{k}={pod.annotations[k]}" for k in keys))


def _build_tree(nodes: NodeTable, topology: KueueTopology, flavor: KueueFlavor) -> KueueTree:
    levels = topology.levels
    paths: list[tuple[str, ...] | None] = []
    for node in nodes.nodes:
        ok = (
            node.ready
            and not node.unschedulable
            and all(node.labels.get(k) == v for k, v in flavor.node_labels.items())
            and all(level in node.labels for level in levels)
        )
        paths.append(tuple(node.labels[level] for level in levels) if ok else None)
    per_level = [sorted({p[: lv + 1] for p in paths if p is not None}) for lv in range(len(levels))]
    index = [{path: i for i, path in enumerate(names)} for names in per_level]
    parent = [np.full(len(per_level[0]), -1, dtype=np.int64)]
    for lv in range(1, len(levels)):
        parent.append(np.array([index[lv - 1][p[:-1]] for p in per_level[lv]], dtype=np.int64))
    leaf = np.array([index[-1][p] if p is not None else -1 for p in paths], dtype=np.int64)
    for row in (*parent, leaf):
        row.flags.writeable = False
    return KueueTree(
        name=topology.name,
        levels=levels,
        paths=tuple(tuple(names) for names in per_level),
        parent=tuple(parent),
        node_leaf=leaf,
    )


def kueue_tree(nodes: NodeTable, topology: KueueTopology, flavor: KueueFlavor) -> KueueTree:
    """The tree of a flavor's pool (memoised per node generation)."""
    key = (
        "kueue",
        "tree",
        topology.name,
        topology.levels,
        flavor.name,
        tuple(sorted(flavor.node_labels.items())),
    )
    return nodes.memo(key, lambda: _build_tree(nodes, topology, flavor))


def _flavor_for(
    cluster: NetworkTopology, request: KueueRequest, pod: Pod, order: tuple[str, ...] | None
) -> tuple[KueueFlavor, KueueTopology] | str:
    """The pod set's TAS flavor: the first (by name; of its ClusterQueue's flavors in the
    ClusterQueue's order when the pods name a Kueue LocalQueue, `order`) whose Topology has
    the requested levels, whose node labels agree with the pods' and whose taints they
    tolerate."""
    topologies = {t.name: t for t in cluster.kueue_topologies}
    wanted = [lv for lv in (request.level, *(t for t, _ in request.layers)) if lv is not None]
    flavors = cluster.kueue_flavors
    if order is not None:
        by_name = {f.name: f for f in flavors}
        flavors = tuple(by_name[name] for name in order if name in by_name)
    for flavor in flavors:
        topology = topologies.get(flavor.topology)
        if topology is None or any(lv not in topology.levels for lv in wanted):
            continue
        if any(pod.node_selector.get(k, v) != v for k, v in flavor.node_labels.items()):
            continue
        if _untolerated_flavor_taint(flavor, pod):
            continue
        return flavor, topology
    if not cluster.kueue_flavors:
        return "no Kueue TAS ResourceFlavor (spec.topologyName) in the input"
    return (
        f"no Kueue TAS ResourceFlavor has a Topology with level(s) {', '.join(wanted)}, "
        "node labels agreeing with the pods' nodeSelector and nodeTaints the pods tolerate"
    )


def _untolerated_flavor_taint(flavor: KueueFlavor, pod: Pod) -> bool:
    """A NoSchedule/NoExecute `nodeTaints` entry neither the pod's nor the flavor's own
    tolerations tolerate: Kueue's flavor assigner skips the flavor
    (`FindMatchingUntoleratedTaint` in flavorassigner.go)."""
    tolerations = (*pod.tolerations, *flavor.tolerations)
    return any(
        taint.effect in ("NoSchedule", "NoExecute")
        and not any(tolerates(t, taint) for t in tolerations)
        for taint in flavor.node_taints
    )


def _resolve(request: KueueRequest, tree: KueueTree, count: int) -> TasRequest | str:
    levels = tree.levels
    if request.slice_only:
        level = 0  # slice-only: the highest level, unconstrained
    elif request.level is None:
        level = tree.lowest  # unconstrained: the lowest level
    else:
        level = levels.index(request.level)
    slice_level = levels.index(request.slice_level) if request.slice_level else tree.lowest
    if level > slice_level:
        return (
            f"podset slice topology {request.slice_level} is above the podset topology "
            f"{request.level}"
        )
    if request.slice_size > count:
        return f"slice size {request.slice_size} is larger than the pod set's {count} pod(s)"
    if count % request.slice_size:
        return (
            f"the pod set's {count} pod(s) are not a multiple of its slice size "
            f"{request.slice_size}"
        )
    size_at = _slice_sizes_at_levels(request, levels, slice_level)
    if isinstance(size_at, str):
        return size_at
    return TasRequest(
        count=count,
        level=level,
        slice_level=slice_level,
        slice_size=request.slice_size,
        required=request.mode == "required",
        unconstrained=request.mode == "unconstrained",
        size_at=size_at,
        layers=(
            ((slice_level, request.slice_size), *((levels.index(t), k) for t, k in request.inner))
            if request.inner
            else ()
        ),
    )


def _slice_sizes_at_levels(
    request: KueueRequest, levels: tuple[str, ...], slice_level: int
) -> tuple[tuple[int, int], ...] | str:
    """Kueue's `buildSliceSizeAtLevel`: each inner slice layer's size on its level and on
    the levels between it and the layer above; why not, in Kueue's words."""
    out: dict[int, int] = {}
    prev_size, prev_level = request.slice_size, slice_level
    for topology, size in request.inner:
        if topology not in levels:
            return f"no requested topology level for additional slice layer: {topology}"
        lv = levels.index(topology)
        if lv <= prev_level:
            return (
                f"additional slice layer topology {topology} must be at a lower level than "
                f"{levels[prev_level]}"
            )
        if prev_size % size:
            return f"additional slice layer size {size} must evenly divide parent layer size {prev_size}"
        for between in range(prev_level + 1, lv + 1):
            out[between] = size
        prev_size, prev_level = size, lv
    return tuple(sorted(out.items()))


def _pod_sets_of_gang(ctx: CompileContext, g: int) -> dict[tuple[str, ...], list[int]]:
    """Types of gang g grouped by pod set, request and per-pod request."""
    out: dict[tuple[str, ...], list[int]] = {}
    for t in ctx.types_of(g):
        key = pod_set_key(ctx.first_pod(t))
        if key:
            out.setdefault((*key, ctx.type_demand[t].tobytes().hex()), []).append(t)
    return out


@dataclass
class _Entry:
    name: str
    types: list[int]
    request: KueueRequest
    count: int
    leader: KueueLeader | None = None


def _entries(ctx: CompileContext, g: int) -> list[_Entry] | str:
    """The pod sets of gang g in order, each group folded into its workers (Kueue's
    `findLeaderAndWorkers`: the second is the leader unless it has more pods)."""
    entries: list[_Entry] = []
    groups: dict[str, list[_Entry]] = {}
    for key, types in _pod_sets_of_gang(ctx, g).items():
        request = parse_kueue_request(ctx.first_pod(types[0]).annotations)  # readers checked
        if request is None:
            continue
        count = sum(len(ctx.type_pods[t]) for t in types)
        entry = _Entry(key[0] or "main", types, request, count)
        if request.group is None:
            entries.append(entry)
            continue
        if request.group not in groups:
            entries.append(entry)
        groups.setdefault(request.group, []).append(entry)
    for group, members in groups.items():
        why = pod_set_group_error(group, [(e.name, e.count, e.request) for e in members])
        if why:
            return f"Kueue pod-set group {group!r}: {why}"
        workers, leader = members
        if leader.count > workers.count:
            workers, leader = leader, workers
        at = next(i for i, e in enumerate(entries) if e.request.group == group)
        entries[at] = _Entry(
            workers.name,
            workers.types,
            workers.request,
            workers.count,
            KueueLeader(leader.name, tuple(leader.types)),
        )
    return entries


def compile_kueue(ctx: CompileContext) -> dict[int, tuple[KueuePodSet, ...]]:
    """The Kueue pod sets of every unit; restricts their pods to their flavor's pool and
    blocks gangs whose request cannot be served (with Kueue's reason)."""
    cluster = ctx.snapshot.topology or NetworkTopology()
    out: dict[int, list[KueuePodSet]] = {}
    plan = ctx.gangs
    for g, gid in enumerate(plan.gang_ids):
        entries = _entries(ctx, g)
        if isinstance(entries, str):
            ctx.block_gang(g, f"gang {gid}: {entries}")
            continue
        for entry in entries:
            first = ctx.first_pod(entry.types[0])
            order = cluster_queue_flavors(ctx.snapshot.queues, first.labels, first.namespace)
            found = _flavor_for(cluster, entry.request, first, order)
            if isinstance(found, str):
                ctx.block_gang(g, f"gang {gid}: {found}")
                continue
            flavor, topology = found
            tree = kueue_tree(ctx.nodes, topology, flavor)
            resolved = _resolve(entry.request, tree, entry.count)
            if isinstance(resolved, str):
                ctx.block_gang(g, f"gang {gid}: {resolved}")
                continue
            pool: BoolArray = tree.node_leaf >= 0
            leader_types = entry.leader.types if entry.leader else ()
            ctx.restrict(
                [*entry.types, *leader_types], pool, REASON_POOL.format(flavor=flavor.name)
            )
            out.setdefault(int(plan.unit[g]), []).append(
                KueuePodSet(
                    gang=g,
                    name=entry.name,
                    types=tuple(entry.types),
                    flavor=flavor.name,
                    tree=tree,
                    request=resolved,
                    mode=entry.request.mode,
                    leader=entry.leader,
                )
            )
    return {u: tuple(sets) for u, sets in out.items()}


def leaf_pods(
    pod_set: KueuePodSet, free: IntArray, demand: IntArray, eligible: BoolArray
) -> IntArray:
    """[D_lowest] pods of the set each leaf holds with `free` room: per node with hostname
    leaves (the pod's filters counted); else the leaf's nodes summed, then divided, as
    Kueue aggregates a rack (selectors not evaluated)."""
    tree = pod_set.tree
    positive = demand > 0
    leaves = len(tree.paths[-1])
    in_pool = tree.node_leaf >= 0
    if pod_set.hostname_leaves:
        room = np.maximum(free[:, positive], 0) // demand[positive]
        slots = np.where(eligible & in_pool, room.min(axis=1), 0)
        return np.bincount(
            tree.node_leaf[in_pool], weights=slots[in_pool], minlength=leaves
        ).astype(np.int64)
    total = np.zeros((leaves, int(positive.sum())), dtype=np.int64)
    np.add.at(total, tree.node_leaf[in_pool], np.maximum(free[in_pool][:, positive], 0))
    per_leaf: IntArray = (total // demand[positive]).min(axis=1).astype(np.int64)
    return per_leaf


def _room(free: IntArray, demand: IntArray) -> IntArray:
    """Pods of `demand` that `free` rows hold (resources the pod does not request skipped)."""
    positive = demand > 0
    if not positive.any():
        return np.full(free.shape[0], np.iinfo(np.int32).max, dtype=np.int64)
    room: IntArray = (np.maximum(free[:, positive], 0) // demand[positive]).min(axis=1)
    return room.astype(np.int64)


def leader_leaves(
    pod_set: KueuePodSet,
    free: IntArray,
    demand: IntArray,
    leader_demand: IntArray,
    eligible: BoolArray,
) -> LeaderLeaves:
    """Where the group's leader fits and the workers beside it, per leaf (`fillLeafCounts`:
    with hostname leaves per node, where the workers' and the leader's filters pass; else on
    the leaf's summed room)."""
    tree = pod_set.tree
    in_pool = tree.node_leaf >= 0
    leaves = len(tree.paths[-1])
    if pod_set.hostname_leaves:
        rows, where = free, eligible & in_pool
    else:
        rows = np.zeros((leaves, free.shape[1]), dtype=np.int64)
        np.add.at(rows, tree.node_leaf[in_pool], np.maximum(free[in_pool], 0))
        where = np.ones(leaves, dtype=bool)
    fits = where & (_room(rows, leader_demand) > 0)
    beside = np.where(fits, _room(rows - np.where(fits[:, None], leader_demand, 0), demand), 0)
    plain = np.where(where, _room(rows, demand), 0)
    with_leader = np.where(fits, beside, plain)
    if not pod_set.hostname_leaves:
        return LeaderLeaves(fits.astype(np.int64), with_leader.astype(np.int64))
    node_leaf = tree.node_leaf[in_pool]
    # a leaf is one node (hostname leaves)
    out_fits = np.zeros(leaves, dtype=np.int64)
    out_fits[node_leaf] = fits[in_pool]
    out_with = np.zeros(leaves, dtype=np.int64)
    out_with[node_leaf] = with_leader[in_pool]
    return LeaderLeaves(out_fits, out_with)
