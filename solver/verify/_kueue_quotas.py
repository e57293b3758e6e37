"""Kueue ClusterQueue quotas, re-derived from the ClusterQueue, Cohort and LocalQueue specs
and the pods, without the feature code.

A pod's LocalQueue is its label `kueue.x-k8s.io/queue-name` in its namespace; its
ClusterQueue is the LocalQueue's; the flavor it uses of a resource group is the first
flavor of the group (in the ClusterQueue's order) whose `nodeLabels` its node carries.

* every placed pod's node is a node of some flavor of each resource group covering a
  resource it requests, and a job's placed pods use one flavor per resource group and
  pod set (Kueue admits a pod set into one flavor);
* after the Decision (running pods less victims, plus placed pods), at every ClusterQueue
  or cohort on the path of a ClusterQueue that received pods, on each flavor-resource they
  use — with `SQ` the subtree quota (own nominal + each child's SQ less its part kept by
  its lending limit) and `U` the usage (a ClusterQueue's own; a cohort's, each child's
  past its kept part):
  - a node without a parent: `U ≤ SQ`;
  - a node with a `borrowingLimit` B: `U ≤ SQ + B`;
  a breach that the running pods alone already had, and that the Decision does not
  grow, is not the Decision's.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from solver.arrays import IntArray
from solver.model import KUEUE_PODSET_LABEL, KUEUE_QUEUE_LABEL, KueueQueue, Node, Queue
from solver.snapshot import Lineage, NodeTable, Snapshot
from solver.verify._context import VerifyContext

__all__ = ["kueue_quotas"]

Usage = dict[str, dict[str, int]]  # node (ClusterQueue or cohort) -> fr -> amount


def _cluster_queue(queues: dict[str, Queue], labels: dict[str, str], namespace: str) -> str | None:
    local = labels.get(KUEUE_QUEUE_LABEL, "").strip()
    lq = queues.get(f"{namespace}/{local}") if local else None
    if lq is None or lq.kueue is None or lq.kueue.kind != "LocalQueue" or lq.parent is None:
        return None
    cq = queues.get(lq.parent)
    return lq.parent if cq is not None and cq.kueue is not None else None


def _uses(
    spec: KueueQueue, node: Node, requests: dict[str, int], assigned: dict[str, str] | None = None
) -> tuple[dict[str, int], str]:
    """What a pod on `node` uses per flavor-resource, and a problem ("" none): in the flavor
    the Decision admitted its pod set with (`assigned`, resource -> flavor), which its node
    must carry the labels of; else the group's first flavor whose labels the node carries."""
    out: dict[str, int] = {}
    for g, group in enumerate(spec.groups):
        asked = [r for r in group.covered if r == "pods" or requests.get(r, 0) > 0]
        if not asked:
            continue
        on_node = [
            f for f in group.flavors
            if all(node.labels.get(k) == v for k, v in f.node_labels.items())
        ]  # fmt: skip
        wanted = (assigned or {}).get(asked[0])
        flavor = next((f for f in on_node if f.name == wanted), None) if wanted else None
        if wanted and flavor is None:
            return out, f"node {node.name} lacks the nodeLabels of its flavor {wanted}"
        flavor = flavor or (on_node[0] if on_node else None)
        if flavor is None:
            return out, f"node {node.name} is of no flavor of resource group {g}"
        for r in asked:
            key = f"{flavor.name}/{r}"
            out[key] = out.get(key, 0) + (1 if r == "pods" else requests[r])
    return out, ""


def _subtree(queues: dict[str, Queue]) -> tuple[dict[str, dict[str, int]], dict[str, list[str]]]:
    children: dict[str, list[str]] = defaultdict(list)
    for name, q in queues.items():
        if q.kueue is not None and q.kueue.kind != "LocalQueue" and q.parent in queues:
            children[q.parent].append(name)
    sq: dict[str, dict[str, int]] = {}

    def walk(name: str) -> dict[str, int]:
        spec = queues[name].kueue
        assert spec is not None
        mine = {fr: quota.nominal for fr, quota in spec.quotas().items()}
        for child in children[name]:
            for fr, v in walk(child).items():
                mine[fr] = mine.get(fr, 0) + v - _kept(queues, child, fr, v)
        sq[name] = mine
        return mine

    for name, q in queues.items():
        if q.kueue is not None and q.kueue.kind != "LocalQueue" and q.parent not in queues:
            walk(name)
    return sq, children


def _kept(queues: dict[str, Queue], name: str, fr: str, subtree: int) -> int:
    spec = queues[name].kueue
    quota = spec.quotas().get(fr) if spec is not None else None
    if quota is None or quota.lending_limit is None:
        return 0
    return max(0, subtree - quota.lending_limit)


def _rolled(
    queues: dict[str, Queue], sq: dict[str, dict[str, int]], children: dict[str, list[str]],
    own: Usage,
) -> Usage:  # fmt: skip
    """Usage at every node: a ClusterQueue's own, a cohort's from its children."""
    out: Usage = {}

    def walk(name: str) -> dict[str, int]:
        mine = dict(own.get(name, {}))
        for child in children[name]:
            for fr, v in walk(child).items():
                kept = _kept(queues, child, fr, sq[child].get(fr, 0))
                mine[fr] = mine.get(fr, 0) + max(0, v - kept)
        out[name] = mine
        return mine

    for name in sq:
        if queues[name].parent not in queues:
            walk(name)
    return out


def _raised(
    queues: dict[str, Queue], sq: dict[str, dict[str, int]], u0: Usage, placed: Usage
) -> Usage:
    """The usage at every node after `placed` (per ClusterQueue) is added to `u0`: each
    node's growth reaches its parent past the part its lending limit keeps; a node not
    left out is as in `u0`."""
    u1: Usage = {}
    for cq in sorted(placed):
        for fr, more in sorted(placed[cq].items()):
            name: str | None = cq
            while name is not None and name in sq and more:
                mine = u1.setdefault(name, dict(u0.get(name, {})))
                old = mine.get(fr, 0)
                mine[fr] = old + more
                kept = _kept(queues, name, fr, sq[name].get(fr, 0))
                more = max(0, old + more - kept) - max(0, old - kept)
                parent = queues[name].parent
                name = parent if parent in sq else None
    return u1


def kueue_quotas(ctx: VerifyContext) -> list[str]:
    queues = dict(ctx.snapshot.queues)
    if not any(q.kueue is not None for q in queues.values()):
        return []
    problems: list[str] = []
    admitted = {(a.podgroup, a.pod_set): dict(a.flavors) for a in ctx.decision.flavor_assignments}
    placed: Usage = defaultdict(lambda: defaultdict(int))
    flavors_of: dict[tuple[str, str], set[str]] = defaultdict(set)
    for node_name, pods in ctx.new_on.items():
        node = ctx.node(node_name)
        for pod in pods:
            cq = _cluster_queue(queues, pod.labels, pod.namespace)
            if cq is None:
                continue
            spec = queues[cq].kueue
            assert spec is not None
            podset = pod.labels.get(KUEUE_PODSET_LABEL, "main")
            use, problem = _uses(spec, node, pod.requests, admitted.get((pod.gang, podset)))
            if problem:
                problems.append(f"{pod.key}: ClusterQueue {cq}: {problem}")
            for fr, v in use.items():
                placed[cq][fr] += v
            for fr in use:
                flavors_of[(f"{pod.gang}/{podset}", fr.split("/", 1)[1])].add(fr.split("/")[0])
    for (job, resource), flavors in sorted(flavors_of.items()):
        if len(flavors) > 1:
            problems.append(
                f"job {job}: {resource} placed in flavors {', '.join(sorted(flavors))}; Kueue "
                "admits a pod set into one flavor"
            )
    if not placed:
        return problems
    sq, children = ctx.snapshot.memo(("verify", "kueue subtree"), lambda: _subtree(queues))
    if ctx.evicted:
        u0 = _rolled(queues, sq, children, _running(ctx, queues))
    else:
        u0 = ctx.snapshot.memo(
            ("verify", "kueue rolled"), lambda: _rolled(queues, sq, children, _running(ctx, queues))
        )
    u1 = _raised(queues, sq, u0, placed)
    checked: set[tuple[str, str]] = set()
    for cq in sorted(placed):
        name: str | None = cq
        while name is not None and name in sq:
            q = queues[name]
            spec = q.kueue
            assert spec is not None
            has_parent = q.parent in queues
            for fr in sorted(placed[cq]):
                if (name, fr) in checked:
                    continue
                checked.add((name, fr))
                quota = spec.quotas().get(fr)
                cap = None
                if not has_parent:
                    cap = sq[name].get(fr, 0)
                elif quota is not None and quota.borrowing_limit is not None:
                    cap = sq[name].get(fr, 0) + quota.borrowing_limit
                then = u0.get(name, {}).get(fr, 0)
                now = u1[name].get(fr, 0) if name in u1 else then
                if cap is not None and now > cap and now > then:
                    what = "subtree quota" if not has_parent else "subtree quota + borrowingLimit"
                    problems.append(f"{spec.kind} {name}: {fr} used {now} > {what} {cap}")
            name = q.parent if has_parent else None
    return problems


def _running(ctx: VerifyContext, queues: dict[str, Queue]) -> Usage:
    """Per ClusterQueue, what its running pods (less the Decision's victims) use; kept by
    deltas (added rows counted, retired ones taken away) unless the queues or nodes moved."""
    snapshot = ctx.snapshot
    kueue = {n: q for n, q in queues.items() if q.kueue is not None}

    def build(snap: Snapshot) -> tuple[dict[str, Queue], NodeTable, Usage]:
        return kueue, snap.nodes, _held(snap, queues, snap.running.rows())

    def update(
        before: tuple[dict[str, Queue], NodeTable, Usage], lineage: Lineage
    ) -> tuple[dict[str, Queue], NodeTable, Usage]:
        if before[0] != kueue or before[1] is not snapshot.nodes:
            return build(snapshot)
        out = {q: dict(u) for q, u in before[2].items()}
        _add(out, _held(snapshot, queues, lineage.added), 1)
        _add(out, _held(snapshot, queues, lineage.retired), -1)
        return kueue, snapshot.nodes, out

    base = snapshot.derive(("verify", "kueue held"), build, update)[2]
    if not ctx.evicted:
        return base
    out = {q: dict(u) for q, u in base.items()}
    rows = snapshot.running.find_many(sorted(ctx.evicted))
    _add(out, _held(snapshot, queues, rows[rows >= 0]), -1)
    return out


def _add(into: Usage, more: Usage, sign: int) -> None:
    for q, use in more.items():
        mine = into.setdefault(q, {})
        for fr, v in use.items():
            mine[fr] = mine.get(fr, 0) + sign * v


Flavors = tuple[tuple[str, tuple[tuple[str, str], ...]], ...]  # (name, node labels) in order


def _flavor_table(nodes: NodeTable, flavors: Flavors) -> IntArray:
    """[N] the index of the first of `flavors` whose labels node n carries; -1 none."""

    def compute() -> IntArray:
        return np.array(
            [
                next(
                    (
                        i
                        for i, (_, labels) in enumerate(flavors)
                        if all(n.labels.get(a) == b for a, b in labels)
                    ),
                    -1,
                )
                for n in nodes.nodes
            ],
            dtype=np.int64,
        )

    return nodes.memo(("verify", "kueue flavors", flavors), compute)


def _held(snapshot: Snapshot, queues: dict[str, Queue], rows: IntArray) -> Usage:
    """What `rows` of the running pods use per ClusterQueue: rows grouped by (labels,
    namespace) -> ClusterQueue in one sort, then per resource group each row's flavor from
    its node (a table per distinct flavor list and node generation), summed."""
    out: Usage = defaultdict(lambda: defaultdict(int))
    running = snapshot.running
    if not rows.size:
        return {}
    key = running.label_set[rows].astype(np.int64) * (1 << 32) + running.namespace[rows]
    uniq, inverse = np.unique(key, return_inverse=True)
    owners = sorted({
        c for k in uniq.tolist()
        if (c := _cluster_queue(queues, dict(running.label_sets[int(k >> 32)]),
                                running.namespace_names.value(int(k & 0xFFFFFFFF))))
    })  # fmt: skip
    index = {c: i for i, c in enumerate(owners)}
    owner = np.array([
        index.get(_cluster_queue(queues, dict(running.label_sets[int(k >> 32)]),
                                 running.namespace_names.value(int(k & 0xFFFFFFFF))) or "", -1)
        for k in uniq.tolist()
    ], dtype=np.int64)  # fmt: skip
    cq_of_row = owner[inverse.reshape(-1)]
    order = np.argsort(cq_of_row, kind="stable")
    bounds = np.searchsorted(cq_of_row[order], np.arange(len(owners) + 1))
    nodes = snapshot.nodes
    for at, cq in enumerate(owners):
        spec = queues[cq].kueue
        assert spec is not None
        mine = rows[order[bounds[at] : bounds[at + 1]]]
        for group in spec.groups:
            flavors = tuple((f.name, tuple(sorted(f.node_labels.items()))) for f in group.flavors)
            flavor = _flavor_table(nodes, flavors)[running.node[mine].astype(np.int64)]
            names = [r for r in group.covered if r != "pods" and r in running.resources]
            asked = running.requests(tuple(names), mine)
            for i, (fname, _) in enumerate(flavors):
                on = flavor == i
                if not on.any():
                    continue
                for j, r in enumerate(names):
                    if (total := int(asked[on, j].sum())) > 0:
                        out[cq][f"{fname}/{r}"] += total
                if "pods" in group.covered:
                    out[cq][f"{fname}/pods"] += int(on.sum())
    return {k: dict(v) for k, v in out.items()}
