"""The store: the collector pause around large builds (the collector comes back on only
when the last overlapping build ends), and the byte budget with LRU eviction."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from server.store import (
    BIG_DELTA,
    NotFound,
    SnapshotStore,
    TooManySnapshots,
    collector_paused,
    estimated_bytes,
)
from solver.model import Node
from solver.snapshot import Snapshot


def test_small_builds_leave_the_collector_alone() -> None:
    with collector_paused(BIG_DELTA - 1):
        assert gc.isenabled()


def test_overlapping_large_builds_reenable_the_collector_after_the_last() -> None:
    first, second = collector_paused(BIG_DELTA), collector_paused(10 * BIG_DELTA)
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert not gc.isenabled()  # the second build still runs
    second.__exit__(None, None, None)
    assert gc.isenabled()


def test_a_failing_build_reenables_the_collector() -> None:
    try:
        with collector_paused(BIG_DELTA):
            assert not gc.isenabled()
            raise ValueError("bad input")
    except ValueError:
        pass
    assert gc.isenabled()


# ----------------------------------------------------------------------------- the byte budget


def _snapshot(nodes: int) -> Snapshot:
    return Snapshot.build([Node(name=f"n{i}", allocatable={"cpu": 1000}) for i in range(nodes)])


def test_storing_past_the_budget_evicts_the_least_recently_used() -> None:
    one = estimated_bytes(_snapshot(100))
    store = SnapshotStore(max_snapshots=10, max_bytes=3 * one)
    for name in ("a", "b", "c"):
        store.put(_snapshot(100), name)
    store.get("a")  # a is now the most recently used
    store.put(_snapshot(100), "d")
    assert store.get("a").id == "a" and store.get("d").id == "d"
    with pytest.raises(NotFound, match="evicted, least recently used"):
        store.get("b")
    with pytest.raises(NotFound) as never:
        store.get("zzz")
    assert "evicted" not in str(never.value)


def test_a_snapshot_larger_than_the_budget_is_refused_and_evicts_nothing() -> None:
    store = SnapshotStore(max_bytes=estimated_bytes(_snapshot(100)))
    store.put(_snapshot(100), "a")
    with pytest.raises(TooManySnapshots, match="over the store's budget"):
        store.put(_snapshot(1000), "big")
    assert store.get("a").id == "a"


def test_a_started_server_has_frozen_its_start_up_objects(start: Any) -> None:
    # A full collection over the imported modules costs ~30 ms: enough to miss a 50 ms
    # deadline (benchmarks/deadlines). Starting the server moves them out of its reach.
    gc.unfreeze()
    start()
    assert gc.get_freeze_count() > 0
