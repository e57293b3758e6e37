"""The garbage collector's full passes held off while a bounded call runs, and the whole
collector paused around large builds.

A full collection walks every object the process holds: in a process that has imported
OR-Tools, numpy and pydantic and keeps a cluster, 50-150 ms — more than a 50 ms deadline.
`schedule` runs under `full_collections_held`: the young generations are still collected
(an `auto` call leaves ~1,100 objects in reference cycles, CP-SAT's model wrappers, and
they die young), only the full pass waits until no call runs (or, while calls keep
overlapping, `MAX_HELD` seconds). `collector_paused` turns the
collector off altogether, for building a snapshot of many thousand pods (the young passes
would rescan the build again and again, finding nothing). Holders of each are counted:
the collector comes back as it was when the last overlapping holder ends.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused", "full_collections_held"]

HELD_THRESHOLD = 2**30  # gen-1 passes before a full one: never, in practice
MAX_HELD = 10.0
"""Seconds full passes stay held while calls keep overlapping; past it they run again until
no call runs (what survives the young passes, reference cycles included, stays bounded)."""

_lock = threading.Lock()
_paused = 0
_was_enabled = False
_held = 0
_held_since = 0.0
_full_threshold = 0


@contextmanager
def full_collections_held() -> Iterator[None]:
    """No full (generation 2) collection inside the block; young ones run as usual."""
    global _held, _held_since, _full_threshold
    with _lock:
        young, middle, full = gc.get_threshold()
        if _held == 0:
            _full_threshold, _held_since = full, time.monotonic()
            gc.set_threshold(young, middle, HELD_THRESHOLD)
        elif full == HELD_THRESHOLD and time.monotonic() - _held_since > MAX_HELD:
            gc.set_threshold(young, middle, _full_threshold)  # held too long: let them run
        _held += 1
    try:
        yield
    finally:
        with _lock:
            _held -= 1
            if _held == 0:
                young, middle, _ = gc.get_threshold()
                gc.set_threshold(young, middle, _full_threshold)


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection inside the block (unless one was already off: left as found)."""
    global _paused, _was_enabled
    with _lock:
        if _paused == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _paused += 1
    try:
        yield
    finally:
        with _lock:
            _paused -= 1
            if _paused == 0 and _was_enabled:
                gc.enable()
