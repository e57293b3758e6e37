"""The scheduler's garbage-collector policy (`clients/scheduler/heap.py`)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from clients.scheduler.heap import Heap


@pytest.fixture(autouse=True)
def _restored() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.unfreeze()  # other tests' schedulers settle in this process too
    yield
    gc.unfreeze()
    if enabled:
        gc.enable()


def test_paused_until_the_first_settle_then_each_settle_freezes_the_survivors() -> None:
    heap = Heap()
    heap.pause()
    assert not gc.isenabled()
    kept = [[i] for i in range(1000)]
    heap.settle()
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    assert frozen >= len(kept)  # the survivors are out of the collector's sight
    cycle: list[object] = []
    cycle.append(cycle)  # a reference cycle that dies before the next settle
    del cycle
    heap.settle()
    assert gc.garbage == []
    # the survivors frozen again (not `>= frozen`: a Heap of another thread of the test
    # process may thaw between the two settles, and the dead cycle leaves the count)
    assert gc.get_freeze_count() >= len(kept)


class _Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the collector frees it


def test_a_refresh_thaws_the_frozen_objects_so_old_cycles_are_collected() -> None:
    old = _Node()
    dead = weakref.ref(old)
    Heap(refresh=1e9).settle()  # frozen while alive
    del old  # garbage now, but frozen: a settle without a thaw does not find it
    Heap(refresh=1e9).settle()
    assert dead() is not None
    Heap(refresh=0.0).settle()  # the refresh thaws, then collects everything once
    assert dead() is None
    assert gc.get_freeze_count() > 0  # and freezes the survivors again


def test_resume_turns_the_collector_back_on_without_collecting() -> None:
    heap = Heap()
    heap.pause()
    heap.resume()
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0


def test_pause_leaves_a_disabled_collector_as_it_was() -> None:
    gc.disable()
    heap = Heap()
    heap.pause()
    heap.settle()
    assert not gc.isenabled()  # it was off before the pause: settle does not turn it on
