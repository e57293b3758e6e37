"""What the running pods of each LocalQueue use, per flavor-resource.

A running pod counts against the flavor of its node: the first flavor of its
ClusterQueue's resource group (in the group's order) whose `nodeLabels` the node carries,
for each resource the group covers (Kueue counts what it admitted; the node a pod runs on
carries the labels of the flavor it was admitted in, as Kueue writes them into its
`nodeSelector`). A pod on a node of no flavor of the group counts nowhere. Kept by
deltas: a generation pays for the rows its delta added and retired (grouped by LocalQueue
in numpy), unless the queues or the nodes changed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solver.model import KueueQueue, KueueResourceGroup, flavor_resource, kueue_queue
from solver.problem import IntArray
from solver.quantity import PODS
from solver.snapshot import Lineage, NodeTable, Snapshot

__all__ = ["node_flavors", "running_usage"]


def node_flavors(nodes: NodeTable, group: KueueResourceGroup) -> IntArray:
    """[N] the index of the first flavor of `group` whose node labels node n carries; -1 none
    (memoised per node generation)."""
    key = ("kueue", "node flavors", tuple((f.name, tuple(sorted(f.node_labels.items())))
                                          for f in group.flavors))  # fmt: skip

    def compute() -> IntArray:
        out = np.full(len(nodes), -1, dtype=np.int64)
        for i, node in enumerate(nodes.nodes):
            for k, flavor in enumerate(group.flavors):
                if all(node.labels.get(a) == b for a, b in flavor.node_labels.items()):
                    out[i] = k
                    break
        return out

    return nodes.memo(key, compute)


@dataclass(frozen=True)
class _Held:
    """The running usage per LocalQueue, and what it was attributed with: the Kueue queue
    specs and the node table (a change of either attributes every row anew)."""

    specs: dict[str, tuple[str | None, KueueQueue]]
    nodes: NodeTable
    usage: dict[str, dict[str, int]]


def _specs(snapshot: Snapshot) -> dict[str, tuple[str | None, KueueQueue]]:
    return {n: (q.parent, q.kueue) for n, q in snapshot.queues.items() if q.kueue is not None}


def running_usage(snapshot: Snapshot) -> dict[str, dict[str, int]]:
    """Per LocalQueue (`<namespace>/<name>`), what its running pods use per flavor-resource:
    kept by deltas (the rows a delta added are counted, the ones it retired taken away),
    computed anew when the queues' specs or the nodes changed."""

    def build(snap: Snapshot) -> _Held:
        return _Held(_specs(snap), snap.nodes, _usage(snap, snap.running.rows()))

    def update(before: _Held, lineage: Lineage) -> _Held:
        specs = _specs(snapshot)
        if before.nodes is not snapshot.nodes or before.specs != specs:
            return build(snapshot)
        usage = {q: dict(u) for q, u in before.usage.items()}
        for rows, sign in ((lineage.added, 1), (lineage.retired, -1)):
            for q, more in _usage(snapshot, rows).items():
                mine = usage.setdefault(q, {})
                for fr, v in more.items():
                    mine[fr] = mine.get(fr, 0) + sign * v
        usage = {q: {fr: v for fr, v in u.items() if v} for q, u in usage.items()}
        return _Held(specs, snapshot.nodes, {q: u for q, u in usage.items() if u})

    return snapshot.derive(("kueue", "running usage"), build, update).usage


def _usage(snapshot: Snapshot, rows: IntArray) -> dict[str, dict[str, int]]:
    """What `rows` of the running pods use, per LocalQueue and flavor-resource: rows grouped
    by (labels, namespace) in one sort, each group's LocalQueue read once."""
    running = snapshot.running
    if not rows.size:
        return {}
    pairs = np.stack([running.label_set[rows], running.namespace[rows]], axis=1)
    uniq, inverse = np.unique(pairs, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(len(uniq) + 1))
    out: dict[str, dict[str, int]] = {}
    for i, (ls, ns) in enumerate(uniq.tolist()):
        local = kueue_queue(running.label_sets[int(ls)], running.namespace_names.value(int(ns)))
        queue = snapshot.queues.get(local) if local is not None else None
        cq = snapshot.queues.get(queue.parent) if queue is not None and queue.parent else None
        if local is None or cq is None or cq.kueue is None:
            continue
        mine = rows[order[bounds[i] : bounds[i + 1]]]
        use = out.setdefault(local, {})
        for group in cq.kueue.groups:
            covered = [r for r in group.covered if r in running.resources or r == PODS]
            if not covered:
                continue
            flavor = node_flavors(snapshot.nodes, group)[running.node[mine].astype(np.int64)]
            cols = tuple(r for r in covered if r != PODS)
            requests = running.requests(cols, mine)
            for k, f in enumerate(group.flavors):
                on = flavor == k
                if not on.any():
                    continue
                for r in covered:
                    total = int(on.sum()) if r == PODS else int(requests[on, cols.index(r)].sum())
                    if total:
                        fr = flavor_resource(f.name, r)
                        use[fr] = use.get(fr, 0) + total
    return {q: u for q, u in out.items() if u}
