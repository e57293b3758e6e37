"""A running pod's expected end from its own spec, for the start estimates
(`solver.start`): `activeDeadlineSeconds`, which the kubelet enforces from
`status.startTime`, stands in for gangplan's `expected-end` / `expected-runtime`
annotations when the pod states neither; its `priorityClassName` is kept under
`gangplan.io/priority-class`, where the conf's `expectedRuntime.priorityClasses` reads it."""

from __future__ import annotations

import contextlib
import math
from datetime import UTC, datetime

from solver.kube.objects import K8sPod
from solver.model import (
    EXPECTED_END,
    EXPECTED_RUNTIME,
    MAX_RUNTIME_SECONDS,
    PRIORITY_CLASS,
    epoch_seconds,
)

__all__ = ["runtime_annotations"]


def runtime_annotations(k8s: K8sPod, class_name: str | None) -> dict[str, str]:
    """The pod's annotations; for a running pod, its priority class (`class_name`, as its
    dialect reads it; unless an annotation names one) and its `activeDeadlineSeconds` (the kubelet ends it that long after
    `status.startTime`) as its expected end when it states none: the end itself from its
    start time, else an expected runtime from its creation."""
    annotations = dict(k8s.metadata.annotations)
    if not k8s.spec.node_name:
        return annotations
    if class_name and PRIORITY_CLASS not in annotations:
        annotations[PRIORITY_CLASS] = class_name
    deadline = k8s.spec.active_deadline_seconds
    if (
        deadline is None
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
