"""The garbage collector in a scheduler that holds a whole cluster.

The mirror keeps every watched object (100,000 running pods are millions of dicts and
lists), and Python's full collection walks every tracked object the process holds: in the
front-end benchmark (5,000 nodes, 100,000 running pods, 1,000 pods/s offered) 32 full
passes took 9.1 of the scheduler's 22.3 CPU seconds, 284 ms each, and the young passes
2.9 more, each rescanning what the watches had just read.

So each cycle ends with `Heap.settle`: one collection, which walks only what is younger
than the last settle (everything older is frozen), then `gc.freeze()`, which moves what
survived out of the collector's sight (an O(1) list splice). Acyclic objects that die later
(a pod's dict replaced by its next event) are still freed by their reference counts; only
reference cycles that become garbage after being frozen wait, so every `REFRESH` seconds the
frozen objects are thawed first and that settle walks everything once.

While the watches first list the cluster and the first snapshot is built from it, the
collector is off (`pause`): each full pass walks the mirror and the snapshot as they grow,
and that cost the scheduler 7 CPU seconds of that benchmark's start-up. The settle after
the first snapshot is put turns it back on.
"""

from __future__ import annotations

import gc
import time

__all__ = ["REFRESH", "Heap"]

REFRESH = 300.0
"""Seconds between thaws: how long a reference cycle that became garbage after being frozen
may wait to be collected (one full walk of the mirror, ~0.3 s at 100,000 pods)."""


class Heap:
    def __init__(self, refresh: float = REFRESH) -> None:
        self.refresh = refresh
        self._thawed = time.monotonic()
        self._paused = False

    def pause(self) -> None:
        """No collection until the next `settle` (the watches' first lists)."""
        if gc.isenabled():
            gc.disable()
            self._paused = True

    def resume(self) -> None:
        """The collector as it was before `pause`."""
        if self._paused:
            gc.enable()
            self._paused = False

    def settle(self) -> None:
        """After a cycle: collect this cycle's garbage, freeze what survives."""
        self.resume()
        now = time.monotonic()
        if now - self._thawed >= self.refresh:
            gc.unfreeze()
            self._thawed = now
        gc.collect()
        gc.freeze()
