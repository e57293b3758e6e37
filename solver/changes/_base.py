"""What every kind of change shares: the Change, the check that the gang runs, the search
for the smallest size."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from solver.config import SchedulerConf
from solver.decision import Decision
from solver.model import (
    KUEUE_ANNOTATIONS,
    KUEUE_PODSET_LABEL,
)
from solver.schedule import schedule, solve
from solver.snapshot import Delta, Snapshot, Workload

MAX_NODES = 4096
"""The most nodes a `nodes` change may add."""
MAX_MOVES = 100
"""The most running pods a `moves` change may move."""
MAX_MOVES_RUNNING = 20_000
"""Past this many running pods no `moves` change is sought: the defragmentation planner's
input (O(running pods), in Python) would not fit a call's time."""
SPEC = "gang.scheduling.koordinator.sh/network-topology-spec"
SLICE_SIZE = KUEUE_ANNOTATIONS.SLICE_SIZE
POD_SET = KUEUE_PODSET_LABEL
HOST = "kubernetes.io/hostname"


@dataclass(frozen=True)
class Change:
    """One change that lets the gang run, checked; `size` in its unit (nodes, base units
    of a quota dimension, members)."""

    kind: str
    text: str
    size: int
    target: str = ""  # what it changes: the queue (several joined by ","), the node
    #   copied, the gang
    dimension: str = ""  # quota: the dimension raised

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "change": self.text,
            "size": self.size,
            "target": self.target,
            "dimension": self.dimension,
        }


class OutOfTime(Exception):
    """The deadline passed before a change was sized: that kind is left out."""


Runs = Callable[[Delta], bool]
Sized = tuple[Change, Delta]


def alone(snapshot: Snapshot, gang: str) -> Workload:
    """The gang alone as a call's workload (a pod without a PodGroup is its own gang)."""
    pod = snapshot.pending.get(gang)
    if pod is not None and pod.gang == gang:
        return Workload.of(snapshot, pods=[pod])
    return Workload.of(snapshot, gang_ids=[gang])


def _runs(
    snapshot: Snapshot, conf: SchedulerConf, gang: str, time_limit: float, verified: bool
) -> bool:
    d: Decision = (schedule if verified else solve)(
        snapshot, conf, workload=alone(snapshot, gang), engine="auto", time_limit=time_limit,
        workers=1,
    )  # fmt: skip
    return d.gang_placed(gang)


def _smallest(fits: Callable[[int], bool], top: int, start: int = 1) -> int | None:
    """The smallest k in start..top with fits(k), fits monotone (`start`: a proven lower
    bound); None when top does not fit. Steps grow geometrically from `start`, then bisect."""
    start = max(1, min(start, top))
    lo = hi = start  # lo: the smallest k not yet ruled out
    while not fits(hi):
        if hi >= top:
            return None
        lo = hi + 1
        hi = min(top, start + 2 * (hi - start + 1) - 1)
    while lo < hi:
        mid = (lo + hi) // 2
        if fits(mid):
            hi = mid
        else:
            lo = mid + 1
    return hi
