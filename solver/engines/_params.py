"""Solver budget and determinism knobs shared by every engine."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

__all__ = ["SolveParams", "default_workers"]

MAX_DEFAULT_WORKERS = 8


def default_workers() -> int:
    """The machine's cores, capped: CP-SAT would otherwise take every core it sees."""
    return max(1, min(os.cpu_count() or 1, MAX_DEFAULT_WORKERS))


@dataclass(frozen=True)
class SolveParams:
    time_limit: float = 10.0  # seconds for the whole engine call (greedy + CP-SAT)
    workers: int = 0  # CP-SAT num_workers; 0 = default_workers()
    seed: int = 0  # CP-SAT random_seed; with workers=1 the answer is deterministic
    stop: threading.Event | None = None  # set when the caller has gone: stop and answer

    @property
    def stopped(self) -> bool:
        return self.stop is not None and self.stop.is_set()

    @property
    def num_workers(self) -> int:
        return self.workers if self.workers > 0 else default_workers()
