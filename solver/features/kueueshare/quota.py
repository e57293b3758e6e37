"""Kueue's quota arithmetic on the cohort tree (`pkg/cache/scheduler/resource_node.go`,
`fair_sharing.go`), per flavor-resource `fr` (`"<flavor>/<resource>"`):

* **subtree quota** `SQ(n) = nominal(n) + Σ_children (SQ(c) − LQ(c))`, a ClusterQueue's is
  its nominal quota;
* **local quota** `LQ(n) = max(0, SQ(n) − lendingLimit(n))` (0 without a lending limit): the
  part of a node's quota its parent never sees;
* **usage** `U(n)`: a ClusterQueue's is what its workloads use; a cohort's is what its
  children use past their local quota, `Σ_children max(0, U(c) − LQ(c))` (`addUsage`
  bubbles a charge up by the part past the node's local room);
* **available** (what a ClusterQueue may still be given):
      avail(root) = SQ(root) − U(root)
      avail(n)    = max(0, LQ(n) − U(n)) + min(avail(parent),
                        SQ(n) − LQ(n) − max(0, U(n) − LQ(n)) + borrowingLimit(n))
  (the `min` only with a borrowing limit);
* **potential available** (the most it could ever get, usage aside):
      pot(root) = SQ(root);  pot(n) = min(LQ(n) + pot(parent), SQ(n) + borrowingLimit(n));
* **borrowing level** of a request `v` (`FindHeightOfLowestSubtreeThatFits`): 0 when the
  ClusterQueue's own subtree quota holds `U + v`, else the height of the lowest ancestor
  whose subtree holds what is left past each level's local room;
* **dominant resource share** (`dominantResourceShare`), of a node with a parent:
      borrowed_r = Σ_fr of resource r max(0, U(n) + req(fr) − SQ(n))
      lendable_r = Σ_fr of resource r pot_parent-side(n, fr)   (`calculateLendable`)
      DRS(n)     = max_r borrowed_r · 1000 / lendable_r,  weighted: DRS / weight
  (0 when nothing is borrowed; a zero weight that borrows sorts after every other).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from solver.model import MAX_COHORT_DEPTH, KueueQueue, KueueQuota

__all__ = ["MAX_COHORT_DEPTH", "Drs", "KueueNode", "KueueNodes", "depth_problem"]


def depth_problem(specs: Mapping[str, tuple[str | None, KueueQueue]]) -> str | None:
    """Why the cohort forest is not acted on (a chain deeper than `MAX_COHORT_DEPTH`: the
    tree's walks are recursive, as Kueue's), or None; walked without recursion."""
    depth: dict[str, int] = {}
    for name in specs:
        chain: list[str] = []
        at: str | None = name
        while at is not None and at in specs and at not in depth and len(chain) <= len(specs):
            chain.append(at)
            at = specs[at][0]
        base = depth.get(at, 0) if at is not None else 0
        for n in reversed(chain):
            base += 1
            depth[n] = base
        if depth[name] > MAX_COHORT_DEPTH + 1:
            return (
                f"ClusterQueue or Cohort {name}: more than {MAX_COHORT_DEPTH} levels of cohorts "
                "above it; gangplan acts on shallower Kueue cohort trees"
            )
    return None


@dataclass
class KueueNode:
    """One ClusterQueue or cohort of the tree (LocalQueues are not quota nodes)."""

    name: str
    parent: str | None
    cluster_queue: bool
    weight: float = 1.0
    quotas: dict[str, KueueQuota] = field(default_factory=dict)
    children: list[str] = field(default_factory=list)
    subtree: dict[str, int] = field(default_factory=dict)  # SQ
    usage: dict[str, int] = field(default_factory=dict)  # U

    def local(self, fr: str) -> int:
        """LQ: the subtree quota kept from the parent by the lending limit."""
        q = self.quotas.get(fr)
        if q is None or q.lending_limit is None:
            return 0
        return max(0, self.subtree.get(fr, 0) - q.lending_limit)

    def local_available(self, fr: str) -> int:
        return max(0, self.local(fr) - self.usage.get(fr, 0))


@dataclass(frozen=True)
class Drs:
    """A node's dominant resource share, compared as Kueue's `CompareDRS` compares it."""

    ratio: float  # unweighted: borrowed · 1000 / lendable of the dominant resource
    weight: float
    resource: str = ""
    borrowed: frozenset[str] = frozenset()  # the flavor-resources it borrows on

    @property
    def share(self) -> float:
        """The weighted share (`PreciseWeightedShare`): ∞ for a zero weight that borrows."""
        if self.ratio == 0:
            return 0.0
        return math.inf if self.weight == 0 else self.ratio / self.weight

    def key(self) -> tuple[int, float]:
        """The sort key of `CompareDRS`: a zero weight that borrows last, by its ratio."""
        if self.weight == 0 and self.ratio != 0:
            return (1, self.ratio)
        return (0, self.share)


class KueueNodes:
    """The cohort forest of one call: nodes by name, usage kept as Kueue keeps it."""

    def __init__(
        self,
        nodes: dict[str, KueueNode],
        static: dict[tuple[str, str], object] | None = None,
    ) -> None:
        self.nodes = nodes
        self.static = {} if static is None else static  # what depends on quotas alone
        #   (paths, lendable): shared by every copy

    @classmethod
    def build(cls, specs: Mapping[str, tuple[str | None, KueueQueue]]) -> KueueNodes:
        """From each ClusterQueue's and cohort's (parent, spec); subtree quotas summed."""
        nodes = {
            name: KueueNode(
                name=name, parent=parent, cluster_queue=spec.kind == "ClusterQueue",
                weight=spec.fair_weight, quotas=spec.quotas(),
            )
            for name, (parent, spec) in specs.items()
        }  # fmt: skip
        for node in nodes.values():
            if node.parent is not None and node.parent in nodes:
                nodes[node.parent].children.append(node.name)
            elif node.parent is not None:
                node.parent = None
        out = cls(nodes)
        for root in [n for n in nodes.values() if n.parent is None]:
            out._sum(root)
        return out

    def _sum(self, node: KueueNode) -> None:
        node.subtree = {fr: q.nominal for fr, q in node.quotas.items()}
        for name in sorted(node.children):
            child = self.nodes[name]
            self._sum(child)
            for fr, v in child.subtree.items():
                node.subtree[fr] = node.subtree.get(fr, 0) + v - child.local(fr)

    def copy(self) -> KueueNodes:
        """The same tree with its own usage (quotas are shared, never changed)."""
        return KueueNodes(
            {
                n: KueueNode(
                    name=v.name, parent=v.parent, cluster_queue=v.cluster_queue,
                    weight=v.weight, quotas=v.quotas, children=v.children,
                    subtree=v.subtree, usage=dict(v.usage),
                )
                for n, v in self.nodes.items()
            },
            self.static,
        )  # fmt: skip

    def path_names(self, name: str) -> tuple[str, ...]:
        """The node's name and its ancestors', the node first (kept: quotas alone)."""
        key = ("path", name)
        found = self.static.get(key)
        if found is None:
            out: list[str] = []
            at = self.nodes.get(name)
            while at is not None and len(out) <= len(self.nodes):
                out.append(at.name)
                at = self.nodes.get(at.parent) if at.parent is not None else None
            found = self.static[key] = tuple(out)
        return found  # type: ignore[return-value]

    def path(self, name: str) -> list[KueueNode]:
        """The node and its ancestors, the node first."""
        nodes = self.nodes
        return [nodes[n] for n in self.path_names(name)]

    def root(self, name: str) -> KueueNode:
        return self.nodes[self.path_names(name)[-1]]

    # ------------------------------------------------------------------ usage

    def add(self, name: str, fr: str, value: int) -> None:
        """`addUsage`: the node's usage grows; its parent's by the part past its local room."""
        for node in self.path(name):
            room = node.local_available(fr)
            node.usage[fr] = node.usage.get(fr, 0) + value
            if value <= room:
                return
            value -= room

    def remove(self, name: str, fr: str, value: int) -> None:
        """`removeUsage`: the inverse of `add`."""
        for node in self.path(name):
            stored = node.usage.get(fr, 0) - node.local(fr)
            node.usage[fr] = node.usage.get(fr, 0) - value
            if stored <= 0:
                return
            value = min(value, stored)

    def add_all(self, name: str, usage: Mapping[str, int], sign: int = 1) -> None:
        """Add (`sign` 1) or remove (-1) a workload's usage at ClusterQueue `name`."""
        for fr, v in usage.items():
            if v and sign > 0:
                self.add(name, fr, v)
            elif v:
                self.remove(name, fr, v)

    # ------------------------------------------------------------------ what fits

    def available(self, name: str, fr: str) -> int:
        path = self.path(name)
        avail = path[-1].subtree.get(fr, 0) - path[-1].usage.get(fr, 0)
        for node in reversed(path[:-1]):
            q = node.quotas.get(fr)
            if q is not None and q.borrowing_limit is not None:
                lq = node.local(fr)
                stored = node.subtree.get(fr, 0) - lq
                used = max(0, node.usage.get(fr, 0) - lq)
                avail = min(stored - used + q.borrowing_limit, avail)
            avail = node.local_available(fr) + avail
        return avail

    def potential(self, name: str, fr: str) -> int:
        path = self.path(name)
        pot = path[-1].subtree.get(fr, 0)
        for node in reversed(path[:-1]):
            pot = node.local(fr) + pot
            q = node.quotas.get(fr)
            if q is not None and q.borrowing_limit is not None:
                pot = min(node.subtree.get(fr, 0) + q.borrowing_limit, pot)
        return pot

    def borrowing_level(self, name: str, fr: str, value: int) -> int:
        """`FindHeightOfLowestSubtreeThatFits`: 0 without borrowing."""
        path = self.path(name)
        cq = path[0]
        if len(path) == 1 or cq.usage.get(fr, 0) + value <= cq.subtree.get(fr, 0):
            return 0
        remaining = value - cq.local_available(fr)
        for node in path[1:]:
            if node.usage.get(fr, 0) + remaining <= node.subtree.get(fr, 0):
                return self._height(node)
            remaining -= node.local_available(fr)
        return self._height(path[-1])

    def _height(self, node: KueueNode) -> int:
        if not node.children:
            return 0
        return 1 + max(self._height(self.nodes[c]) for c in node.children)

    # ------------------------------------------------------------------ fair sharing

    def drs(self, name: str, request: Mapping[str, int] | None = None) -> Drs:
        """The node's dominant resource share with `request` added to its usage."""
        node = self.nodes[name]
        if node.parent is None:
            return Drs(0.0, node.weight)
        borrowing: dict[str, int] = {}
        borrowed = set()
        for fr, quota in node.subtree.items():
            more = (request or {}).get(fr, 0) + node.usage.get(fr, 0) - quota
            if more > 0:
                resource = fr.split("/", 1)[1]
                borrowing[resource] = borrowing.get(resource, 0) + more
                borrowed.add(fr)
        if not borrowing:
            return Drs(0.0, node.weight)
        lendable = self._lendable(node.parent)
        ratio, dominant = 0.0, ""
        for resource, b in sorted(borrowing.items()):
            if (lr := lendable.get(resource, 0)) > 0:
                r = b * 1000.0 / lr
                if r > ratio:
                    ratio, dominant = r, resource
        return Drs(ratio, node.weight, dominant, frozenset(borrowed))

    def _lendable(self, name: str) -> dict[str, int]:
        """`calculateLendable`: per resource, what the subtree at `name` could lend, summed
        over the root's flavor-resources (kept: quotas alone)."""
        key = ("lendable", name)
        found = self.static.get(key)
        if found is None:
            root = self.root(name)
            out: dict[str, int] = {}
            for fr in root.subtree:
                resource = fr.split("/", 1)[1]
                out[resource] = out.get(resource, 0) + self.potential(name, fr)
            found = self.static[key] = out
        return found  # type: ignore[return-value]

    def cluster_queues(self) -> Iterable[KueueNode]:
        return (n for n in self.nodes.values() if n.cluster_queue)
