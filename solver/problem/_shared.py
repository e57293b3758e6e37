"""The greedy's fill rows kept between the calls on one snapshot (`SharedRows`); read and
brought up to date by `FillMemo` (`_memo.py`)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable

import numpy as np

from solver.arrays import BoolArray, FloatArray, IntArray

__all__ = ["MAX_SHARED", "SHARED_BYTES_PER_NODE", "SharedRows"]

MAX_SHARED = 8
"""The most pod shapes a snapshot keeps slots and scores for between calls (least recently
used first out)."""

SHARED_BYTES_PER_NODE = MAX_SHARED * (1 + 8 + 8 + 8 + 8 * 4)
"""What the kept rows can hold per node at most (eligibility, static score, slots, score,
and the free room they were computed on, 4 resources): 456 B, ~4.7 MB at 10,240 nodes;
a server counts it in a stored snapshot's size."""


class SharedRows:
    """Slots and scores of pod shapes on every node of one node table, shared by the calls
    on a snapshot and on its later generations (the same nodes; `solver.compile` carries it
    by `Snapshot.derive`).

    An entry holds what it was computed on — the free room, the type's eligibility and
    static score rows — so a call uses it only when its rows are equal, and brings it up to
    date only on the nodes whose room differs from the call's (`FillMemo`). A call that
    starts on room an entry does not know stores its own rows in its place. Entries are
    read-only; a call copies one before it changes it. Thread-safe.
    """

    def __init__(self, nodes: object) -> None:
        self.nodes = nodes  # the node table the rows are over (kept: identity is the test)
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, list[_Entry]] = OrderedDict()
        self._count = 0

    def find(self, key: Hashable, eligible: BoolArray, static: FloatArray) -> _Entry | None:
        with self._lock:
            for entry in self._entries.get(key, ()):
                if np.array_equal(entry.eligible, eligible) and np.array_equal(
                    entry.static, static
                ):
                    self._entries.move_to_end(key)
                    return entry
        return None

    def put(self, key: Hashable, entry: _Entry) -> None:
        for array in (entry.eligible, entry.static, entry.seen, entry.slots, entry.score):
            array.flags.writeable = False
        with self._lock:
            same = self._entries.setdefault(key, [])
            kept = [e for e in same if not e.same_rows(entry)]
            self._count += len(kept) + 1 - len(same)
            same[:] = [*kept, entry]
            self._entries.move_to_end(key)
            while self._count > MAX_SHARED:
                oldest, entries = next(iter(self._entries.items()))
                entries.pop(0)
                self._count -= 1
                if not entries:
                    del self._entries[oldest]

    def __len__(self) -> int:
        return self._count


class _Entry:
    __slots__ = ("eligible", "score", "seen", "slots", "static")

    def __init__(
        self,
        eligible: BoolArray,
        static: FloatArray,
        seen: IntArray,
        slots: IntArray,
        score: FloatArray,
    ) -> None:
        self.eligible, self.static = eligible, static
        self.seen, self.slots, self.score = seen, slots, score

    def same_rows(self, other: _Entry) -> bool:
        return np.array_equal(self.eligible, other.eligible) and np.array_equal(
            self.static, other.static
        )
