"""Koordinator's offer-slot gather, for the greedy engine and the preemption dry run.

Koordinator offer-slot gather (`reference/koordinator.md` §3.4, `network_topology_solver.go`)
--------------------------------------------------------------------------------------------
For a gang group with a `network-topology-spec`, all pending pods of the group (in
`Problem.type_rank` order: index, then name) are placed in one step or not at all:

1. **Offer slots per node**: the longest prefix of the ordered pods that fits on the node
   one after another (eligibility and every requested resource, cumulatively).
2. **Aggregate bottom-up** through the tree; `podCountMultiple` floors each node's slots,
   then each domain's sum of (floored) children, layer by layer.
3. **Candidates**: start at the domains of the deepest MustGather layer (the root without
   one); walk down keeping domains whose slots hold every pending pod; the last non-empty
   level is the candidate set (the lowest layer that can hold the whole group).
4. **Candidate order**, first fully distributable wins:
   1. existing peers (`network-topology-selector`) along the ancestor chain, more first;
   2. offer slots along the ancestor chain, fewer first (bin-pack: the candidate, then its
      parent, grand-parent, ... decide);
   3. score, higher first: the sum of `node_score` over the domain's nodes — in the
      preemption dry run `−cost` of each node (`PlanNodes`: `nodeScore = −cost`), so the
      cheaper domain wins only among domains equal on 1 and 2; 0 outside preemption;
   4. name, ascending.
5. **Distribution** inside the winner, recursively: a domain takes `min(slots, remaining)`
   floored to its layer's multiple; its children are filled in the order (1. peers ↓,
   2. slots ↓ — the roomiest child first —, 3. score ↓, 4. name ↑). Success iff the
   distributed total reaches the desired count.
6. Pods are laid on the ordered node list in rank order, so consecutive ranks share the
   smallest domain.

Failure message (verbatim format): `no candidate topology nodes can accommodate job,
desiredOfferSlot: <n>, <reasons>, <FitError>[; podCountMultiple constraints: L=m, ...]`,
reasons = `topology topologyNode <Layer>/<name>: <slots>` for every MustGather-layer
domain (the root `ClusterTopologyLayer/` without one), sorted and joined by `;`.

Everything is vectorised per layer / per circle with numpy; the only Python loops are over
the domains actually visited during distribution.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import numpy as np

from solver.features.topology.koordinator.block import GatherBlock
from solver.model import CLUSTER_LAYER
from solver.problem import IntArray, Problem, format_fit_error

__all__ = ["GatherOutcome", "gather_unit", "offer_slots", "unit_sequence"]


# ----------------------------------------------------------------------------- shared


@dataclass
class _Tree:
    """Children of every domain as CSR slices (per layer), computed once per block."""

    order: list[IntArray]  # per layer l (for l+1's domains): child indices grouped by parent
    start: list[IntArray]  # per layer l: start[d]..start[d+1] slice of order[l]


_TREES: weakref.WeakKeyDictionary[GatherBlock, _Tree] = weakref.WeakKeyDictionary()


def _tree(block: GatherBlock) -> _Tree:
    cached = _TREES.get(block)
    if cached is not None:
        return cached
    order: list[IntArray] = []
    start: list[IntArray] = []
    for layer in range(block.num_layers - 1):
        parent = block.parent[layer + 1]
        inside = np.flatnonzero(parent >= 0)
        by_parent = inside[np.argsort(parent[inside], kind="stable")]
        counts = np.bincount(parent[inside], minlength=len(block.domains[layer]))
        order.append(by_parent)
        start.append(np.concatenate(([0], np.cumsum(counts))).astype(np.int64))
    tree = _Tree(order=order, start=start)
    _TREES[block] = tree
    return tree


def unit_sequence(problem: Problem, gangs: list[int]) -> tuple[IntArray, IntArray]:
    """The unit's pending pods in rank order: (type, position inside type_pods[type])."""
    types = [t for g in gangs for t in problem.gang_types(g)]
    if not types:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    sizes = [len(problem.type_pods[t]) for t in types]
    seq_t = np.repeat(np.array(types, dtype=np.int64), sizes)
    seq_j = np.concatenate([np.arange(n, dtype=np.int64) for n in sizes])
    if problem.type_rank:
        ranks = np.concatenate([problem.type_rank[t] for t in types])
        order = np.argsort(ranks, kind="stable")
        seq_t, seq_j = seq_t[order], seq_j[order]
    return seq_t, seq_j


def offer_slots(problem: Problem, seq_t: IntArray, free: IntArray) -> tuple[IntArray, IntArray]:
    """Per node, the longest prefix of the pod sequence that fits; and the cumulative demand.

    Returns (slots [N], cum [M, R]) where cum[k] is the demand of pods 0..k together.
    """
    m = len(seq_t)
    demand = problem.type_demand[seq_t]  # [M, R]
    types = np.unique(seq_t)
    if len(types) == 1:
        t = int(types[0])
        d = problem.type_demand[t]
        positive = d > 0
        if positive.any():
            slots = np.min(np.maximum(free[:, positive], 0) // d[positive], axis=1)
        else:
            slots = np.full(problem.num_nodes, m, dtype=np.int64)
        slots = np.minimum(slots, m)
        slots = np.where(problem.eligible[t], slots, 0).astype(np.int64)
        cum = np.cumsum(demand, axis=0)
        return slots, cum
    cum = np.cumsum(demand, axis=0)
    slots = np.full(problem.num_nodes, m, dtype=np.int64)
    for r in range(problem.type_demand.shape[1]):
        positions = np.flatnonzero(demand[:, r] > 0)
        if positions.size == 0:
            continue
        first_fail = np.searchsorted(cum[positions, r], free[:, r], side="right")
        stop = np.where(
            first_fail < positions.size, positions[np.minimum(first_fail, positions.size - 1)], m
        )
        slots = np.minimum(slots, stop)
    first_pos = np.array([int(np.argmax(seq_t == t)) for t in types], dtype=np.int64)
    blocked = np.where(problem.eligible[types], m, first_pos[:, None]).min(axis=0)
    return np.minimum(slots, blocked).astype(np.int64), cum


def _fit_error(
    problem: Problem, seq_t: IntArray, slots: IntArray, cum: IntArray, free: IntArray
) -> str:
    """Kubernetes FitError over nodes whose prefix stopped early (reason of the first misfit)."""
    m = len(seq_t)
    counts: dict[str, int] = {}
    stopped = np.flatnonzero(slots < m)
    if stopped.size:
        k = slots[stopped]
        t = seq_t[k]
        eligible = problem.eligible[t, stopped]
        codes, code_counts = np.unique(
            problem.ineligible_reason[t[~eligible], stopped[~eligible]], return_counts=True
        )
        for code, count in zip(codes.tolist(), code_counts.tolist(), strict=True):
            counts[problem.reason_texts[code]] = count
        fits_nodes, fits_k, fits_t = stopped[eligible], k[eligible], t[eligible]
        short = (cum[fits_k] > free[fits_nodes]) & (problem.type_demand[fits_t] > 0)
        for r, count in enumerate(short.sum(axis=0).tolist()):
            if count:
                counts[f"Insufficient {problem.resources[r]}"] = count
    return format_fit_error(problem.num_nodes, counts)


# ----------------------------------------------------------------------------- Koordinator


@dataclass
class GatherOutcome:
    """Node per pod (per type, type_pods order; -1 none) or the failure message."""

    pod_node: dict[int, IntArray] = field(default_factory=dict)
    message: str = ""
    candidate: str = ""  # `Layer/name` of the chosen domain
    seconds: float = 0.0


def _floor(values: IntArray, m: int) -> IntArray:
    return (values // m) * m if m > 1 else values


def gather_unit(
    problem: Problem,
    block: GatherBlock,
    u: int,
    gangs: list[int],
    free: IntArray,
    node_score: IntArray | None = None,
) -> GatherOutcome:
    """Koordinator's PlacePods for unit `u` (its active `gangs`) against `free` (not modified);
    `node_score` [N] is each node's score (the dry run's `−cost`; None: 0 everywhere)."""
    seq_t, seq_j = unit_sequence(problem, gangs)
    m = len(seq_t)
    if m == 0:
        return GatherOutcome()
    num_layers = block.num_layers
    node_layer = num_layers - 1
    mult = block.unit_pod_multiple[u]
    slots, cum = offer_slots(problem, seq_t, free)
    slots = np.where(block.node_domain[node_layer] >= 0, slots, 0)
    peers_node = block.unit_peers[u] if block.unit_peers else np.empty(0, dtype=np.int64)
    has_peers = peers_node.size > 0
    dom_slots: list[IntArray] = [np.empty(0, dtype=np.int64)] * num_layers
    dom_peers: list[IntArray] = [np.empty(0, dtype=np.int64)] * num_layers
    dom_score: list[IntArray] = [np.zeros(len(d), dtype=np.int64) for d in block.domains]
    dom_slots[node_layer] = _floor(slots, int(mult[node_layer]))
    if has_peers:
        dom_peers[node_layer] = peers_node
    if node_score is not None:
        dom_score[node_layer] = np.where(block.node_domain[node_layer] >= 0, node_score, 0)
    for layer in range(node_layer - 1, -1, -1):
        parent = block.parent[layer + 1]
        inside = parent >= 0
        size = len(block.domains[layer])
        summed = np.bincount(parent[inside], weights=dom_slots[layer + 1][inside], minlength=size)
        dom_slots[layer] = _floor(summed.astype(np.int64), int(mult[layer]))
        if has_peers:
            peers = np.bincount(
                parent[inside], weights=dom_peers[layer + 1][inside], minlength=size
            )
            dom_peers[layer] = peers.astype(np.int64)
        if node_score is not None:
            score = np.bincount(
                parent[inside], weights=dom_score[layer + 1][inside], minlength=size
            )
            dom_score[layer] = score.astype(np.int64)

    gather_layer = int(block.unit_gather_layer[u])
    start = max(gather_layer, 0)
    alive = dom_slots[start] >= m
    cand_layer, cands = start, np.flatnonzero(alive)
    for layer in range(start + 1, num_layers):
        parent = block.parent[layer]
        alive = (dom_slots[layer] >= m) & (parent >= 0) & alive[np.maximum(parent, 0)]
        if not alive.any():
            break
        cand_layer, cands = layer, np.flatnonzero(alive)

    if cands.size:
        # np.lexsort: the last key is the first criterion (docstring, step 4, bottom up)
        keys: list[IntArray] = [cands, -dom_score[cand_layer][cands]]
        chain = [cands]
        for layer in range(cand_layer, 0, -1):
            chain.append(block.parent[layer][chain[-1]])
        layers_up = list(range(cand_layer, -1, -1))
        keys.extend(
            dom_slots[lay][anc] for lay, anc in reversed(list(zip(layers_up, chain, strict=True)))
        )
        if has_peers:
            keys.extend(
                -dom_peers[lay][anc]
                for lay, anc in reversed(list(zip(layers_up, chain, strict=True)))
            )
        ordered = cands[np.lexsort(keys)]
        tree = _tree(block)
        for cand in ordered.tolist():
            nodes, takes = _distribute(
                block, tree, (dom_slots, dom_peers, dom_score), mult, cand_layer, cand, m
            )
            if int(takes.sum()) >= m:
                per_pod = np.repeat(nodes, takes)[:m]
                out = GatherOutcome(
                    candidate=f"{block.layers[cand_layer]}/{block.domains[cand_layer][cand]}"
                )
                for t in np.unique(seq_t).tolist():
                    mask = seq_t == t
                    row = np.full(len(problem.type_pods[t]), -1, dtype=np.int64)
                    row[seq_j[mask]] = per_pod[mask]
                    out.pod_node[t] = row
                misfit = _misfit(problem, seq_t, per_pod, free)
                if misfit:
                    return GatherOutcome(message=misfit)
                return out

    if gather_layer >= 0:
        names = block.domains[gather_layer]
        values = dom_slots[gather_layer].tolist()
        layer_name = block.layers[gather_layer]
        reasons = sorted(
            f"topology topologyNode {layer_name}/{n}: {v}"
            for n, v in zip(names, values, strict=True)
        )
    else:
        reasons = [f"topology topologyNode {CLUSTER_LAYER}/: {int(dom_slots[0][0])}"]
    fit_error = _fit_error(problem, seq_t, slots, cum, free)
    text = block.gather_multiple_text[u] if block.gather_multiple_text else ""
    message = (
        f"no candidate topology nodes can accommodate job, desiredOfferSlot: {m}, "
        f"{';'.join(reasons)}, {fit_error}{text}"
    )
    return GatherOutcome(message=message)


def _distribute(
    block: GatherBlock,
    tree: _Tree,
    metrics: tuple[list[IntArray], list[IntArray], list[IntArray]],
    mult: IntArray,
    layer: int,
    domain: int,
    want: int,
) -> tuple[IntArray, IntArray]:
    """`distributeOfferSlot`: (ordered node indices, pods per node) inside one domain;
    `metrics` = (slots, peers, score) per layer and domain."""
    dom_slots, dom_peers, dom_score = metrics
    node_layer = block.num_layers - 1
    has_peers = dom_peers[node_layer].size > 0
    node_parts: list[IntArray] = []
    take_parts: list[IntArray] = []

    def floor(value: int, lay: int) -> int:
        mul = int(mult[lay])
        return (value // mul) * mul if mul > 1 else value

    def visit(lay: int, d: int, remaining: int) -> int:
        top = floor(min(int(dom_slots[lay][d]), remaining), lay)
        if lay == node_layer:
            if top > 0:
                node_parts.append(np.array([d], dtype=np.int64))
                take_parts.append(np.array([top], dtype=np.int64))
            return top
        kids = tree.order[lay][tree.start[lay][d] : tree.start[lay][d + 1]]
        if kids.size == 0 or top <= 0:
            return 0
        child_slots = dom_slots[lay + 1][kids]
        # np.lexsort, last key first: peers ↓, slots ↓, score ↓, name ↑ (docstring, step 5)
        keys = [kids, -dom_score[lay + 1][kids], -child_slots]
        if has_peers:
            keys.append(-dom_peers[lay + 1][kids])
        kids = kids[np.lexsort(keys)]
        if lay + 1 == node_layer:
            s = dom_slots[node_layer][kids]
            before = np.cumsum(s) - s
            takes = np.minimum(s, np.maximum(top - before, 0))
            mul = int(mult[node_layer])
            if mul > 1:
                takes = (takes // mul) * mul
            chosen = takes > 0
            node_parts.append(kids[chosen])
            take_parts.append(takes[chosen])
            return int(takes.sum())
        got = 0
        for child in kids.tolist():
            if top - got <= 0:
                break
            got += visit(lay + 1, child, top - got)
        return got

    visit(layer, domain, want)
    if not node_parts:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    return np.concatenate(node_parts), np.concatenate(take_parts)


def _misfit(problem: Problem, seq_t: IntArray, per_pod: IntArray, free: IntArray) -> str:
    """With several pod types a node can receive pods that are not the prefix it offered."""
    types = np.unique(seq_t)
    if len(types) == 1:
        return ""
    load = np.zeros_like(free)
    for t in types.tolist():
        nodes = per_pod[seq_t == t]
        count = np.bincount(nodes, minlength=problem.num_nodes)
        if np.any((count > 0) & ~problem.eligible[t]):
            bad = int(np.flatnonzero((count > 0) & ~problem.eligible[t])[0])
            return f"gather plan puts pods on node {problem.node_names[bad]} they cannot use"
        load += count[:, None] * problem.type_demand[t][None, :]
    over = (load > 0) & (load > free)
    if over.any():
        n, r = (int(x) for x in np.argwhere(over)[0])
        return (
            f"gather plan overcommits node {problem.node_names[n]} ({problem.resources[r]}): "
            "the gang group's pods differ and the offer slots assume the prefix order"
        )
    return ""
