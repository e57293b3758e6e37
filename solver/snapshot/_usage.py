"""Totals over the running pods, kept current by deltas: the snapshot's derived usage.

    used[n, r]            requests of the pods running on node n
    gang_count[g]         running pods of named gang g;  gang_requests[g, r], gang_cards[g, c],
                          gang_plain[g, r] (requests of its pods without card demand)
    queue_requests[q, r]  requests of the pods charged to queue q;  queue_plain[q, r] the
                          same over pods without card demand;  queue_cards[q, c] cards

A running pod is charged to its named gang's `spec.queue` when the gang names one, else to
the queue its own `scheduling.volcano.sh/queue-name` annotation names (Volcano creates a
pod's PodGroup from that annotation), else to none. `build` computes everything from the
live rows; `apply` moves totals by the rows a delta added and retired, in time proportional
to the delta. A property test holds `apply` equal to `build` after random delta sequences.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from solver.arrays import IntArray
from solver.snapshot._columns import RunningPods
from solver.snapshot._intern import NONE

__all__ = ["Usage"]


def _grow(a: IntArray, shape: tuple[int, ...]) -> IntArray:
    """`a` zero-padded to `shape` (a new array even when no padding is needed)."""
    out = np.zeros(shape, dtype=np.int64)
    out[tuple(slice(0, s) for s in a.shape)] = a
    return out


@dataclass(frozen=True, eq=False)
class Usage:
    used: IntArray  # [N, R]
    gang_count: IntArray  # [G]
    gang_requests: IntArray  # [G, R]
    gang_cards: IntArray  # [G, C]
    gang_plain: IntArray  # [G, R]
    queue_requests: IntArray  # [Q, R]
    queue_plain: IntArray  # [Q, R]
    queue_cards: IntArray  # [Q, C]

    def __post_init__(self) -> None:
        for value in vars(self).values():
            value.flags.writeable = False

    @staticmethod
    def shape(running: RunningPods) -> dict[str, tuple[int, ...]]:
        n, r = len(running.nodes), len(running.resources)
        g = len(running.gang_names)
        q, c = len(running.queue_names), len(running.card_names)
        return {
            "used": (n, r),
            "gang_count": (g,),
            "gang_requests": (g, r),
            "gang_cards": (g, c),
            "gang_plain": (g, r),
            "queue_requests": (q, r),
            "queue_plain": (q, r),
            "queue_cards": (q, c),
        }

    @classmethod
    def build(cls, running: RunningPods, gang_queue: npt.NDArray[np.int32]) -> Usage:
        """Every total from the live rows (the reference `apply` must agree with)."""
        zero = {k: np.zeros(s, dtype=np.int64) for k, s in cls.shape(running).items()}
        _add(zero, running, running.rows(), gang_queue, 1)
        return cls(**zero)

    def apply(
        self,
        running: RunningPods,
        added: IntArray,
        retired: IntArray,
        gang_queue: npt.NDArray[np.int32],
    ) -> Usage:
        """The totals of `running`, given that it differs from this usage's generation by
        the rows `added` and `retired` (same lineage, same nodes, same gang queues)."""
        arrays = {k: _grow(getattr(self, k), s) for k, s in self.shape(running).items()}
        _add(arrays, running, retired, gang_queue, -1)
        _add(arrays, running, added, gang_queue, 1)
        return Usage(**arrays)


def charged_queue(
    running: RunningPods, rows: IntArray, gang_queue: npt.NDArray[np.int32]
) -> IntArray:
    """The queue each row is charged to (see the module docstring), NONE for none."""
    gangs = running.gang[rows].astype(np.int64)
    own = running.queue[rows].astype(np.int64)
    if not gang_queue.size:
        return own
    named = np.where(gangs >= 0, gang_queue[np.clip(gangs, 0, gang_queue.size - 1)], NONE)
    named = np.where(gangs < gang_queue.size, named, NONE)
    return np.where(named >= 0, named, own)


def _add(
    arrays: dict[str, IntArray],
    running: RunningPods,
    rows: IntArray,
    gang_queue: npt.NDArray[np.int32],
    sign: int,
) -> None:
    if rows.size == 0:
        return
    width = arrays["used"].shape[1]
    requests = sign * running.requests()[rows][:, :width]
    if requests.shape[1] < width:
        requests = _grow(requests, (len(rows), width))
    nodes = running.node[rows].astype(np.int64)
    on_node = nodes >= 0
    np.add.at(arrays["used"], nodes[on_node], requests[on_node])
    card = running.card_type[rows].astype(np.int64)
    cards = sign * running.card_count[rows]
    has_card = card >= 0
    gangs = running.gang[rows].astype(np.int64)
    named = gangs >= 0
    np.add.at(arrays["gang_count"], gangs[named], sign)
    np.add.at(arrays["gang_requests"], gangs[named], requests[named])
    both = named & has_card
    np.add.at(arrays["gang_cards"], (gangs[both], card[both]), cards[both])
    plain = named & ~has_card
    np.add.at(arrays["gang_plain"], gangs[plain], requests[plain])
    queue = charged_queue(running, rows, gang_queue)
    queued = queue >= 0
    np.add.at(arrays["queue_requests"], queue[queued], requests[queued])
    plain = queued & ~has_card
    np.add.at(arrays["queue_plain"], queue[plain], requests[plain])
    both = queued & has_card
    np.add.at(arrays["queue_cards"], (queue[both], card[both]), cards[both])
