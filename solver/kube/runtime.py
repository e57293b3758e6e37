"""A running pod's expected end from its own spec: `activeDeadlineSeconds`, which the
kubelet enforces from `status.startTime`, stands in for gangplan's `expected-end` /
`expected-runtime` annotations when the pod states neither (`solver.start` replays them)."""

from __future__ import annotations

import contextlib
import math
from datetime import UTC, datetime

from solver.kube.objects import K8sPod
from solver.model import EXPECTED_END, EXPECTED_RUNTIME, MAX_RUNTIME_SECONDS, epoch_seconds

__all__ = ["annotations_with_deadline"]


def annotations_with_deadline(k8s: K8sPod) -> dict[str, str]:
    """The pod's annotations; a running pod's `activeDeadlineSeconds` (the kubelet ends it
    that long after `status.startTime`) as its expected end when it states none: the end
    itself from its start time, else an expected runtime from its creation."""
    annotations = dict(k8s.metadata.annotations)
    deadline = k8s.spec.active_deadline_seconds
    if (
        deadline is None
        or not k8s.spec.node_name
        or deadline > MAX_RUNTIME_SECONDS
        or EXPECTED_END in annotations
        or EXPECTED_RUNTIME in annotations
    ):
        return annotations
    started = epoch_seconds(k8s.status.start_time)
    if math.isnan(started):
        annotations[EXPECTED_RUNTIME] = f"{deadline}s"
    else:
        with contextlib.suppress(OverflowError, ValueError, OSError):  # past year 9999
            end = datetime.fromtimestamp(started + deadline, UTC)
            annotations[EXPECTED_END] = end.isoformat()
    return annotations
