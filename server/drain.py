"""The drain's promise: on SIGTERM every call already admitted — running or queued — is
answered before the grace period ends.

`begin(grace)` fixes the drain's end (now + grace, less a reserve for encoding and sending
the answers). From then on a call's budget ends there at the latest (`remaining`), so a
queued call that starts late gets what is left (the greedy's answer when that is under what
CP-SAT needs, and the greedy even when nothing is left), and at the end every call still
solving is told to stop (`watch`): CP-SAT returns its best answer so far, or the greedy's.
Only what is still running when the grace itself is over is cut off by grpc.
"""

from __future__ import annotations

import threading
import time

__all__ = ["Drain"]

RESERVE_SHARE = 0.2  # of the grace, kept for the answers after the solvers stop
RESERVE_MAX = 2.0  # s


class Drain:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._end: float | None = None
        self._stops: set[threading.Event] = set()
        self._timer: threading.Timer | None = None

    def begin(self, grace: float) -> None:
        """Start draining: calls must be done `grace` seconds from now."""
        with self._lock:
            if self._end is not None:
                return
            reserve = min(RESERVE_MAX, RESERVE_SHARE * grace)
            self._end = time.monotonic() + max(0.0, grace - reserve)
            self._timer = threading.Timer(max(0.0, grace - reserve), self._stop_all)
            self._timer.daemon = True
            self._timer.start()

    def remaining(self) -> float | None:
        """Seconds until the drain's end (None: not draining)."""
        with self._lock:
            return None if self._end is None else self._end - time.monotonic()

    def watch(self, stop: threading.Event) -> None:
        """Set `stop` when the drain ends (at once if it already has)."""
        with self._lock:
            over = self._end is not None and time.monotonic() >= self._end
            if not over:
                self._stops.add(stop)
        if over:
            stop.set()

    def forget(self, stop: threading.Event) -> None:
        with self._lock:
            self._stops.discard(stop)

    def _stop_all(self) -> None:
        with self._lock:
            stops, self._stops = list(self._stops), set()
        for stop in stops:
            stop.set()

    def close(self) -> None:
        with self._lock:
            timer = self._timer
        if timer is not None:
            timer.cancel()
