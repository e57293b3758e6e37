"""Per-node arrays that depend only on the node list, shared by every call on one snapshot.

A gRPC front end asks many questions of one stored snapshot, and each question compiles a
Problem over the same 10,000 nodes. What depends only on those nodes — names, the name →
index map, the allocatable matrix for a resource axis, and the predicate verdict row of
each pod eligibility signature — is computed once and kept in a `NodeTable`.

`node_table(nodes)` returns the table of exactly these node objects, in this order (nodes
are frozen, so the same objects mean the same data): a caller that reuses the snapshot's
Node objects (the snapshot store does) gets the cached table; a caller that builds new
ones gets a new table, so the cache can never serve arrays of a different node list. A
small LRU bounds the memory. Tables are safe to share between threads: arrays are read-only
and the verdict memo is filled under a lock.
"""

from __future__ import annotations

import operator
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from functools import cached_property

import numpy as np

from solver.model import Node, Pod

__all__ = ["NodeTable", "node_table"]

_TABLES_KEPT = 8


class NodeTable:
    """Read-only per-node data of one node tuple, filled lazily."""

    def __init__(self, nodes: tuple[Node, ...]) -> None:
        self.nodes = nodes
        self._lock = threading.Lock()
        self._capacity: dict[tuple[str, ...], np.ndarray] = {}
        self._verdicts: dict[Hashable, np.ndarray] = {}
        self._reason_texts: list[str] = [""]
        self._reason_code: dict[str, int] = {"": 0}

    @cached_property
    def names(self) -> tuple[str, ...]:
        return tuple(n.name for n in self.nodes)

    @cached_property
    def index(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.names)}

    @cached_property
    def by_name(self) -> dict[str, Node]:
        return dict(zip(self.names, self.nodes, strict=True))

    def capacity(self, resources: tuple[str, ...]) -> np.ndarray:
        """[N, R] allocatable of every node on the axis `resources` (read-only)."""
        found = self._capacity.get(resources)
        if found is None:
            found = np.array(
                [[n.allocatable.get(r, 0) for r in resources] for n in self.nodes], dtype=np.int64
            ).reshape(len(self.nodes), len(resources))
            found.flags.writeable = False
            self._capacity[resources] = found
        return found

    def verdicts(
        self, signature: Hashable, pod: Pod, reason: Callable[[Pod, Node], str | None]
    ) -> np.ndarray:
        """[N] reason code per node for pods of `signature` (0 = fits); `pod` is one of them.

        Codes index `reason_texts()`; a code, once given, never changes meaning.
        """
        found = self._verdicts.get(signature)
        if found is None:
            with self._lock:
                found = self._verdicts.get(signature)
                if found is None:
                    found = np.fromiter(
                        (self._code(reason(pod, node) or "") for node in self.nodes),
                        dtype=np.int64,
                        count=len(self.nodes),
                    )
                    found.flags.writeable = False
                    self._verdicts[signature] = found
        return found

    def reason_texts(self) -> list[str]:
        """A copy of the reason texts given so far: every code in a row returned earlier."""
        with self._lock:
            return list(self._reason_texts)

    def _code(self, text: str) -> int:
        code = self._reason_code.get(text)
        if code is None:
            code = self._reason_code[text] = len(self._reason_texts)
            self._reason_texts.append(text)
        return code


_tables: OrderedDict[int, NodeTable] = OrderedDict()
_tables_lock = threading.Lock()


def _same_objects(a: tuple[Node, ...], b: tuple[Node, ...]) -> bool:
    return len(a) == len(b) and all(map(operator.is_, a, b))


def node_table(nodes: tuple[Node, ...]) -> NodeTable:
    """The table of these node objects in this order. Keyed by their ids and checked by
    identity; a cached table holds its nodes, so their ids cannot be reused meanwhile."""
    key = hash(tuple(map(id, nodes)))
    with _tables_lock:
        table = _tables.get(key)
        if table is not None and _same_objects(table.nodes, nodes):
            _tables.move_to_end(key)
            return table
        table = NodeTable(tuple(nodes))
        _tables[key] = table
        while len(_tables) > _TABLES_KEPT:
            _tables.popitem(last=False)
        return table
