"""KAI-Scheduler's Queue (`scheduling.run.ai/v2`), read as KAI's `NewQueueInfo` reads it:
parent, priority, per resource its quota, limit and over-quota weight, minimum runtimes and
the usage a usage database reports (`solver.kube.kai` reads KAI's PodGroups and Topology).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from solver.conf_keys import parse_go_duration
from solver.kube.loader import RawObject
from solver.kube.objects import Metadata, _K8s
from solver.model import (
    KAI_DEFAULT_PRIORITY,
    KAI_UNLIMITED,
    KAI_USAGE_ANNOTATION,
    KaiQuota,
    Queue,
    duration_problem,
    kai_amount_problem,
)

__all__ = ["K8sKaiQueue", "kai_queue"]


class K8sKaiQueue(_K8s):
    """`scheduling.run.ai/v2` Queue: read by `kai_queue`."""

    metadata: Metadata


_KAI_UNITS = {"cpu": ("cpu", 1.0), "memory": ("memory", 1e6), "gpu": ("nvidia.com/gpu", 1.0)}
"""`spec.resources` keys -> (gangplan resource, factor to its unit): CPU in millicpus (as
gangplan's), memory in megabytes (10^6 bytes, KAI's `mebibytes` constant), GPU in GPUs."""
_KAI_FIELDS = {"quota": "quota", "limit": "limit", "overQuotaWeight": "over_quota_weight"}
_KAI_READ = {"parentQueue", "priority", "resources", "preemptMinRuntime", "reclaimMinRuntime"}


def kai_queue(raw: RawObject, queue: K8sKaiQueue, notes: list[str]) -> Queue:
    """The KAI Queue as KAI's `NewQueueInfo` reads it: parent, priority (100 unset), and per
    resource its quota, limit and over-quota weight (unset = 0; -1 = unlimited); without
    `spec.resources` it is refused, as KAI's admission webhook refuses it. The runtime
    guards (`preemptMinRuntime`, `reclaimMinRuntime`) are read for the `minruntime` rules."""
    spec = raw.body.get("spec") or {}
    if not isinstance(spec, dict):
        raise raw.error("must be a mapping", field="spec")
    parent = spec.get("parentQueue") or None
    if parent is not None and not isinstance(parent, str):
        raise raw.error("must be a string", field="spec.parentQueue")
    priority = spec.get("priority", KAI_DEFAULT_PRIORITY)
    if isinstance(priority, bool) or not isinstance(priority, int) or abs(priority) >= 1 << 31:
        raise raw.error("must be a 32-bit integer", field="spec.priority")
    amounts: dict[str, dict[str, float]] = {f: {} for f in _KAI_FIELDS.values()}
    resources = spec.get("resources")
    if resources is None:  # KAI's admission webhook: `missingResourcesError`
        raise raw.error("resources must be specified", field="spec.resources")
    if not isinstance(resources, dict):
        raise raw.error("must be a mapping", field="spec.resources")
    for key, body in sorted(resources.items()):
        where = f"spec.resources.{key}"
        if key not in _KAI_UNITS:
            raise raw.error(f"not a KAI queue resource (one of {', '.join(_KAI_UNITS)})", where)
        if not isinstance(body, dict):
            raise raw.error("must be a mapping", field=where)
        name, factor = _KAI_UNITS[key]
        for field, target in _KAI_FIELDS.items():
            value = body.get(field, 0)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise raw.error("must be a number", f"{where}.{field}")
            weight = field == "overQuotaWeight"  # a weight has no unit
            unit = 1.0 if weight else factor
            scaled = float(value) if value == KAI_UNLIMITED or weight else float(value) * unit
            if (problem := kai_amount_problem(scaled, unlimited=not weight, unit=unit)) is not None:
                raise raw.error(problem, f"{where}.{field}")
            amounts[target][name] = scaled
    unset = [
        k
        for k in _KAI_UNITS
        if not isinstance(resources.get(k), dict) or "limit" not in resources[k]
    ]
    if unset:
        notes.append(
            f"{raw.source}: document {raw.document}: KAI Queue {queue.metadata.name!r}: no "
            f"limit for {', '.join(unset)}: KAI reads it as 0, so no job of the queue asking "
            "for it runs; write -1 for no limit"
        )
    if unread := sorted(set(spec) - _KAI_READ):
        notes.append(
            f"{raw.source}: document {raw.document}: KAI Queue {queue.metadata.name!r}: "
            f"spec {', '.join(unread)} not acted on"
        )
    runtimes = {
        key: _min_runtime(raw, spec, key) for key in ("preemptMinRuntime", "reclaimMinRuntime")
    }
    return Queue(
        name=queue.metadata.name,
        parent=parent,
        priority=priority,
        kai=KaiQuota(
            **amounts,
            created=queue.metadata.creation_timestamp or "",
            usage=_usage(raw, queue.metadata.annotations.get(KAI_USAGE_ANNOTATION)),
            preempt_min_runtime=runtimes["preemptMinRuntime"],
            reclaim_min_runtime=runtimes["reclaimMinRuntime"],
        ),
    )


def _min_runtime(raw: RawObject, spec: Mapping[str, Any], key: str) -> float | None:
    """`spec.preemptMinRuntime` / `spec.reclaimMinRuntime` (a Go duration: `30s`, `10m`)
    in seconds; None when unset (the plugin resolves it from the ancestors)."""
    value = spec.get(key)
    if value is None:
        return None
    seconds = parse_go_duration(value)
    if seconds is None:
        raise raw.error(f"must be a duration such as 30s or 10m, got {value!r}", f"spec.{key}")
    if (problem := duration_problem(seconds)) is not None:
        raise raw.error(f"{problem}, got {value!r}", f"spec.{key}")
    return seconds


def _usage(raw: RawObject, text: str | None) -> dict[str, float]:
    """The annotation `gangplan.io/usage` (`gpu=0.4,cpu=0.1`: each resource's historical
    usage normalised to the window's capacity, as KAI's usage database reports it)."""
    if text is None:
        return {}
    out: dict[str, float] = {}
    where = f"metadata.annotations[{KAI_USAGE_ANNOTATION}]"
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, eq, value = part.partition("=")
        if key.strip() not in _KAI_UNITS or not eq:
            raise raw.error(
                f"expected `resource=fraction` pairs over {', '.join(_KAI_UNITS)}", where
            )
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if (problem := kai_amount_problem(number, unlimited=False)) is not None:
            raise raw.error(f"{key.strip()}: {problem}, got {value.strip()!r}", where)
        out[_KAI_UNITS[key.strip()][0]] = number
    return out
