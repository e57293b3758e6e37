"""Volcano's HyperNode tree over one node generation (`reference/volcano.md` §4), memoised.

Built as Volcano's `HyperNodesInfo` and session open build it:

1. HyperNodes are taken in name order. A `Node` member selects nodes by `exactMatch.name`,
   `regexMatch.pattern` (searched, unanchored, in the node name; a pattern that does not
   compile selects nothing) and `labelMatch` (an empty selector selects nothing), a union
   (`member_selector.go` `GetMembers`). A `HyperNode` member names its child by
   `exactMatch` only. A HyperNode has one parent: a second claimer is ignored with a note
   (upstream refuses it: `already has a parent`), as is a link that would close a cycle.
2. A HyperNode spans the union of its members' nodes (`RealNodesSet`), recursively.
3. The virtual `<cluster-top-hypernode>` (index H, after the H HyperNodes) spans every node,
   with tier = the highest tier + 1 (1 without HyperNodes); HyperNodes without a parent
   are its children, and nodes in no HyperNode are reachable only through it.

Arrays (`HyperNodeTree`): `names`, `tier`, `parent` per HyperNode (root last, parent −1);
`covers[h, n]` node n is in HyperNode h; `leaf[n]` the HyperNode of the lowest tier of all
(`FindHyperNodeForNode` looks only there) holding node n, −1 when none; `lowest[n]` the
lowest-tier HyperNode holding n (the root when none).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from solver.model import HyperNode, Node
from solver.problem import BoolArray, IntArray
from solver.snapshot import NodeTable

__all__ = [
    "CLUSTER_TOP",
    "HyperNodeTree",
    "build_hypernode_tree",
    "hypernode_tree_of",
    "hypernode_view",
    "render_hypernode_tree",
]

CLUSTER_TOP = "<cluster-top-hypernode>"


@dataclass(frozen=True, eq=False)
class HyperNodeTree:
    """The HyperNode tree as arrays (module docstring); index H is the virtual root."""

    names: tuple[str, ...]  # [H+1]
    tier: IntArray  # [H+1]
    tier_name: tuple[str, ...]  # [H+1] spec.tierName ("" when unset)
    parent: IntArray  # [H+1] parent index, -1 for the root
    covers: BoolArray  # [H+1, N]
    leaf: IntArray  # [N] HyperNode at the lowest tier of all holding n, -1 when none
    lowest: IntArray  # [N] lowest-tier HyperNode holding n (the root when none)
    tier_list: tuple[int, ...]  # [K] the HyperNode tiers below the root, ascending
    at_tier: IntArray  # [K, N] node n's HyperNode of tier tier_list[k], -1 when none
    notes: tuple[str, ...] = ()
    _ancestors: dict[int, tuple[int, ...]] = field(default_factory=dict, repr=False)

    @property
    def root(self) -> int:
        return len(self.names) - 1

    @property
    def min_tier(self) -> int:
        return int(self.tier.min())

    @property
    def max_tier(self) -> int:
        return int(self.tier[self.root])

    @property
    def tiers(self) -> tuple[int, ...]:
        return tuple(sorted({int(t) for t in self.tier}))

    def index(self, name: str) -> int:
        return self.names.index(name) if name in self.names else -1

    def tier_of_name(self, tier_name: str) -> int | None:
        """`HyperNodeTierNameMap`: the tier of the HyperNodes named so (None: none is)."""
        tiers = {int(self.tier[h]) for h, n in enumerate(self.tier_name) if n == tier_name}
        return min(tiers) if tiers else None

    def ancestors(self, h: int) -> tuple[int, ...]:
        """h, its parent, ..., the root (`GetAncestors`)."""
        found = self._ancestors.get(h)
        if found is None:
            chain = [h]
            while self.parent[chain[-1]] >= 0:
                chain.append(int(self.parent[chain[-1]]))
            found = self._ancestors[h] = tuple(chain)
        return found

    def lca(self, a: int, b: int) -> int:
        """`GetLCAHyperNode` (-1 stands for "none yet": the other one is the answer)."""
        if a < 0:
            return b
        if b < 0:
            return a
        mine = set(self.ancestors(a))
        return next((h for h in self.ancestors(b) if h in mine), self.root)

    def children(self, h: int) -> list[int]:
        return [int(c) for c in np.flatnonzero(self.parent == h)]

    def top_within(self, limit: int) -> IntArray:
        """[N] per node the highest HyperNode holding it whose tier and every tier below it on
        the way up stay <= `limit` (-1: none). Two nodes share a value iff some HyperNode of
        tier <= limit holds both: the one-domain rule of a hard networkTopology."""
        h = self.lowest.copy()
        h = np.where(self.tier[h] <= limit, h, -1)
        for _ in range(len(self.names)):
            up = np.where(h >= 0, self.parent[np.maximum(h, 0)], -1)
            move = (up >= 0) & (self.tier[np.maximum(up, 0)] <= limit)
            if not move.any():
                break
            h = np.where(move, up, h)
        return h


def _selects(member_regex: str, names: Sequence[str]) -> BoolArray:
    try:
        pattern = re.compile(member_regex)
    except re.error:
        return np.zeros(len(names), dtype=bool)  # regexp.Compile failed: no members
    return np.array([pattern.search(n) is not None for n in names], dtype=bool)


def _node_members(hypernode: HyperNode, nodes: Sequence[Node], names: Sequence[str]) -> BoolArray:
    out = np.zeros(len(nodes), dtype=bool)
    index = {n: i for i, n in enumerate(names)}
    for member in hypernode.members:
        if member.type != "Node":
            continue
        if member.exact_name is not None:
            if not member.exact_name:
                continue  # GetMembers returns at once on an empty exactMatch name
            if member.exact_name in index:
                out[index[member.exact_name]] = True
        if member.regex is not None:
            out |= _selects(member.regex, names)
        if member.labels is not None and not member.labels.empty:
            out |= np.array([member.labels.matches(n.labels) for n in nodes], dtype=bool)
    return out


def build_hypernode_tree(hypernodes: Sequence[HyperNode], nodes: Sequence[Node]) -> HyperNodeTree:
    """The tree of `hypernodes` over `nodes` (module docstring)."""
    ordered = sorted(hypernodes, key=lambda h: h.name)
    names = [h.name for h in ordered]
    index = {n: i for i, n in enumerate(names)}
    node_names = [n.name for n in nodes]
    count = len(ordered)
    parent = np.full(count + 1, -1, dtype=np.int64)
    notes: list[str] = []
    for p, hn in enumerate(ordered):
        for member in hn.members:
            child = index.get(member.exact_name or "") if member.type == "HyperNode" else None
            if child is None:
                continue
            if parent[child] >= 0:
                notes.append(
                    f"HyperNode {hn.name}: member {names[child]} already has a parent "
                    f"{names[parent[child]]}; ignored, as Volcano refuses a second parent"
                )
                continue
            walk = p
            while walk >= 0 and walk != child:
                walk = int(parent[walk])
            if walk == child:
                notes.append(f"HyperNode {hn.name}: member {names[child]} would close a cycle")
                continue
            parent[child] = p
    parent[:count] = np.where(parent[:count] < 0, count, parent[:count])
    tiers = [h.tier for h in ordered]
    tier = np.array([*tiers, (max(tiers) + 1) if tiers else 1], dtype=np.int64)
    covers = np.zeros((count + 1, len(nodes)), dtype=bool)
    for h, hn in enumerate(ordered):
        covers[h] = _node_members(hn, nodes, node_names)
    depth = np.zeros(count + 1, dtype=np.int64)  # propagate to ancestors, deepest first
    for h in range(count):
        walk = int(parent[h])
        while walk >= 0:
            depth[h] += 1
            walk = int(parent[walk])
    for h in sorted(range(count), key=lambda h: -depth[h]):
        covers[parent[h]] |= covers[h]
    covers[count] = True
    by_tier = np.lexsort((np.arange(count + 1), tier))  # tier ascending, then name
    lowest = np.full(len(nodes), count, dtype=np.int64)
    leaf = np.full(len(nodes), -1, dtype=np.int64)
    for h in by_tier[::-1].tolist():
        lowest = np.where(covers[h], h, lowest)
    if count:
        low = int(tier[:count].min())
        for h in by_tier[::-1].tolist():
            if h < count and tier[h] == low:
                leaf = np.where(covers[h], h, leaf)
    tier_list = tuple(sorted(set(tiers)))
    at_tier = np.full((len(tier_list), len(nodes)), -1, dtype=np.int64)
    walker: IntArray = lowest.copy()
    for _ in range(count + 1):
        for k, t in enumerate(tier_list):
            at_tier[k] = np.where(
                (at_tier[k] < 0) & (tier[walker] == t) & (walker < count), walker, at_tier[k]
            )
        walker = np.where(parent[walker] >= 0, parent[walker], walker)
        if bool(np.all(walker == count)):
            break
    for arr in (tier, parent, covers, leaf, lowest, at_tier):
        arr.flags.writeable = False
    return HyperNodeTree(
        names=(*names, CLUSTER_TOP),
        tier=tier,
        tier_name=(*(h.tier_name for h in ordered), ""),
        parent=parent,
        covers=covers,
        leaf=leaf,
        lowest=lowest,
        tier_list=tier_list,
        at_tier=at_tier,
        notes=tuple(notes),
    )


def hypernode_tree_of(nodes: NodeTable, hypernodes: tuple[HyperNode, ...]) -> HyperNodeTree:
    """The tree of a node generation and its HyperNodes (memoised per generation)."""
    return nodes.memo(
        ("topology", "hypernodes", hypernodes),
        lambda: build_hypernode_tree(hypernodes, nodes.nodes),
    )


def render_hypernode_tree(
    tree: HyperNodeTree, node_names: Sequence[str], *, show_nodes: bool = False
) -> str:
    """The HyperNode tree as text: each HyperNode with its tier(/tierName) and node count."""
    counts = tree.covers.sum(axis=1)
    lines = [f"{CLUSTER_TOP}  (tier {tree.max_tier}, {len(node_names)} nodes)"]

    def label(h: int) -> str:
        named = f"/{tree.tier_name[h]}" if tree.tier_name[h] else ""
        return f"{tree.names[h]}  (tier {int(tree.tier[h])}{named}, {int(counts[h])} nodes)"

    def visit(h: int, prefix: str) -> None:
        kids: list[tuple[str, int]] = [(tree.names[c], c) for c in tree.children(h)]
        if show_nodes:
            inside = tree.covers[h].copy()
            for c in tree.children(h):
                inside &= ~tree.covers[c]
            if h == tree.root:
                inside = tree.lowest == tree.root
            kids += [(node_names[n], -1 - n) for n in np.flatnonzero(inside).tolist()]
        for i, (name, k) in enumerate(kids):
            last = i == len(kids) - 1
            branch = "└── " if last else "├── "
            lines.append(f"{prefix}{branch}{label(k) if k >= 0 else 'node: ' + name}")
            if k >= 0:
                visit(k, prefix + ("    " if last else "│   "))

    visit(tree.root, "")
    return "\n".join(lines)


def hypernode_view(tree: HyperNodeTree, node_names: Sequence[str]) -> dict[str, object]:
    """`gangplan topology -o json` for HyperNodes: each one's tier, parent, children, nodes."""
    out = []
    for h, name in enumerate(tree.names):
        parent = int(tree.parent[h])
        out.append(
            {
                "name": name,
                "tier": int(tree.tier[h]),
                "tierName": tree.tier_name[h],
                "parent": tree.names[parent] if parent >= 0 else None,
                "children": sorted(tree.names[c] for c in tree.children(h)),
                "nodeCount": int(tree.covers[h].sum()),
            }
        )
    alone = [node_names[n] for n in np.flatnonzero(tree.lowest == tree.root).tolist()]
    return {"hyperNodes": out, "nodesInNoHyperNode": alone, "notes": list(tree.notes)}
