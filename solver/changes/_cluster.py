"""Changes to the cluster: a queue's quota, new nodes."""

from __future__ import annotations

from collections.abc import Callable

from solver.changes._base import HOST, MAX_NODES, Change, Runs, Sized, _smallest
from solver.decision import Certificate
from solver.features.topology.hypernode.tree import hypernode_tree_of
from solver.model import (
    GPU_MILLI,
    GPU_RESOURCE,
    KAI_RESOURCES,
    KAI_UNLIMITED,
    Node,
    Queue,
)
from solver.plan import Catalog, NodeType
from solver.quantity import CPU, format_quantity
from solver.snapshot import Delta, Snapshot

KUBELET_MAX_PODS = 110  # the kubelet's default maxPods


def _quota(snapshot: Snapshot, gang: str, cert: Certificate | None, runs: Runs) -> Sized | None:
    if cert is None or cert.kind != "quota" or not cert.unit:
        return None
    queue, _, row = cert.constraint.removeprefix("queue ").partition(" ")
    dim = cert.unit
    q = snapshot.queues.get(queue)
    if q is not None and q.kai is not None:
        return _kai_quota(q, dim, "quota" if row else "limit", cert, runs)
    if q is None or dim not in q.capability:
        return None
    delta = cert.needed - cert.offered

    def raised(by: int) -> Delta:
        capability = {**q.capability, dim: q.capability[dim] + by}
        return Delta(upsert_queues=(q.model_copy(update={"capability": capability}),))

    if delta <= 0 or not runs(raised(delta)) or runs(raised(delta - 1)):
        return None
    shown = dim.removeprefix("card:")
    change = Change(
        "quota",
        f"+{format_quantity(dim, delta)} {shown} capability on queue {queue}",
        delta,
        queue,
        dim,
    )
    return change, raised(delta)


def _kai_quota(q: Queue, dim: str, field: str, cert: Certificate, runs: Runs) -> Sized | None:
    """A KAI Queue: the smallest raise of its limit (or, for a non-preemptible job, its
    quota) on the resource short; a quota dimension in milli-GPUs raises GPUs by 1/1000."""
    assert q.kai is not None
    resource, per = (GPU_RESOURCE, 1000) if dim == GPU_MILLI else (dim, 1)
    values: dict[str, float] = getattr(q.kai, field)
    now = values.get(resource, 0.0)
    delta = cert.needed - cert.offered
    if resource not in KAI_RESOURCES or now == KAI_UNLIMITED or delta <= 0:
        return None

    def raised(by: int) -> Delta:
        kai = q.kai.model_copy(update={field: {**values, resource: now + by / per}})  # type: ignore[union-attr]
        return Delta(upsert_queues=(q.model_copy(update={"kai": kai}),))

    if not runs(raised(delta)) or runs(raised(delta - 1)):
        return None
    text = f"+{format_quantity(dim, delta)} {resource} {field} on KAI queue {q.name}"
    return Change("quota", text, delta, q.name, dim), raised(delta)


def _enqueue(snapshot: Snapshot, gang: str, cert: Certificate | None, runs: Runs) -> Sized | None:
    """A gang refused at enqueue: the smallest raise of one capability on one queue of its
    path (leaf first), else on every queue of the path that limits it, that lets it in and
    run; searched up to what the gang requests of it."""
    g = snapshot.gangs.get(gang)
    if cert is None or cert.kind != "blocked" or cert.constraint != "enqueue" or g is None:
        return None
    asked = dict(g.min_resources) or _requests(snapshot, gang)
    path: list[str] = []
    name = g.queue
    while name and name in snapshot.queues and name not in path and len(path) < 64:
        path.append(name)
        name = snapshot.queues[name].parent
    for dim in sorted(d for d in asked if asked[d] > 0):
        limiting = [q for q in path if dim in snapshot.queues[q].capability]
        choices = [[q] for q in limiting] + ([limiting] if len(limiting) > 1 else [])
        for queues in choices:
            found = _raise(snapshot, queues, dim, asked[dim], runs)
            if found is not None:
                return found
    return None


def _raise(snapshot: Snapshot, queues: list[str], dim: str, top: int, runs: Runs) -> Sized | None:
    """The smallest raise of `dim` on all of `queues` (at most `top`) after which it runs."""

    def raised(by: int) -> Delta:
        return Delta(
            upsert_queues=tuple(
                q.model_copy(update={"capability": {**q.capability, dim: q.capability[dim] + by}})
                for q in (snapshot.queues[name] for name in queues)
            )
        )

    if not runs(raised(top)):
        return None
    by = _smallest(lambda x: runs(raised(x)), top)
    if by is None:
        return None
    where = f"queue {queues[0]}" if len(queues) == 1 else f"queues {', '.join(queues)}"
    text = f"+{format_quantity(dim, by)} {dim} capability on {where} (to enter it)"
    return Change("quota", text, by, ",".join(queues), dim), raised(by)


def _requests(snapshot: Snapshot, gang: str) -> dict[str, int]:
    """What the gang's pending pods request together."""
    total: dict[str, int] = {}
    for pod in snapshot.pending.values():
        if pod.gang == gang:
            for resource, value in pod.requests.items():
                total[resource] = total.get(resource, 0) + value
    return total


def _nodes(snapshot: Snapshot, gang: str, cert: Certificate | None, runs: Runs) -> Sized | None:
    if cert is None:
        return None
    like = _like(snapshot, cert)
    likes = [like] if like is not None else _wheres(snapshot, gang, cert)
    # more nodes than pending pods cannot be what it takes: each new node holds one at least
    group = _group(snapshot, gang)
    pending = sum(1 for p in snapshot.pending.values() if p.gang in group)
    top = max(1, min(MAX_NODES, pending))
    best: tuple[int, Node] | None = None

    def fits(template: Node) -> Callable[[int], bool]:
        return lambda k: runs(_copies(template, k))

    for template in likes:
        most = top if best is None else best[0] - 1  # only fewer can do better
        if most < 1:
            break
        k = _smallest(fits(template), most, _fewest_nodes(cert, template))
        if k is not None:
            best = (k, template)
    if best is None:
        return None
    k, chosen = best
    where = f" in {cert.places[0][0]}" if cert.kind == "domain" else ""
    text = f"+{k} node(s) like {chosen.name}{where}, empty"
    return Change("nodes", text, k, chosen.name), _copies(chosen, k)


def _copies(like: Node, k: int) -> Delta:
    return Delta(upsert_nodes=tuple(_clone(like, f"{like.name}-new-{i}") for i in range(k)))


MAX_WHERES = 4
"""The most places a `nodes` change for a `rules` certificate tries a node of."""


def _wheres(snapshot: Snapshot, gang: str, cert: Certificate) -> list[Node]:
    """For a `rules` certificate (the pods' own spread or affinity terms), where a new node
    stands matters, not only its room: the roomiest node of each place (the values of the
    terms' topology keys and the other where-labels), the places with the least free cpu
    first (a spread is short where it is smallest), at most `MAX_WHERES`."""
    if cert.kind != "rules":
        return []
    terms: set[str] = set()
    for p in snapshot.pending.values():
        if p.gang == gang:
            terms.update(c.topology_key for c in p.spread)
            if p.inter_pod is not None:
                t = p.inter_pod
                terms.update(x.topology_key for x in (*t.affinity, *t.anti_affinity))
    keys = [k for k in snapshot.where_labels(sorted(terms)) if k != HOST]
    free = (snapshot.nodes.capacity((CPU,)) - snapshot.used((CPU,)))[:, 0]
    places: dict[tuple[str, ...], list[int]] = {}
    for i, n in enumerate(snapshot.nodes.nodes):
        if not n.unschedulable:
            places.setdefault(tuple(n.labels.get(k, "") for k in keys), []).append(i)
    ranked = sorted(places.values(), key=lambda rows: (int(free[rows].sum()), rows[0]))
    nodes = snapshot.nodes.nodes
    return [max((nodes[i] for i in rows), key=lambda n: sorted(n.allocatable.items()))
            for rows in ranked[:MAX_WHERES]]  # fmt: skip


def _catalog_nodes(
    snapshot: Snapshot, gang: str, cert: Certificate | None, runs: Runs, catalog: Catalog
) -> Sized | None:
    """The cheapest nodes of a catalogue type that let the gang run (`gangplan plan
    --catalog`): per type the fewest that run (in whole blocks of `nodesPerBlock`, at most
    `maxCount`), the cheapest of those. A new node has its type's allocatable and labels,
    and where it stands (the hostname, zone, topology labels) as the node `nodes` copies."""
    like = _like(snapshot, cert)
    if like is None or cert is None:
        return None
    where = set(snapshot.where_labels())
    place = {k: v for k, v in like.labels.items() if k in where}
    pending = sum(1 for p in snapshot.pending.values() if p.gang in _group(snapshot, gang))
    best: tuple[float, int, str, Delta] | None = None
    for nt in catalog.types:
        step = nt.nodes_per_block or 1
        most = min(MAX_NODES, nt.max_count if nt.max_count is not None else MAX_NODES)
        top = min(most // step, -(-max(1, pending) // step))
        if top < 1:
            continue

        def more(blocks: int, nt: NodeType = nt, step: int = step) -> Delta:
            return Delta(upsert_nodes=tuple(
                _of_type(nt, f"{nt.name}-new-{i}", place) for i in range(blocks * step)
            ))  # fmt: skip

        blocks = _smallest(lambda b: runs(more(b)), top)
        if blocks is None:
            continue
        k = blocks * step
        found = (k * nt.cost, k, nt.name, more(blocks))
        if best is None or found[:3] < best[:3]:
            best = found
    if best is None:
        return None
    cost, k, name, delta = best
    at = f" in {cert.places[0][0]}" if cert.kind == "domain" else ""
    return Change("nodes", f"+{k} {name} node(s){at} (cost {cost:g})", k, name), delta


def _of_type(nt: NodeType, name: str, place: dict[str, str]) -> Node:
    """An empty node of a catalogue type."""
    allocatable = nt.cluster_units()
    allocatable.setdefault("pods", KUBELET_MAX_PODS)  # a catalogue may leave it out
    labels = {**place, **dict(nt.labels), **({HOST: name} if HOST in place else {})}
    return Node(name=name, labels=labels, allocatable=allocatable)


def _like(snapshot: Snapshot, cert: Certificate | None) -> Node | None:
    """The node a nodes change copies: the best domain's roomiest, or the roomiest
    eligible one (when none has room left, the largest node: the check says whether a copy
    of it serves); None for a certificate more nodes cannot answer."""
    if cert is None or cert.kind not in ("capacity", "pods", "domain", "anti-affinity", "devices"):
        return None
    if not cert.places and cert.kind in ("capacity", "pods"):
        open_ = [n for n in snapshot.nodes.nodes if not n.unschedulable]
        return max(open_, key=lambda n: n.allocatable.get(cert.unit, 0), default=None)  # first
    if not cert.places:
        return None
    if cert.kind == "domain":
        return _node_in(snapshot, cert.places[0][0])
    return snapshot.nodes.by_name.get(cert.places[0][0])


def _fewest_nodes(cert: Certificate, like: Node) -> int:
    """A lower bound on the nodes to add: the certificate's resource short, over what one
    empty copy offers of it (each copy is eligible where `like` is, in its domain)."""
    per = like.allocatable.get(cert.unit, 0) if cert.unit else 0
    short = cert.needed - cert.offered
    if cert.kind == "anti-affinity":  # each new node is one more domain of one pod
        return max(1, short)
    return max(1, -(-short // per)) if per > 0 and short > 0 else 1


def _group(snapshot: Snapshot, gang: str) -> set[str]:
    g = snapshot.gangs.get(gang)
    return {gang, *(g.groups if g is not None else ())}


def _node_in(snapshot: Snapshot, domain: str) -> Node | None:
    """The node of the named domain with the most allocatable. A domain is named as its
    dialect names it: a HyperNode (Volcano), `key:value;key:value` (Godel, KAI, the Workload
    API), values joined by `/` from the top level (Kueue), or one label value (Koordinator)."""
    topology = snapshot.topology
    hypernodes = topology.hypernodes if topology is not None else ()
    if any(h.name == domain for h in hypernodes):
        tree = hypernode_tree_of(snapshot.nodes, hypernodes)
        covers = tree.covers[tree.index(domain)]
        inside = [n for n, ok in zip(snapshot.nodes.nodes, covers.tolist(), strict=True) if ok]
    else:
        inside = [n for n in snapshot.nodes.nodes if _names(n, domain)]
    return max(inside, key=lambda n: sorted(n.allocatable.items()), default=None)


def _names(node: Node, domain: str) -> bool:
    pairs = [part.partition(":") for part in domain.split(";") if part]
    if pairs and all(sep for _, sep, _ in pairs):  # key:value;...
        return all(node.labels.get(key) == value for key, _, value in pairs)
    values = set(node.labels.values())
    return all(part in values for part in domain.split("/"))


def _clone(node: Node, name: str) -> Node:
    labels = {**node.labels, **({HOST: name} if HOST in node.labels else {})}
    return node.model_copy(update={"name": name, "labels": labels})
