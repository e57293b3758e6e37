"""The nodes of one snapshot generation, and what derives from them alone.

Nodes change rarely next to pods, so everything that depends only on the node list is
computed once per node generation and shared by every call (and every later generation
that keeps the same nodes): names, the name -> index map, the allocatable matrix of a
resource axis, the card types each node offers, and whatever a policy memoises through
`memo()` (predicate verdict rows, the network tree, node-group labels, ...). The table is
read-only after construction; the memo is filled under a lock, so tables can be shared
between threads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Mapping, Sequence
from functools import cached_property
from types import MappingProxyType
from typing import TypeVar

import numpy as np

from solver.model import ClusterCards, Node, discover_cards
from solver.quantity import PODS

__all__ = ["NodeTable"]

T = TypeVar("T")


class NodeTable:
    """Nodes sorted by name, with read-only per-node arrays filled lazily."""

    def __init__(self, nodes: Sequence[Node]) -> None:
        self.nodes: tuple[Node, ...] = tuple(sorted(nodes, key=lambda n: n.name))
        self._lock = threading.RLock()
        self._capacity: dict[tuple[str, ...], np.ndarray] = {}
        self._memo: dict[Hashable, object] = {}

    def __len__(self) -> int:
        return len(self.nodes)

    @cached_property
    def names(self) -> tuple[str, ...]:
        return tuple(n.name for n in self.nodes)

    @cached_property
    def index(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.names)}

    @cached_property
    def by_name(self) -> dict[str, Node]:
        return dict(zip(self.names, self.nodes, strict=True))

    @cached_property
    def cards(self) -> ClusterCards:
        """Card types per node and cluster-wide (Volcano capacity-card discovery)."""
        return discover_cards(self.nodes)

    @cached_property
    def total(self) -> Mapping[str, int]:
        """Allocatable summed over every node, per resource (`pods` left out: it is never a
        quota); the cluster that queue shares, drf's shares and overcommit divide."""
        out: dict[str, int] = {}
        for node in self.nodes:
            for r, v in node.allocatable.items():
                if r != PODS:
                    out[r] = out.get(r, 0) + v
        return MappingProxyType(out)

    def capacity(self, resources: tuple[str, ...]) -> np.ndarray:
        """[N, R] allocatable of every node on the axis `resources` (read-only)."""
        found = self._capacity.get(resources)
        if found is None:
            found = np.array(
                [[n.allocatable.get(r, 0) for r in resources] for n in self.nodes], dtype=np.int64
            ).reshape(len(self.nodes), len(resources))
            found.flags.writeable = False
            with self._lock:
                found = self._capacity.setdefault(resources, found)
        return found

    def memo(self, key: Hashable, compute: Callable[[], T]) -> T:
        """`compute()` once per node generation (per key); the value must be read-only."""
        try:
            return self._memo[key]  # type: ignore[return-value]
        except KeyError:
            pass
        with self._lock:
            if key not in self._memo:
                self._memo[key] = compute()
            return self._memo[key]  # type: ignore[return-value]
