"""Hierarchical DRF: Volcano's `hdrf` tree (`drf.go` with `enableHierarchy`).

The tree is the queues' paths (annotation `volcano.sh/hierarchy`, `root/eng/dev`; the first
part is the root whatever its name) with a weight per part (`volcano.sh/hierarchy-weights`,
`100/50/50`; below 1, unparsable or missing: 1); each job is a leaf under its queue's last
part. Per resource r with cluster total T_r > 0:

    share(a)           = max_r a_r / T_r                                 (a job's DRF share)
    demanding(r)       = Σ allocated_r < T_r                             (r not used up)
    saturated(leaf)    = ∃ r: a_r > 0 and q_r > 0 and (a_r ≥ q_r or not demanding(r))
                         (a = the job's allocated, q = its total request)
    mdr(node)          = min(1, min share(child) over children with share > 0, not saturated)
    allocated(node)    = Σ over children with share > 0:
                            a_child                          if the child is saturated
                            a_child · mdr / share(child)     otherwise (rescaled)
    share(node)        = share(allocated(node)); saturated(node) = every child saturated

Two queues compare level by level down their paths (`compareQueues`): a saturated node
after one that is not, then the lower share / weight first; equal at every common level:
equal. The weight enters only the comparison, as upstream. A job's allocation moves its
leaf and every ancestor; when a resource is used up, every leaf's saturation may change
and the whole tree is recomputed (upstream recomputes it after every task).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from solver.problem import FloatArray

__all__ = ["HIERARCHY", "MAX_HIERARCHY_DEPTH", "HdrfTree", "hierarchy_path"]

HIERARCHY = "volcano.sh/hierarchy"
"""A Volcano Queue's annotation: its path in the hDRF tree (`KubeHierarchyAnnotationKey`)."""
HIERARCHY_WEIGHTS = "volcano.sh/hierarchy-weights"
"""A Volcano Queue's annotation: the weight of each part of its path."""


MAX_HIERARCHY_DEPTH = 32
"""Parts of a queue's path read below the root; deeper ones are cut, with a note (an
annotation may hold 256 KiB: unbounded, a path would make a tree node per part)."""


def hierarchy_path(annotations: dict[str, str]) -> tuple[tuple[str, ...], tuple[float, ...]]:
    """The parts of a queue's path below the root (at most `MAX_HIERARCHY_DEPTH`), and the
    weight of each (upstream: `ParseFloat`, below 1 is 1; a missing weight is 1 here, where
    upstream panics)."""
    parts = annotations.get(HIERARCHY, "").split("/", MAX_HIERARCHY_DEPTH + 1)[1:]
    parts = parts[:MAX_HIERARCHY_DEPTH]
    given = annotations.get(HIERARCHY_WEIGHTS, "").split("/", MAX_HIERARCHY_DEPTH + 1)[1:]
    weights = []
    for i in range(len(parts)):
        try:
            w = float(given[i]) if i < len(given) else 1.0
        except ValueError:
            w = 1.0
        weights.append(w if np.isfinite(w) and w >= 1 else 1.0)
    return tuple(parts), tuple(weights)


class HdrfTree:
    """The tree with its shares; node 0 is the root. Amounts are float64 rows over the
    call's resources; resources the cluster has none of do not count in shares."""

    def __init__(self, total: FloatArray) -> None:
        self.total = np.asarray(total, dtype=np.float64)
        self.cols = self.total > 0
        self.used = np.zeros_like(self.total)  # Σ allocated over every job
        self.parent: list[int] = [-1]
        self.weight: list[float] = [1.0]
        self.children: list[list[int]] = [[]]
        self.leaf: list[bool] = [False]
        self.allocated: list[FloatArray] = [np.zeros_like(self.total)]
        self.request: list[FloatArray] = [np.zeros_like(self.total)]
        self.share: list[float] = [0.0]
        self.saturated: list[bool] = [False]
        self._paths: dict[tuple[str, ...], int] = {(): 0}
        self._demanding = self._demanding_now()

    def _add(self, parent: int, weight: float, leaf: bool) -> int:
        n = len(self.parent)
        self.parent.append(parent)
        self.weight.append(weight)
        self.children.append([])
        self.leaf.append(leaf)
        self.allocated.append(np.zeros_like(self.total))
        self.request.append(np.zeros_like(self.total))
        self.share.append(0.0)
        self.saturated.append(False)
        self.children[parent].append(n)
        return n

    def path(self, parts: Sequence[str], weights: Sequence[float]) -> tuple[int, ...]:
        """The nodes of a queue's path, the root first (made when missing; a part's weight
        is the one given when it was made)."""
        nodes = [0]
        for i in range(len(parts)):
            key = tuple(parts[: i + 1])
            if key not in self._paths:
                self._paths[key] = self._add(nodes[-1], weights[i], leaf=False)
            nodes.append(self._paths[key])
        return tuple(nodes)

    def job(self, parent: int, allocated: FloatArray, request: FloatArray) -> int:
        """A job's leaf under `parent` (call `refresh` once every job is in)."""
        n = self._add(parent, 1.0, leaf=True)
        self.allocated[n] = np.asarray(allocated, dtype=np.float64).copy()
        self.request[n] = np.asarray(request, dtype=np.float64).copy()
        self.share[n] = self.share_of(self.allocated[n])
        self.used += self.allocated[n]
        return n

    def share_of(self, amounts: FloatArray) -> float:
        """The dominant share: max over the cluster's resources of amount / total."""
        if not self.cols.any():
            return 0.0
        return float((amounts[self.cols] / self.total[self.cols]).max())

    def _demanding_now(self) -> np.ndarray:
        return self.cols & (self.used < self.total)

    def _leaf_saturated(self, n: int) -> bool:
        a, q = self.allocated[n], self.request[n]
        held = (a > 0) & (q != 0)
        return bool((held & ((a >= q) | ~self._demanding)).any())

    def _update(self, n: int) -> None:
        """Node n from its children (a leaf: its saturation only)."""
        if self.leaf[n]:
            self.saturated[n] = self._leaf_saturated(n)
            return
        kids = self.children[n]
        mdr = 1.0
        for c in kids:
            if self.share[c] != 0 and not self.saturated[c]:
                mdr = min(mdr, self.share[c])
        alloc = np.zeros_like(self.total)
        for c in kids:
            if self.share[c] != 0:
                alloc += (
                    self.allocated[c]
                    if self.saturated[c]
                    else self.allocated[c] * (mdr / self.share[c])
                )
        self.allocated[n] = alloc
        self.share[n] = self.share_of(alloc)
        self.saturated[n] = all(self.saturated[c] for c in kids)

    def refresh(self) -> None:
        """Every node again, the leaves first (children are made after their parents)."""
        self._demanding = self._demanding_now()
        for n in range(len(self.parent) - 1, -1, -1):
            self._update(n)

    def allocate(self, leaf: int, amounts: FloatArray) -> None:
        """The job of `leaf` got `amounts` more (`adjust` of one leaf)."""
        self.adjust([(leaf, amounts)])

    def adjust(self, changes: Sequence[tuple[int, FloatArray]], *, root: bool = True) -> None:
        """Several leaves' allocations moved at once: the whole tree again when a resource's
        use flips (every leaf's saturation may change), else the leaves' paths, each node
        once; without `root` the root itself is left as it was (only the comparison of two
        queues below it reads the tree)."""
        for leaf, amounts in changes:
            self.allocated[leaf] = self.allocated[leaf] + amounts
            self.share[leaf] = self.share_of(self.allocated[leaf])
            self.used = self.used + amounts
        if not np.array_equal(self._demanding_now(), self._demanding):
            self.refresh()
            return
        self._update_paths([leaf for leaf, _ in changes], root=root)

    def _update_paths(self, starts: Sequence[int], *, root: bool = True) -> None:
        """Every node from `starts` up to (not) the root, each once, children first."""
        nodes: set[int] = set()
        for start in starts:
            n = start
            while n > 0 and n not in nodes:
                nodes.add(n)
                n = self.parent[n]
        for n in sorted(nodes, reverse=True):  # children are made after their parents
            self._update(n)
        if root:
            self._update(0)

    def split(self, leaf: int, amounts: FloatArray) -> int:
        """A new leaf beside `leaf` taking `amounts` of its allocation and of its request
        (a job's own pods out of its queue's running aggregate); the totals do not move.
        A `leaf` left with nothing is taken out of the tree (it stood for pods, not for a
        job of its own)."""
        n = self._add(self.parent[leaf], 1.0, leaf=True)
        self.allocated[n] = np.asarray(amounts, dtype=np.float64).copy()
        self.request[n] = self.allocated[n].copy()
        self.allocated[leaf] = self.allocated[leaf] - amounts
        self.request[leaf] = self.request[leaf] - amounts
        for x in (n, leaf):
            self.share[x] = self.share_of(self.allocated[x])
        siblings = self.children[self.parent[leaf]]
        if not (self.allocated[leaf] > 0).any() and leaf in siblings:  # nothing left: no
            siblings.remove(leaf)  # child any more (an empty leaf is not saturated)
            leaf = self.parent[leaf]
        self._update_paths([n, leaf])
        return n

    def compare(self, a: Sequence[int], b: Sequence[int]) -> float:
        """Two queues' paths (root first): negative when a's queue goes first."""
        for x, y in zip(a, b, strict=False):
            if self.saturated[x] != self.saturated[y]:
                return 1.0 if self.saturated[x] else -1.0
            rx, ry = self.share[x] / self.weight[x], self.share[y] / self.weight[y]
            if rx != ry:
                return rx - ry
        return 0.0
