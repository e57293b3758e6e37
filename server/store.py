"""The embedded in-memory snapshot store.

A snapshot is an immutable `solver.snapshot.Snapshot` and a generation (1 on the first
PutSnapshot, +1 on every PutSnapshot or UpdateSnapshot of that id). Writers build the next
generation (`Snapshot.apply`, in time proportional to the delta) and swap it in under the
lock, so readers (PlaceJob, Preempt, Enqueue) work on a generation no one changes under
them, without holding the lock while they solve.
"""

from __future__ import annotations

import ctypes
import gc
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from solver.collector import collector_paused as paused
from solver.problem import SHARED_BYTES_PER_NODE
from solver.snapshot import Delta, Snapshot

__all__ = [
    "NotFound",
    "Snapshot",
    "SnapshotStore",
    "StaleGeneration",
    "Stored",
    "TooManySnapshots",
    "collector_paused",
    "estimated_bytes",
    "settle",
]


class NotFound(Exception):
    """No snapshot has this id."""


class StaleGeneration(Exception):
    """The snapshot is not at the generation the caller expected."""


class TooManySnapshots(Exception):
    """The store holds `max_snapshots` already."""


@dataclass(frozen=True)
class Stored:
    id: str
    generation: int
    snapshot: Snapshot


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        trim: Callable[[int], int] = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc: nothing to hand back
        return None
    return trim


_TRIM = _malloc_trim()


def settle() -> None:
    """Move everything alive now out of the garbage collector's young generations (a stored
    snapshot lives long, and rescanning it on every call costs more than the call), and hand
    the heap a request's temporaries used back to the system (glibc keeps freed pages
    otherwise: after a 100k-pod PutSnapshot, 275 MB resident instead of 128 MB)."""
    gc.collect()
    if _TRIM is not None:
        _TRIM(0)
    gc.freeze()


SETTLE_DELAY = 0.2  # s: the request message that built the snapshot is freed by then
BIG_DELTA = 10_000  # pods: an update this large is settled like a put


@contextmanager
def collector_paused(pods: int) -> Iterator[None]:
    """Around building a snapshot or delta of `pods` pods: at BIG_DELTA and above, the
    collector would rescan the build's young objects again and again (~10% of a 100k-pod
    bind) only to find no garbage; `settle` collects once afterwards. (Counted,
    `solver.collector`: builds overlap.)"""
    if pods < BIG_DELTA:
        yield
        return
    with paused():
        yield


def _settle_soon() -> None:
    """`settle` once the call that stored the snapshot has returned (and its request, often
    larger than the snapshot, has been freed)."""
    timer = threading.Timer(SETTLE_DELAY, settle)
    timer.daemon = True
    timer.start()


# Resident bytes per item of a stored snapshot, from benchmarks/scale (10,240 nodes, 0 to
# 200k running pods: ~3.2 KB per node, ~320-500 B per running pod); pending pods are full
# model objects. Per node also the greedy's fill rows the snapshot may keep between calls
# (`solver.problem.SharedRows`, at most SHARED_BYTES_PER_NODE).
BYTES_PER_NODE = 3_200 + SHARED_BYTES_PER_NODE
BYTES_PER_RUNNING_POD = 500
BYTES_PER_PENDING_POD = 2_000
EVICTED_REMEMBERED = 1_024  # ids whose NOT_FOUND says they were evicted


def estimated_bytes(snapshot: Snapshot) -> int:
    return (
        BYTES_PER_NODE * len(snapshot.nodes)
        + BYTES_PER_RUNNING_POD * len(snapshot.running)
        + BYTES_PER_PENDING_POD * len(snapshot.pending)
    )


class SnapshotStore:
    """Snapshots by id, at most `max_snapshots` of them and `max_bytes` (estimated) in all:
    storing past the byte budget evicts the least recently used others first."""

    def __init__(self, max_snapshots: int = 64, max_bytes: int | None = None) -> None:
        self._lock = threading.Lock()
        self._snapshots: OrderedDict[str, Stored] = OrderedDict()  # least recently used first
        self._bytes: dict[str, int] = {}
        self._evicted: OrderedDict[str, None] = OrderedDict()
        self.max_snapshots = max_snapshots
        self.max_bytes = max_bytes

    def _make_room(self, snapshot_id: str, size: int) -> None:
        """Evict others, least recently used first, until `size` more bytes fit (caller
        holds the lock); TooManySnapshots when `size` alone is over the budget."""
        if self.max_bytes is None:
            return
        if size > self.max_bytes:
            raise TooManySnapshots(
                f"the snapshot needs ~{size >> 20} MiB, over the store's budget of "
                f"{self.max_bytes >> 20} MiB (--max-snapshot-mb)"
            )
        used = sum(b for sid, b in self._bytes.items() if sid != snapshot_id)
        for victim in [sid for sid in self._snapshots if sid != snapshot_id]:
            if used + size <= self.max_bytes:
                break
            used -= self._bytes.pop(victim)
            del self._snapshots[victim]
            self._evicted[victim] = None
            if len(self._evicted) > EVICTED_REMEMBERED:
                self._evicted.popitem(last=False)

    def _store(self, stored: Stored) -> None:
        size = estimated_bytes(stored.snapshot)
        self._make_room(stored.id, size)
        self._snapshots[stored.id] = stored
        self._snapshots.move_to_end(stored.id)
        self._bytes[stored.id] = size
        self._evicted.pop(stored.id, None)

    def __len__(self) -> int:
        return len(self._snapshots)

    def listing(self) -> list[tuple[str, int, Snapshot]]:
        """(id, generation, snapshot) of every stored snapshot (for the metrics scrape)."""
        with self._lock:
            return [(s.id, s.generation, s.snapshot) for s in self._snapshots.values()]

    def sizes(self) -> tuple[int, int]:
        """(nodes, pods) summed over every snapshot."""
        with self._lock:
            snaps = list(self._snapshots.values())
        return sum(len(s.snapshot.nodes) for s in snaps), sum(len(s.snapshot) for s in snaps)

    def _current(self, snapshot_id: str, expected_generation: int) -> Stored:
        """The stored snapshot (caller holds the lock); NotFound, or StaleGeneration when
        `expected_generation` is not 0 and differs."""
        stored = self._snapshots.get(snapshot_id)
        if stored is None:
            why = (
                " (evicted, least recently used, to stay within --max-snapshot-mb)"
                if snapshot_id in self._evicted
                else ""
            )
            raise NotFound(f"snapshot {snapshot_id[:128]!r} not found{why}")
        self._snapshots.move_to_end(snapshot_id)
        if expected_generation and stored.generation != expected_generation:
            raise StaleGeneration(
                f"snapshot {snapshot_id[:128]!r} is at generation {stored.generation}, "
                f"not {expected_generation}"
            )
        return stored

    def get(self, snapshot_id: str, expected_generation: int = 0) -> Stored:
        with self._lock:
            return self._current(snapshot_id, expected_generation)

    def put(self, snapshot: Snapshot, snapshot_id: str = "") -> Stored:
        with self._lock:
            snapshot_id = snapshot_id or uuid.uuid4().hex
            old = self._snapshots.get(snapshot_id)
            if old is None and len(self._snapshots) >= self.max_snapshots:
                raise TooManySnapshots(
                    f"the store holds {self.max_snapshots} snapshots; delete one first"
                )
            stored = Stored(snapshot_id, old.generation + 1 if old else 1, snapshot)
            self._store(stored)
        _settle_soon()
        return stored

    def delete(self, snapshot_id: str) -> None:
        with self._lock:
            if self._snapshots.pop(snapshot_id, None) is None:
                raise NotFound(f"snapshot {snapshot_id[:128]!r} not found")
            self._bytes.pop(snapshot_id, None)

    def update(self, snapshot_id: str, expected_generation: int, delta: Delta) -> Stored:
        """Apply `delta` atomically; raises DeltaError, NotFound, StaleGeneration."""
        with self._lock:
            old = self._current(snapshot_id, expected_generation)
            stored = Stored(old.id, old.generation + 1, old.snapshot.apply(delta))
            self._store(stored)
        if len(delta.upsert_pods) + len(delta.remove_pods) + len(delta.bindings) >= BIG_DELTA:
            _settle_soon()
        return stored
