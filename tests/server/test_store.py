"""The store's collector pause: large builds run with the cyclic collector off, and it
comes back on only when the last overlapping build ends."""

from __future__ import annotations

import gc

from server.store import BIG_DELTA, collector_paused


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
