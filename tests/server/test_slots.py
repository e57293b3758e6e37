"""`solver.gate.Slots` (the server's admission): the admitted calls get their turn to run in arrival order,
keep their place while they poll for their client, and leave the line when it has gone."""

from __future__ import annotations

import threading
import time

from solver.gate import Slots


def _wait_line(slots: Slots, n: int) -> None:
    deadline = time.monotonic() + 5
    while slots.waiting() < n:
        assert time.monotonic() < deadline
        time.sleep(0.001)


def test_waiting_calls_run_in_arrival_order_and_a_gone_one_leaves() -> None:
    slots, order, gone = Slots(1), [], threading.Event()
    assert slots.acquire(give_up=lambda: False, poll=0.01)
    threads = []
    for name in "abcd":
        give_up = gone.is_set if name == "b" else (lambda: False)

        def run(name: str = name, give_up=give_up) -> None:  # type: ignore[no-untyped-def]
            if slots.acquire(give_up=give_up, poll=0.01):
                order.append(name)
                time.sleep(0.01)
                slots.release()
            else:
                order.append(f"{name} gave up")

        threads.append(threading.Thread(target=run))
        threads[-1].start()
        _wait_line(slots, len(threads))
    time.sleep(0.05)  # polls pass: nobody jumps the line
    gone.set()
    deadline = time.monotonic() + 5
    while "b gave up" not in order:
        assert time.monotonic() < deadline
        time.sleep(0.001)
    slots.release()
    for thread in threads:
        thread.join(5)
    assert order == ["b gave up", "a", "c", "d"]
