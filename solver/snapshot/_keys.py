"""Pod keys of one lineage without one Python object per pod.

A snapshot of 200,000 running pods held as a list of `str` plus a `dict` costs ~120 bytes
per pod in small objects — and, worse, those long-lived objects are allocated in the same
interpreter memory pools as the request's temporaries, so the pools stay pinned after the
request is freed (fragmentation measured at ~500 bytes per pod). Here keys live in one
UTF-8 buffer with row offsets, and the index from a key to its newest row is an
open-addressing table of row numbers keyed by the key's 64-bit hash, all numpy. A probe
compares the stored key whenever the hashes match, so two keys with one hash simply take
two slots of the same chain.

Append-only like the columns: a row's key never changes, and a reader of an older
generation follows `prev` from the newest row down to its own length (`find`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from solver.arrays import IntArray
from solver.snapshot._intern import NONE

__all__ = ["PodKeys"]

EMPTY_SLOT = -1
MIN_SLOTS = 64


class PodKeys:
    """row -> key and key -> newest row, for an append-only sequence of rows."""

    def __init__(self, hasher: Callable[[str], int] = hash) -> None:
        self._hasher = hasher  # injectable so tests can force collisions
        self._bytes = np.zeros(1024, dtype=np.uint8)
        self._offsets = np.zeros(MIN_SLOTS + 1, dtype=np.int64)  # row r is [off[r], off[r+1])
        self._hashes = np.zeros(MIN_SLOTS, dtype=np.int64)  # per row
        self._prev = np.full(MIN_SLOTS, NONE, dtype=np.int64)  # per row: older row, same key
        self._slots = np.full(MIN_SLOTS, EMPTY_SLOT, dtype=np.int64)  # -> newest row
        self._distinct = 0
        self.length = 0

    def __len__(self) -> int:
        return self.length

    def key(self, row: int) -> str:
        start, end = self._offsets[row], self._offsets[row + 1]
        return self._bytes[start:end].tobytes().decode()

    def keys(self, rows: Sequence[int]) -> list[str]:
        """`key` of every row, the buffer read once (not a numpy slice per row)."""
        at = np.asarray(rows, dtype=np.int64)
        data = self._bytes.tobytes()
        starts, ends = self._offsets[at].tolist(), self._offsets[at + 1].tolist()
        return [data[a:b].decode() for a, b in zip(starts, ends, strict=True)]

    def find(self, key: str, length: int) -> int:
        """The newest row below `length` holding `key`, NONE when none does."""
        slot = self._find(self._hasher(key), key)
        row = NONE if slot < 0 else int(self._slots[slot])
        while row >= length:
            row = int(self._prev[row])
        return row

    def find_many(self, keys: Sequence[str], length: int) -> IntArray:
        """`find` for every key at once."""
        hashes = np.fromiter((self._hasher(k) for k in keys), dtype=np.int64, count=len(keys))
        slots = self._lookup(hashes, keys)
        rows = np.full(len(keys), NONE, dtype=np.int64)
        rows[slots >= 0] = self._slots[slots[slots >= 0]]
        newer = rows >= length
        while newer.any():
            rows[newer] = self._prev[rows[newer]]
            newer = rows >= length
        return rows

    def _find(self, h: int, key: str) -> int:
        """The slot holding `key` (hash `h`), or -(1 + the empty slot where it would go)."""
        slots, hashes = self._slots, self._hashes
        mask = slots.size - 1
        slot = h & mask
        while True:
            row = int(slots[slot])
            if row == EMPTY_SLOT:
                return -1 - slot
            if hashes[row] == h and self.key(row) == key:
                return slot
            slot = (slot + 1) & mask

    def append(self, keys: Sequence[str]) -> None:
        """Rows `length ..` for `keys`. Each row is stored (its key, its `prev`) before the
        index points at it, so a concurrent reader never finds a half-written row."""
        start = self.length
        encoded = [k.encode() for k in keys]
        sizes = np.fromiter((len(b) for b in encoded), dtype=np.int64, count=len(keys))
        ends = self._offsets[start] + np.cumsum(sizes)
        self._reserve(start + len(keys), int(ends[-1]) if len(keys) else 0)
        blob = b"".join(encoded)
        base = int(self._offsets[start])
        self._bytes[base : base + len(blob)] = np.frombuffer(blob, dtype=np.uint8)
        self._offsets[start + 1 : start + 1 + len(keys)] = ends
        hashes = np.fromiter((self._hasher(k) for k in keys), dtype=np.int64, count=len(keys))
        self._hashes[start : start + len(keys)] = hashes
        self._prev[start : start + len(keys)] = NONE
        self.length = start + len(keys)
        rows = np.arange(start, self.length, dtype=np.int64)
        if np.unique(hashes).size < hashes.size:  # maybe one key twice: one at a time
            for key, h, row in zip(keys, hashes.tolist(), rows.tolist(), strict=True):
                self._point(key, h, row)
            return
        slots = self._lookup(hashes, keys)
        known = slots >= 0
        self._prev[rows[known]] = self._slots[slots[known]]
        self._slots[slots[known]] = rows[known]
        fresh = rows[~known]
        if self._distinct + fresh.size > self._slots.size // 2:
            self._rehash(_table_size(self._distinct + fresh.size))
        self._insert(self._slots, fresh)
        self._distinct += fresh.size

    def _lookup(self, hashes: IntArray, keys: Sequence[str]) -> IntArray:
        """Per key: the slot holding it, or -1."""
        table = self._slots
        mask = table.size - 1
        found = np.full(hashes.size, -1, dtype=np.int64)
        probing = np.arange(hashes.size)
        slots = hashes & mask
        while probing.size:
            rows = table[slots]
            same = rows != EMPTY_SLOT
            same[same] = self._hashes[rows[same]] == hashes[probing[same]]
            for i in np.flatnonzero(same).tolist():
                if self.key(int(rows[i])) == keys[int(probing[i])]:
                    found[probing[i]] = slots[i]
                else:  # another key with the same hash: probe on
                    same[i] = False
            on = (rows != EMPTY_SLOT) & ~same
            probing, slots = probing[on], (slots[on] + 1) & mask
        return found

    def _point(self, key: str, h: int, row: int) -> None:
        """Make `row` the newest row of `key`."""
        slot = self._find(h, key)
        if slot >= 0:
            self._prev[row] = self._slots[slot]
            self._slots[slot] = row
            return
        if self._distinct + 1 > self._slots.size // 2:
            self._rehash(2 * self._slots.size)
            slot = self._find(h, key)
        self._slots[-1 - slot] = row
        self._distinct += 1

    def _rehash(self, size: int) -> None:
        """A table of `size` slots holding the same newest rows, swapped in at once."""
        table = np.full(size, EMPTY_SLOT, dtype=np.int64)
        self._insert(table, self._slots[self._slots != EMPTY_SLOT])
        self._slots = table

    def _insert(self, table: IntArray, rows: IntArray) -> None:
        """Point `table` at `rows`: distinct keys, none in the table yet."""
        mask = table.size - 1
        pending = rows
        slots = self._hashes[rows] & mask
        while pending.size:
            # Of the rows aiming at one empty slot, the one numpy writes last takes it (any
            # one will do: the read-back says which); the others probe on.
            free = table[slots] == EMPTY_SLOT
            table[slots[free]] = pending[free]
            placed = np.zeros(pending.size, dtype=bool)
            placed[free] = table[slots[free]] == pending[free]
            pending, slots = pending[~placed], (slots[~placed] + 1) & mask

    def _reserve(self, rows: int, size: int) -> None:
        if rows + 1 > self._offsets.size:
            capacity = max(2 * (rows + 1), 2 * self._offsets.size)
            self._offsets = _grown(self._offsets, capacity)
            self._hashes = _grown(self._hashes, capacity)
            self._prev = _grown(self._prev, capacity)
        if size > self._bytes.size:
            self._bytes = _grown(self._bytes, max(size, 2 * self._bytes.size))

    def take(self, rows: IntArray) -> PodKeys:
        """A new index of `rows` (renumbered from 0, distinct keys), e.g. a compaction."""
        out = PodKeys(self._hasher)
        starts, ends = self._offsets[rows], self._offsets[rows + 1]
        sizes = ends - starts
        offsets = np.zeros(rows.size + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        # Byte i of the new buffer is byte (i - new start + old start) of its row.
        source = np.arange(int(offsets[-1]), dtype=np.int64) + np.repeat(
            starts - offsets[:-1], sizes
        )
        out._reserve(rows.size, int(offsets[-1]))
        out._bytes[: offsets[-1]] = self._bytes[source]
        out._offsets[: rows.size + 1] = offsets
        out._hashes[: rows.size] = self._hashes[rows]
        out._prev[: rows.size] = NONE
        out.length = rows.size
        out._slots = np.full(_table_size(rows.size), EMPTY_SLOT, dtype=np.int64)
        out._insert(out._slots, np.arange(rows.size, dtype=np.int64))
        out._distinct = rows.size
        return out


def _table_size(keys: int) -> int:
    """Slots for `keys` at most a quarter full (a power of two, for `hash & mask`): the
    table is rebuilt at half full, so after a rebuild the keys may double first."""
    return max(MIN_SLOTS, 1 << (4 * keys).bit_length())


def _grown(data: np.ndarray, size: int) -> np.ndarray:
    """`data` in a buffer of `size`; the tail is uninitialised (written before it is read)."""
    grown = np.empty(size, dtype=data.dtype)
    grown[: data.size] = data
    return grown
