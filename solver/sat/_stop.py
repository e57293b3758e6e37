"""`stop_on`: a threading.Event that stops a CP-SAT search from outside."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from ortools.sat.python import cp_model

__all__ = ["stop_on"]


@contextmanager
def stop_on(stop: threading.Event | None, solver: cp_model.CpSolver) -> Iterator[None]:
    """While the block runs, `stop` being set stops `solver`'s search (from a watcher
    thread: CP-SAT's stop_search is safe to call from anywhere)."""
    if stop is None:
        yield
        return
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            if stop.wait(0.05):
                solver.stop_search()
                return

    watcher = threading.Thread(target=watch, name="cpsat-stop", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()
