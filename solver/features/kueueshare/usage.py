"""What the running pods of each LocalQueue use, per flavor-resource.

A running pod counts against the flavor of its node: the first flavor of its
ClusterQueue's resource group (in the group's order) whose `nodeLabels` the node carries,
for each resource the group covers (Kueue counts what it admitted; the node a pod runs on
carries the labels of the flavor it was admitted in, as Kueue writes them into its
`nodeSelector`). A pod on a node of no flavor of the group counts nowhere. Computed once
per snapshot generation: O(running pods) numpy work grouped by LocalQueue.
"""

from __future__ import annotations

import numpy as np

from solver.model import KueueResourceGroup, flavor_resource, kueue_queue
from solver.problem import IntArray
from solver.quantity import PODS
from solver.snapshot import NodeTable, Snapshot

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


def running_usage(snapshot: Snapshot) -> dict[str, dict[str, int]]:
    """Per LocalQueue (`<namespace>/<name>`), what its running pods use per flavor-resource."""
    return snapshot.memo(("kueue", "running usage"), lambda: _usage(snapshot))


def _usage(snapshot: Snapshot) -> dict[str, dict[str, int]]:
    running = snapshot.running
    rows = running.rows()
    if not rows.size:
        return {}
    pairs = np.stack([running.label_set[rows], running.namespace[rows]], axis=1)
    uniq, inverse = np.unique(pairs, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    names = [
        kueue_queue(running.label_sets[int(ls)], running.namespace_names.value(int(ns)))
        for ls, ns in uniq.tolist()
    ]
    out: dict[str, dict[str, int]] = {}
    for i, local in enumerate(names):
        queue = snapshot.queues.get(local) if local is not None else None
        cq = snapshot.queues.get(queue.parent) if queue is not None and queue.parent else None
        if local is None or cq is None or cq.kueue is None:
            continue
        mine = rows[inverse == i]
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
