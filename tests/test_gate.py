"""`solver.gate`: one holder at a time, waiters served in arrival order, re-entrant; a holder
steps outside around a search and hands over between units of long work."""

from __future__ import annotations

import threading
import time

import pytest

from solver.gate import Gate, GateTimeout


def _waiter(gate: Gate, name: str, log: list[str], hold: float = 0.0) -> threading.Thread:
    def run() -> None:
        with gate.held():
            log.append(name)
            time.sleep(hold)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _line_length(gate: Gate, n: int) -> None:
    deadline = time.monotonic() + 5
    while gate.waiting() < n:
        assert time.monotonic() < deadline, "waiters did not line up"
        time.sleep(0.001)


def test_waiters_are_served_in_arrival_order() -> None:
    gate, log = Gate(), []
    with gate.held():
        threads = []
        for name in "abcde":
            threads.append(_waiter(gate, name, log))
            _line_length(gate, len(threads))
    for thread in threads:
        thread.join(5)
    assert log == list("abcde")


def test_the_gate_is_reentrant_and_released_by_its_holder_only() -> None:
    gate = Gate()
    with gate.held(), gate.held():
        assert gate.holds()
    assert not gate.holds()
    with pytest.raises(RuntimeError):
        gate.release()


def test_a_waiter_gives_up_after_its_timeout_and_the_line_moves_on() -> None:
    gate, log = Gate(), []
    with gate.held():
        errors = []

        def impatient() -> None:
            try:
                with gate.held(timeout=0.05):
                    log.append("impatient")
            except GateTimeout as err:
                errors.append(err)

        first = threading.Thread(target=impatient)
        first.start()
        _line_length(gate, 1)
        second = _waiter(gate, "patient", log)
        _line_length(gate, 2)
        first.join(5)
        assert errors and gate.waiting() == 1
    second.join(5)
    assert log == ["patient"]


def test_outside_lets_another_call_compute_during_a_search() -> None:
    gate, log = Gate(), []
    with gate.held():
        other = _waiter(gate, "other", log)
        _line_length(gate, 1)
        with gate.outside():  # e.g. CP-SAT's search: the waiting call runs meanwhile
            other.join(5)
            assert log == ["other"]
        assert gate.holds()
    assert not gate.holds()


def test_pause_hands_over_after_a_slice_only_when_someone_waits() -> None:
    gate, log = Gate(slice_seconds=0.0), []
    with gate.held():
        gate.pause()  # nobody waits: keeps the gate
        assert gate.holds()
        other = _waiter(gate, "other", log)
        _line_length(gate, 1)
        gate.pause()  # the waiting call computes, then this one goes on
        assert log == ["other"] and gate.holds()
    other.join(5)
    slow, log2 = Gate(slice_seconds=60.0), []
    with slow.held():
        waiting = _waiter(slow, "later", log2)
        _line_length(slow, 1)
        slow.pause()  # within its slice: keeps the gate
        assert log2 == []
    waiting.join(5)
    assert log2 == ["later"]


def test_without_a_holder_outside_and_pause_do_nothing() -> None:
    gate = Gate()
    gate.pause()
    with gate.outside():
        assert not gate.holds()


def test_a_waiter_that_polls_keeps_its_place_and_can_give_up() -> None:
    """The server's waiters check every `poll` that their client is there: they keep
    their place in line meanwhile, and one whose client went leaves the line."""
    gate, log = Gate(), []
    gone = threading.Event()
    with gate.held():
        results: list[bool] = []

        def polling(name: str, give_up: threading.Event | None) -> None:
            ok = gate.acquire(give_up=(give_up.is_set if give_up else None), poll=0.01)
            results.append(ok)
            if ok:
                log.append(name)
                gate.release()

        first = threading.Thread(target=polling, args=("first", None))
        first.start()
        _line_length(gate, 1)
        leaving = threading.Thread(target=polling, args=("leaving", gone))
        leaving.start()
        _line_length(gate, 2)
        third = _waiter(gate, "third", log)
        _line_length(gate, 3)
        time.sleep(0.05)  # several polls: nobody loses or jumps a place
        gone.set()
        leaving.join(5)
        assert results == [False] and gate.waiting() == 2
    first.join(5)
    third.join(5)
    assert log == ["first", "third"]
