"""GPU shares in queue quotas, re-derived: while some pod holds a fraction of a GPU, the
`capacity` quotas count `nvidia.com/gpu` in milli-GPUs (`nvidia.com/gpu-milli`).

The verifier's own pass over the running pods (memoised per snapshot generation): which
pods hold a share, and per queue the milli-GPUs beyond 1000 × their `nvidia.com/gpu`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

import numpy as np

from solver.model import DEVICE_ANNOTATIONS, SHARE_RESOURCES, any_sharing, gpu_milli
from solver.snapshot import Snapshot, Workload

__all__ = ["Shares", "shares"]

Shares = tuple[bool, dict[str, int]]  # (some running pod holds a fraction, queue -> extra)


def _running(snapshot: Snapshot, charged: Callable[[int], str | None]) -> Shares:
    running = snapshot.running
    cols = running.requests(SHARE_RESOURCES)
    rows = np.flatnonzero(running.alive).tolist()
    fractional = False
    extra: dict[str, int] = defaultdict(int)
    for row in rows:
        annotations = running.annotations(row)
        if not cols[row, 1:].any() and not any(k in annotations for k in DEVICE_ANNOTATIONS):
            continue
        requests = dict(zip(SHARE_RESOURCES, cols[row].tolist(), strict=True))
        milli, share = gpu_milli(requests, annotations)
        fractional = fractional or share
        queue = charged(row)
        if queue is not None:
            extra[queue] += milli - 1000 * requests[SHARE_RESOURCES[0]]
    return fractional, dict(extra)


def shares(
    snapshot: Snapshot, workload: Workload, charged: Callable[[int], str | None]
) -> Shares | None:
    """None when no pod holds a fraction of a GPU; else the running pods' extra milli-GPUs
    per queue (`charged(row)`: the queue a running pod is charged to)."""
    fractional, extra = snapshot.memo(("verify", "gpu shares"), lambda: _running(snapshot, charged))
    return (True, extra) if fractional or any_sharing(workload.pods) else None
