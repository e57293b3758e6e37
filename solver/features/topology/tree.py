"""Koordinator's network tree (`reference/koordinator.md` §3), built once per node generation.

`build_tree` builds it from `ClusterNetworkTopology/default` as Koordinator's
`networktopology/tree.go` does:

1. Layers are ordered by walking `parentTopologyLayer` up from `NodeTopologyLayer`; every
   declared layer must be on that chain (otherwise: `topology layer "X" not found in spec`,
   and there is no tree). `ClusterTopologyLayer` is the implicit root (one domain named
   ``""``), `NodeTopologyLayer` the leaves (one domain per node, named after it).
2. Nodes are added in name order. A node's domain in a layer is the first non-empty value
   among the layer's `labelKey`s. A node missing the layer directly above the nodes gets a
   virtual domain named after itself; a node missing any other layer is **left out of the
   tree** (it never receives offer slots, so topology-aware gangs cannot use it).
3. Domains are indexed by (layer, name) globally: two blocks with the same label value under
   different spines are one block, attached to the spine of the first node (by name) that
   created it. Domain names must be unique per layer.

Arrays (`TopologyTree`): `layers[l]` top→down; per layer the domain names **sorted** (index
order is name order, so "name ascending" tie-breaks are index comparisons) — except the
node layer, whose domain index is the node index; `parent[l][d]` the parent's index in
layer l-1; `node_domain[l, n]` node n's domain in layer l (-1 when out of the tree).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from solver.errors import InputError
from solver.model import CLUSTER_LAYER, NODE_LAYER, NetworkTopology, Node
from solver.problem import BoolArray, IntArray
from solver.snapshot import NodeTable

__all__ = ["TopologyTree", "build_tree", "detail_status", "render_tree", "topology_view", "tree_of"]


@dataclass(frozen=True, eq=False)
class TopologyTree:
    """Koordinator's network tree as arrays (see the module docstring)."""

    layers: tuple[str, ...]  # L, top -> down; [0] ClusterTopologyLayer, [L-1] NodeTopologyLayer
    label_keys: tuple[tuple[str, ...], ...]  # [L]; empty for the root and the node layer
    domains: tuple[tuple[str, ...], ...]  # [L] names; layer L-1 = all node names (index = node)
    parent: tuple[IntArray, ...]  # [L] per layer [D_l] parent index in layer l-1; -1 root/out
    node_domain: IntArray  # [L, N] domain of each node per layer; -1 when out of the tree

    @property
    def in_tree(self) -> BoolArray:
        return np.asarray(self.node_domain[0] >= 0)

    def layer_index(self, name: str) -> int:
        """Index of a layer by name; -1 when the CR does not declare it."""
        return self.layers.index(name) if name in self.layers else -1

    def node_counts(self, layer: int) -> IntArray:
        """In-tree nodes per domain of `layer`."""
        row = self.node_domain[layer]
        return np.bincount(row[row >= 0], minlength=len(self.domains[layer]))


def _layer_chain(topology: NetworkTopology) -> list[int]:
    """Koordinator's `sortNetworkTopologySpecFromParentToChild`: spec positions, top -> down."""
    specs = topology.layers
    by_name = {layer.name: i for i, layer in enumerate(specs)}
    current = NODE_LAYER
    cur = by_name.get(current)
    order: list[int] = []
    for _ in range(len(specs)):
        if cur is None:
            raise InputError(
                f"ClusterNetworkTopology {topology.name}: topology layer {current!r} not found "
                "in spec (the layers must form one chain from NodeTopologyLayer up through "
                "parentTopologyLayer)"
            )
        order.append(cur)
        current = specs[cur].parent or ""
        cur = by_name.get(current)
    order.reverse()
    return order


def build_tree(topology: NetworkTopology | None, nodes: Sequence[Node]) -> TopologyTree:
    """The network tree over `nodes` (in name order); InputError when the CR is unusable."""
    # No layers: only Kueue Topology objects; no name: only Volcano HyperNodes.
    if topology is None or not topology.layers or not topology.name:
        raise InputError("no ClusterNetworkTopology named default in the input")
    chain = _layer_chain(topology)
    specs = [topology.layers[i] for i in chain]
    if not specs or specs[-1].name != NODE_LAYER:
        raise InputError(
            f"ClusterNetworkTopology {topology.name}: topology layer {NODE_LAYER!r} not found in spec"
        )
    user = specs[:-1]  # layers between the root and the nodes, top -> down
    layers = (CLUSTER_LAYER, *(s.name for s in user), NODE_LAYER)
    root = (CLUSTER_LAYER, "")
    attach: dict[tuple[str, str], tuple[str, str]] = {root: root}  # meta -> parent meta
    node_meta: list[tuple[str, str] | None] = []
    for node in nodes:
        metas: list[tuple[str, str]] = []
        for i, spec in enumerate(specs):
            if spec.name == NODE_LAYER:
                name = node.name
            else:
                name = next((node.labels[k] for k in spec.label_keys if node.labels.get(k)), "")
            if not name:
                if i == len(specs) - 2:  # the layer right above the nodes: a virtual domain
                    name = node.name
                else:
                    break
            metas.append((spec.name, name))
        if len(metas) < len(specs):
            node_meta.append(None)  # left out of the tree
            continue
        parent = root
        for meta in metas:
            attach.setdefault(meta, parent)
            parent = meta
        node_meta.append(metas[-1])

    names_per_layer: list[list[str]] = [[""]]
    for spec in user:
        names_per_layer.append(sorted({name for (layer, name) in attach if layer == spec.name}))
    names_per_layer.append([n.name for n in nodes])
    index = [{name: i for i, name in enumerate(names)} for names in names_per_layer]
    parents: list[IntArray] = [np.full(1, -1, dtype=np.int64)]
    for li in range(1, len(layers)):
        row = np.full(len(names_per_layer[li]), -1, dtype=np.int64)
        for d, name in enumerate(names_per_layer[li]):
            parent_meta = attach.get((layers[li], name))
            if parent_meta is not None:
                row[d] = index[li - 1][parent_meta[1]]
        parents.append(row)
    node_domain = np.full((len(layers), len(nodes)), -1, dtype=np.int64)
    inside = np.array([m is not None for m in node_meta], dtype=bool)
    node_domain[-1, inside] = np.flatnonzero(inside)
    for li in range(len(layers) - 2, -1, -1):
        below = node_domain[li + 1]
        node_domain[li] = np.where(below >= 0, parents[li + 1][np.maximum(below, 0)], -1)
    for row in parents:
        row.flags.writeable = False
    node_domain.flags.writeable = False
    return TopologyTree(
        layers=layers,
        label_keys=((), *(s.label_keys for s in user), ()),
        domains=tuple(tuple(names) for names in names_per_layer),
        parent=tuple(parents),
        node_domain=node_domain,
    )


def _children(tree: TopologyTree, layer: int, domain: int) -> list[int]:
    return [int(c) for c in np.flatnonzero(tree.parent[layer + 1] == domain)]


def detail_status(tree: TopologyTree) -> list[dict[str, Any]]:
    """`ClusterNetworkTopology.status.detailStatus` as Koordinator's `makeStatus` writes it.

    One entry per non-node domain in depth-first order (children by name), with its parent,
    the child layer, the sorted child names (omitted when the children are nodes) and the
    number of nodes below it.
    """
    out: list[dict[str, Any]] = []
    last = len(tree.layers) - 1

    def visit(layer: int, d: int) -> int:
        entry: dict[str, Any] = {
            "topologyInfo": {
                "topologyLayer": tree.layers[layer],
                "topologyName": tree.domains[layer][d],
            }
        }
        if layer > 0:
            p = int(tree.parent[layer][d])
            entry["parentTopologyInfo"] = {
                "topologyLayer": tree.layers[layer - 1],
                "topologyName": tree.domains[layer - 1][p],
            }
        kids = _children(tree, layer, d)
        names = sorted(tree.domains[layer + 1][c] for c in kids)
        if kids:
            entry["childTopologyLayer"] = tree.layers[layer + 1]
            if layer + 1 != last:
                entry["childTopologyNames"] = names
        out.append(entry)
        if layer + 1 == last:
            count = len(kids)
        else:
            by_name = {tree.domains[layer + 1][c]: c for c in kids}
            count = sum(visit(layer + 1, by_name[n]) for n in names)
        entry["nodeNum"] = count
        return count

    visit(0, 0)
    return out


def render_tree(tree: TopologyTree, *, show_nodes: bool = False) -> str:
    """The tree as text, like Koordinator's docs draw it (node counts per domain)."""
    lines = [f"{CLUSTER_LAYER}  ({int(tree.in_tree.sum())} nodes)"]
    last = len(tree.layers) - 1

    def visit(layer: int, d: int, prefix: str) -> None:
        kids = sorted(_children(tree, layer, d), key=lambda c: tree.domains[layer + 1][c])
        if layer + 1 == last and not show_nodes:
            return
        for i, c in enumerate(kids):
            final = i == len(kids) - 1
            branch = "└── " if final else "├── "
            name = tree.domains[layer + 1][c]
            if layer + 1 == last:
                lines.append(f"{prefix}{branch}{NODE_LAYER}: {name}")
                continue
            count = int(tree.node_counts(layer + 1)[c])
            lines.append(f"{prefix}{branch}{tree.layers[layer + 1]}: {name}  ({count} nodes)")
            visit(layer + 1, c, prefix + ("    " if final else "│   "))

    visit(0, 0, "")
    return "\n".join(lines)


def topology_view(tree: TopologyTree, topology: NetworkTopology) -> dict[str, Any]:
    """`gangplan topology -o json`: the spec as read, Koordinator's detailStatus, nodes left out."""
    outside = [tree.domains[-1][n] for n in np.flatnonzero(~tree.in_tree)]
    return {
        "name": topology.name,
        "layers": [
            {"topologyLayer": name, "labelKey": list(keys)}
            for name, keys in zip(tree.layers, tree.label_keys, strict=True)
        ],
        "detailStatus": detail_status(tree),
        "nodesOutOfTree": outside,
    }


def tree_of(nodes: NodeTable, topology: NetworkTopology | None) -> TopologyTree | str:
    """The tree of a node generation and topology (memoised), or why there is none."""

    def compute() -> TopologyTree | str:
        try:
            return build_tree(topology, nodes.nodes)
        except InputError as err:
            return str(err)

    return nodes.memo(("topology", "tree", topology), compute)
