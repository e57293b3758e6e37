"""`solver.collector`: no full collection while a `schedule` call runs (one can outlast a
50 ms deadline) while the young generations still free a call's reference cycles; the
whole collector paused around large builds; each given back as it was when the last
overlapping holder ends."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from server.store import BIG_DELTA
from server.store import collector_paused as build_paused
from solver import schedule
from solver.collector import HELD_THRESHOLD, collector_paused, full_collections_held
from tests.builders import model, node, pod


@pytest.fixture(autouse=True)
def _as_found() -> Iterator[None]:
    threshold = gc.get_threshold()
    gc.enable()
    yield
    gc.enable()
    gc.set_threshold(*threshold)


def test_schedule_holds_full_collections_off_and_gives_them_back(monkeypatch: Any) -> None:
    seen: list[tuple[bool, int]] = []
    module = sys.modules["solver.schedule"]  # the package's `schedule` is the function

    def spy(*a: Any) -> list[str]:
        seen.append((gc.isenabled(), gc.get_threshold()[2]))
        return []

    monkeypatch.setattr(module, "verify", spy)
    before = gc.get_threshold()
    schedule(model(node("n1").cpu("4").obj(), pod("p").requests(cpu="1").obj()), engine="greedy")
    assert seen == [(True, HELD_THRESHOLD)]  # young passes on, the full one held
    assert gc.get_threshold() == before


def test_a_calls_reference_cycles_die_young_while_full_passes_are_held() -> None:
    class Cycle:
        def __init__(self) -> None:
            self.me = self

    with full_collections_held():
        for _ in range(50_000):
            Cycle()
        alive = sum(isinstance(o, Cycle) for o in gc.get_objects())
        assert alive < 5_000  # with the collector off, all 50,000 would still be here


def test_overlapping_holders_give_the_threshold_back_after_the_last() -> None:
    before = gc.get_threshold()
    first, second = full_collections_held(), full_collections_held()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert gc.get_threshold()[2] == HELD_THRESHOLD  # the second call still runs
    second.__exit__(None, None, None)
    assert gc.get_threshold() == before


def test_overlapping_builds_give_the_collector_back_after_the_last() -> None:
    outer, build = collector_paused(), build_paused(BIG_DELTA)
    outer.__enter__()
    build.__enter__()
    outer.__exit__(None, None, None)
    assert not gc.isenabled()  # the build still runs
    build.__exit__(None, None, None)
    assert gc.isenabled()


def test_full_passes_run_again_when_calls_keep_overlapping(monkeypatch: Any) -> None:
    before = gc.get_threshold()
    first = full_collections_held()
    first.__enter__()
    monkeypatch.setattr("solver.collector.MAX_HELD", -1.0)  # as if held for long
    with full_collections_held():
        assert gc.get_threshold() == before  # released for whoever runs now
    first.__exit__(None, None, None)
    assert gc.get_threshold() == before


def test_a_collector_turned_off_by_the_caller_stays_off() -> None:
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()


def test_an_error_inside_gives_both_back() -> None:
    before = gc.get_threshold()
    with pytest.raises(ValueError), full_collections_held(), collector_paused():
        raise ValueError("bad input")
    assert gc.isenabled() and gc.get_threshold() == before
