"""The cyclic garbage collector paused while a bounded call runs.

A full collection walks every object the process holds: in a process that has imported
OR-Tools, numpy and pydantic and keeps a cluster, 50-100 ms — two deadlines' worth for a
50 ms call. A call allocates many short-lived containers and triggers such collections
without freeing anything (its objects die by reference count), so `schedule` holds the
collector off while it runs; the collector runs again after, when its thresholds next say
so. Holders are counted: the collector comes back when the last concurrent call ends.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]

_lock = threading.Lock()
_holders = 0
_was_enabled = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection inside the block (unless one was already off: left as found)."""
    global _holders, _was_enabled
    with _lock:
        if _holders == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _was_enabled:
                gc.enable()
