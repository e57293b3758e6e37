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
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["GATE", "SLICE", "Gate", "GateTimeout"]

SLICE = 0.005
"""Seconds a holder computes before `pause` hands the gate to a waiting call."""


class GateTimeout(Exception):
    """The gate was not had within the time given."""


class Gate:
    def __init__(self, slice_seconds: float = SLICE) -> None:
        self.slice = slice_seconds
        self._cond = threading.Condition(threading.Lock())
        self._holder: int | None = None
        self._depth = 0
        self._since = 0.0
        self._line: deque[object] = deque()

    # ------------------------------------------------------------------ plain use

    def acquire(self, timeout: float | None = None) -> bool:
        """Take the gate (in arrival order); False when `timeout` s passed first."""
        me = threading.get_ident()
        with self._cond:
            if self._holder == me:
                self._depth += 1
                return True
            ticket = object()
            self._line.append(ticket)
            if not self._cond.wait_for(
                lambda: self._holder is None and self._line[0] is ticket, timeout
            ):
                self._line.remove(ticket)
                self._cond.notify_all()  # the next in line may be free to go now
                return False
            self._line.popleft()
            self._holder, self._depth, self._since = me, 1, time.monotonic()
            return True

    def release(self) -> None:
        with self._cond:
            if self._holder != threading.get_ident():
                raise RuntimeError("the gate is not held by this thread")
            self._depth -= 1
            if self._depth == 0:
                self._holder = None
                self._cond.notify_all()

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
        if not self._line or not self.holds():
            return
        if time.monotonic() - self._since < self.slice:
            return
        self._take_back(self._let_go())

    def _let_go(self) -> int:
        with self._cond:
            depth, self._depth, self._holder = self._depth, 0, None
            self._cond.notify_all()
        return depth

    def _take_back(self, depth: int) -> None:
        self.acquire()
        with self._cond:
            self._depth = depth


GATE = Gate()
"""The process's gate (`server.admission` takes it around every placement-service call)."""
