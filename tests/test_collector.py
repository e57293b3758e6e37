"""`solver.collector`: no cyclic collection while a `schedule` call runs (a full one can
outlast a 50 ms deadline), the collector back when the last overlapping holder ends, and a
collector the caller had turned off left off."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from server.store import BIG_DELTA
from server.store import collector_paused as build_paused
from solver import schedule
from solver.collector import collector_paused
from tests.builders import model, node, pod


@pytest.fixture(autouse=True)
def _enabled() -> Iterator[None]:
    gc.enable()
    yield
    gc.enable()


def test_schedule_runs_with_the_collector_off_and_gives_it_back(monkeypatch: Any) -> None:
    seen: list[bool] = []
    module = sys.modules["solver.schedule"]  # the package's `schedule` is the function
    monkeypatch.setattr(module, "verify", lambda *a: seen.append(gc.isenabled()) or [])
    schedule(model(node("n1").cpu("4").obj(), pod("p").requests(cpu="1").obj()), engine="greedy")
    assert seen == [False] and gc.isenabled()


def test_a_call_and_a_build_overlapping_give_the_collector_back_after_the_last() -> None:
    call, build = collector_paused(), build_paused(BIG_DELTA)
    call.__enter__()
    build.__enter__()
    call.__exit__(None, None, None)
    assert not gc.isenabled()  # the build still runs
    build.__exit__(None, None, None)
    assert gc.isenabled()


def test_a_collector_turned_off_by_the_caller_stays_off() -> None:
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()


def test_an_error_inside_gives_the_collector_back() -> None:
    with pytest.raises(ValueError), collector_paused():
        raise ValueError("bad input")
    assert gc.isenabled()
