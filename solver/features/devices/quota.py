"""GPU shares in queue quotas: a fractional GPU counts as its share, all the way up.

While a share is in play (a pending pod of the call or a running pod asks the
device-sharing way — a fraction, or a KAI/openb/Koordinator/HAMi request of whole GPUs), the `capacity` plugin's quotas count `nvidia.com/gpu` in milli-GPUs under the
dimension `nvidia.com/gpu-milli` (`solver.model.gpu_milli`): capabilities, deserved and
guarantee × 1000, whole-GPU pods × 1000, a share its compute share (else its memory share)
— never 0, never a whole device. Otherwise nothing changes.

Running pods' shares are summed once per snapshot generation: per queue and per named gang,
the milli-GPUs beyond 1000 × their `nvidia.com/gpu` requests (which the snapshot's usage
already totals).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from solver.model import DEVICE_ANNOTATIONS, SHARE_RESOURCES, any_sharing, gpu_milli
from solver.problem import IntArray
from solver.snapshot import NONE, Fact, Snapshot, Workload, charged_queue

__all__ = ["SHARE_FACT", "RunningShares", "running_shares", "shares_in_play"]

_SHARE_KEYS = ("gpu-fraction", "gpu-memory", "alibabacloud.com/gpu-milli")


def _has_share(_labels: Mapping[str, str], annotations: Mapping[str, str]) -> str | None:
    return "1" if any(k in annotations for k in _SHARE_KEYS) else None


SHARE_FACT = Fact("devices.share", _has_share, DEVICE_ANNOTATIONS)


@dataclass(frozen=True, eq=False)
class RunningShares:
    fractional: bool  # some running pod asks the device-sharing way
    queue_extra: IntArray  # [Q] milli-GPUs beyond 1000 × nvidia.com/gpu requests
    gang_extra: IntArray  # [G] the same per named gang


def _build(snapshot: Snapshot) -> RunningShares:
    running = snapshot.running
    cols = running.requests(SHARE_RESOURCES)
    candidates = cols[:, 1:].any(axis=1) if cols.size else np.zeros(running.length, dtype=bool)
    if "devices.share" in running.schema.names:
        candidates = candidates | (running.fact("devices.share") != NONE)
    rows = np.flatnonzero(candidates & running.alive)
    extra = np.zeros(rows.size, dtype=np.int64)
    fractional = False
    for i, row in enumerate(rows.tolist()):
        requests = dict(zip(SHARE_RESOURCES, cols[row].tolist(), strict=True))
        milli, share = gpu_milli(requests, running.annotations(row))
        extra[i] = milli - 1000 * requests[SHARE_RESOURCES[0]]
        fractional = fractional or share
    queues = charged_queue(running, rows, snapshot.gang_queue)
    keep = queues != NONE
    queue_extra = np.bincount(
        queues[keep], weights=extra[keep], minlength=len(running.queue_names)
    ).astype(np.int64)
    gangs = running.gang[rows].astype(np.int64)
    named = gangs >= 0
    gang_extra = np.bincount(
        gangs[named], weights=extra[named], minlength=len(running.gang_names)
    ).astype(np.int64)
    return RunningShares(fractional, queue_extra, gang_extra)


def running_shares(snapshot: Snapshot) -> RunningShares:
    return snapshot.memo(("devices", "running shares"), lambda: _build(snapshot))


def shares_in_play(snapshot: Snapshot, workload: Workload) -> bool:
    """Some pending pod of the call or some running pod asks the device-sharing way."""
    return running_shares(snapshot).fractional or any_sharing(workload.pods)
