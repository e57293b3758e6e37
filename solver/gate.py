"""The compute gate: one call computes Python at a time; a native search steps outside.

Python threads share one interpreter lock, and numpy lets go of it around every large array
operation. With several calls computing at once, each let-go hands the lock to another
call and each return waits for it back (a convoy): measured in one process at 10,240
nodes, one thread answers 464 1-pod calls/s, four threads together 270 and 32 threads
215; behind this gate, 405 and 375.

A service that runs calls in threads takes the gate around each call (`GATE.held`, the
server's admission does). Inside, the solver

- steps outside it around CP-SAT's and the LP's searches (`GATE.outside`): native code that
  needs no Python runs beside the next call's compute, as before;
- offers it between units of long work (`GATE.pause`): when another call waits and this
  one has held the gate for `SLICE` seconds, it goes to the back of the line, so a
  1-second call does not hold a 2-ms call for a second.

Waiters are served in arrival order. Without a holder (the CLI, the library, a thread that
never took it) every method but `held` is a no-op. Re-entrant per thread.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["GATE", "SLICE", "Gate", "GateTimeout", "Slots"]

SLICE = 0.005
"""Seconds a holder computes before `pause` hands the gate to a waiting call."""


class GateTimeout(Exception):
    """The gate was not had within the time given."""


class Slots:
    """`n` holders at once; the others wait in arrival order, each keeping its place while
    it checks every `poll` s whether to give up (its client went away). A freed slot goes
    to the first in line: one wake-up, not one per waiter. (`threading.Semaphore` wakes
    any waiter, and a waiter polling with a timeout loses its place: under 32 clients a
    call could wait behind many later ones, p99 ~1 s.) The server's admission runs its
    calls in `Slots(workers)`; the compute gate is one slot with a holder."""

    def __init__(self, n: int) -> None:
        self._free = n
        self._lock = threading.Lock()
        self._line: deque[threading.Event] = deque()

    def acquire(
        self,
        timeout: float | None = None,
        give_up: Callable[[], bool] | None = None,
        poll: float = 0.05,
    ) -> bool:
        """A slot (True); False when `timeout` s passed first, or when `give_up()` (asked
        every `poll` s while waiting) says so."""
        with self._lock:
            if self._free > 0 and not self._line:
                self._free -= 1
                return True
            turn = threading.Event()
            self._line.append(turn)
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if end is None else end - time.monotonic()
            wait = poll if give_up is not None else left
            if left is not None and wait is not None:
                wait = min(wait, left)
            if turn.wait(None if wait is None else max(0.0, wait)):
                return True  # handed a slot by `_hand_on`
            if (left is not None and left <= 0) or (give_up is not None and give_up()):
                with self._lock:
                    if turn.is_set():  # handed a slot meanwhile: pass it on
                        self._hand_on()
                    else:
                        self._line.remove(turn)
                return False

    def release(self) -> None:
        with self._lock:
            self._hand_on()

    def waiting(self) -> int:
        """How many wait in line."""
        return len(self._line)

    def _hand_on(self) -> None:
        """To the first in line, or back to the free count (under the lock)."""
        if self._line:
            self._line.popleft().set()
        else:
            self._free += 1


class Gate:
    """One slot with a holder: re-entrant per thread, stepped out of around a search
    (`outside`) and offered between units of long work (`pause`)."""

    def __init__(self, slice_seconds: float = SLICE) -> None:
        self.slice = slice_seconds
        self._slot = Slots(1)
        # written only by the thread holding the slot
        self._holder: int | None = None
        self._depth = 0
        self._since = 0.0

    # ------------------------------------------------------------------ plain use

    def acquire(
        self,
        timeout: float | None = None,
        give_up: Callable[[], bool] | None = None,
        poll: float = 0.05,
    ) -> bool:
        """Take the gate (in arrival order, `Slots.acquire`); at once when this thread
        holds it already."""
        me = threading.get_ident()
        if self._holder == me:
            self._depth += 1
            return True
        if not self._slot.acquire(timeout, give_up, poll):
            return False
        self._holder, self._depth, self._since = me, 1, time.monotonic()
        return True

    def release(self) -> None:
        if self._holder != threading.get_ident():
            raise RuntimeError("the gate is not held by this thread")
        self._depth -= 1
        if self._depth == 0:
            self._let_go()

    @contextmanager
    def held(self, timeout: float | None = None) -> Iterator[None]:
        """The block runs holding the gate; GateTimeout when not had within `timeout`."""
        if not self.acquire(timeout):
            raise GateTimeout(f"the gate was not had within {timeout} s")
        try:
            yield
        finally:
            self.release()

    def holds(self) -> bool:
        """This thread holds the gate."""
        return self._holder == threading.get_ident()

    def waiting(self) -> int:
        """How many calls wait for the gate."""
        return self._slot.waiting()

    # ------------------------------------------------------------------ inside a call

    @contextmanager
    def outside(self) -> Iterator[None]:
        """The block runs without the gate (a native search); taken back after, at the
        back of the line. A no-op for a thread that does not hold it."""
        if not self.holds():
            yield
            return
        depth = self._let_go()
        try:
            yield
        finally:
            self._take_back(depth)

    def pause(self) -> None:
        """Hand the gate to the next call in line when one waits and this thread has held
        it for a slice; a no-op otherwise (two attribute reads)."""
        if not self._slot.waiting() or not self.holds():
            return
        if time.monotonic() - self._since < self.slice:
            return
        self._take_back(self._let_go())

    def _let_go(self) -> int:
        depth = self._depth
        self._holder, self._depth = None, 0
        self._slot.release()
        return depth

    def _take_back(self, depth: int) -> None:
        self._slot.acquire()
        self._holder, self._depth, self._since = threading.get_ident(), depth, time.monotonic()


GATE = Gate()
"""The process's gate (`server.admission` takes it around every placement-service call)."""
