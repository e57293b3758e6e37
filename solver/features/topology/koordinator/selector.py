"""Koordinator's single-pod scoring by `network-topology-selector` (`reference/koordinator.md`
§3.5; `Coscheduling.PreScore`/`Score`/`NormalizeScore`, `sortNodesByTopology` in
`network_topology_workflow.go`).

**Which pods**: every pending pod carrying `scheduling.koordinator.sh/network-topology-selector`
that is scheduled pod by pod — upstream scores every pod with the annotation, but a pod of a
topology-aware gang group is planned by `FindOneNode` (the gather), which leaves one node to
score, so here such pods are left to the gather. Needs the `network-topology` plugin and a
network tree (without one there are no domains to compare and nothing is scored).

**Candidates**: the nodes where one pod of the type passes the filters compiled before this
feature (the predicates, the topology's own) and fits the free room at the start of the cycle
— Koordinator scores the nodes that passed Filter. Upstream gives every candidate one offer
slot (its FIXME: "every node only accommodates one pod") and counts, per domain, the
candidates (OfferSlot) and the running pods with the same selector value (ExistingPodNum).

**Order** of the candidates (one sort key; criteria in order):

1. in the network tree first (upstream dereferences a nil tree node for a candidate outside
   the tree; here such nodes come last);
2. ExistingPodNum along the chain from the node upwards (the node, its block, its spine, …),
   more first — the first level that differs decides;
3. OfferSlot along the same chain, fewer first (bin-packing: the node whose block, then
   spine, has the fewest candidates);
4. node name, ascending (the stable tie-break).

**Score** = the candidate's position p in that order (0-based), normalised as
`DefaultNormalizeScore(100, reverse=true)`: `100 − 100·p // p_max` (`p_max` the last
position; a single candidate gets 100), times the plugin's weight 1 (Koordinator's default
`Coscheduling` score weight). Non-candidates score 0 (they cannot take the pod anyway).

The score is static: it is computed once per call from the snapshot, so pods placed earlier
in the same call neither add to ExistingPodNum nor remove candidates, as they would between
two upstream scheduling cycles.
"""

from __future__ import annotations

import numpy as np

from solver.config import Plugin
from solver.features._base import CompileContext, combine_filters
from solver.features.topology.koordinator.spec import ANNOTATION_SELECTOR, peer_counts
from solver.features.topology.tree import TopologyTree
from solver.model import Pod
from solver.problem import BoolArray, FloatArray, IntArray

__all__ = ["PLUGIN", "compile_selector_scores", "selector_of", "selector_scores"]

PLUGIN = Plugin.NETWORK_TOPOLOGY
MAX_NODE_SCORE = 100


def selector_of(pod: Pod) -> str:
    """The pod's `network-topology-selector` ("" = none): pods of one type agree on it."""
    return pod.annotations.get(ANNOTATION_SELECTOR, "")


def selector_scores(tree: TopologyTree, candidate: BoolArray, peers: IntArray) -> FloatArray:
    """Normalised score per node [N] (module docstring): `candidate` [N] the nodes scored,
    `peers` [N] the running pods per node sharing the pod's selector value."""
    num_nodes = candidate.size
    out = np.zeros(num_nodes, dtype=np.float64)
    cands = np.flatnonzero(candidate)
    if cands.size == 0:
        return out
    node_layer = tree.node_domain.shape[0] - 1
    in_tree = tree.node_domain[node_layer] >= 0
    peers_chain: list[IntArray] = []  # per layer from the node upwards
    slots_chain: list[IntArray] = []
    for layer in range(node_layer, -1, -1):
        dom = tree.node_domain[layer]
        size = len(tree.domains[layer])
        counted = in_tree & candidate
        slots = np.bincount(dom[counted], minlength=size)
        weighted = np.bincount(dom[in_tree], weights=peers[in_tree], minlength=size)
        mine = dom[cands]
        inside = mine >= 0
        safe = np.maximum(mine, 0)
        slots_chain.append(np.where(inside, slots[safe], 0).astype(np.int64))
        peers_chain.append(np.where(inside, weighted[safe], 0).astype(np.int64))
    # np.lexsort: the last key is the first criterion (numbered in the module docstring)
    keys: list[IntArray] = [cands]  # 4. name (node index order is name order)
    keys.extend(reversed(slots_chain))  # 3. OfferSlot ↑, the node's own level first
    keys.extend(-p for p in reversed(peers_chain))  # 2. ExistingPodNum ↓, the node first
    keys.append((~in_tree[cands]).astype(np.int64))  # 1. in the tree first
    order = cands[np.lexsort(keys)]
    last = order.size - 1
    if last == 0:
        out[order] = MAX_NODE_SCORE
        return out
    position = np.arange(order.size, dtype=np.int64)
    out[order] = MAX_NODE_SCORE - (MAX_NODE_SCORE * position) // last
    return out


def compile_selector_scores(ctx: CompileContext, tree: TopologyTree, gathered: set[int]) -> None:
    """Add the selector score of every pod type with a selector outside the `gathered` units."""
    types = [
        t
        for t in range(ctx.num_types)
        if selector_of(ctx.first_pod(t)) and int(ctx.gangs.unit[ctx.type_gang[t]]) not in gathered
    ]
    if not types:
        return
    num_nodes = len(ctx.nodes)
    free = ctx.memo(
        ("topology", "free"),
        lambda: ctx.nodes.capacity(ctx.resources) - ctx.snapshot.used(ctx.resources),
    )
    # types with the same selector, filters and demand share one score row
    rows: dict[tuple[str, tuple[tuple[int, int], ...], tuple[int, ...]], list[int]] = {}
    for t in types:
        filters = tuple((id(mask), code) for mask, code in ctx.filters[t])
        key = (selector_of(ctx.first_pod(t)), filters, tuple(ctx.type_demand[t].tolist()))
        rows.setdefault(key, []).append(t)
    peers_of: dict[str, IntArray] = {}
    for (selector, _, _), members in rows.items():
        t = members[0]
        demand = ctx.type_demand[t]
        positive = demand > 0
        fits = np.all(free[:, positive] >= demand[positive], axis=1)
        candidate = (combine_filters(ctx.filters[t], num_nodes) == 0) & fits
        if selector not in peers_of:
            peers_of[selector] = peer_counts(ctx.snapshot, selector)
        ctx.score(members, selector_scores(tree, candidate, peers_of[selector]), PLUGIN)
