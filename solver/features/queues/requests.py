"""What each queue's pending pods ask for, in a quota mode's terms (the `request` of a
fair-share plugin: Volcano `proportion`, KAI's `proportion`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from solver.model import GPU_MILLI, Gang, Pod, gpu_milli, pod_queue
from solver.quantity import PODS
from solver.snapshot import Snapshot, Workload

if TYPE_CHECKING:
    from solver.features.queues.mode import QuotaMode

__all__ = ["call_requests", "pending_requests"]


def pending_requests(
    snapshot: Snapshot,
    pods: Iterable[Pod],
    mode: QuotaMode,
    gangs: Mapping[str, Gang] | None = None,
) -> dict[str, dict[str, int]]:
    """Per queue, the requests of `pods` (pending; their gangs from `gangs`, else the
    snapshot's), in the mode's quota terms."""
    named = {**snapshot.gangs, **(gangs or {})}
    out: dict[str, dict[str, int]] = {}
    for pod in pods:
        gang = named.get(pod.gang)  # None: a gang of one the call has not built
        queue = (gang.queue if gang is not None else None) or pod_queue(pod.labels, pod.annotations)
        if queue is None:
            continue
        mine = out.setdefault(queue, {})
        use = mode.view(pod.requests)
        if mode.gpu_milli:  # a share pod's GPU use, as `QuotaMode.type_quota` counts it
            use[GPU_MILLI] = gpu_milli(pod.requests, pod.annotations)[0]
        for r, v in use.items():
            if r != PODS and v:
                mine[r] = mine.get(r, 0) + v
    return out


def call_requests(
    snapshot: Snapshot, workload: Workload, mode: QuotaMode
) -> dict[str, dict[str, int]]:
    """Per queue, what its pending pods ask for: the snapshot's (memoised per generation and
    mode), with the call's pods in place of the snapshot's of the same key."""
    out = {
        q: dict(v)
        for q, v in snapshot.memo(
            ("queues", "pending requests", mode.key),
            lambda: pending_requests(snapshot, snapshot.pending.values(), mode),
        ).items()
    }
    call = workload.pods
    replaced = [snapshot.pending[p.key] for p in call if p.key in snapshot.pending]
    for sign, pods in ((-1, replaced), (1, call)):
        for q, amounts in pending_requests(snapshot, pods, mode, workload.gangs).items():
            mine = out.setdefault(q, {})
            for r, v in amounts.items():
                mine[r] = mine.get(r, 0) + sign * v
    return out
