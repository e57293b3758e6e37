"""Volcano's `binpack` score: prefer the node that is fullest after placing the pod.

    score(pod, node) = binpack.weight × 100 × Σ_r w_r·(used_r + req_r)/alloc_r / Σ_r w_r

over the resources the pod requests that have a weight; a resource that would overflow
scores 0. Arguments as in Volcano: `binpack.weight` (1), `binpack.cpu` (1),
`binpack.memory` (1), `binpack.resources` (comma list of extended resources) and
`binpack.resources.<name>` (1). Without any `binpack.*` argument gangplan also weighs every
extended resource (e.g. `nvidia.com/gpu`) 1, since packing GPUs is what gang jobs need;
Volcano's own default weighs only cpu and memory.
"""

from __future__ import annotations

from typing import Any

__all__ = ["binpack_weights"]


def _number(value: Any, default: float) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def binpack_weights(
    arguments: dict[str, Any], resources: tuple[str, ...]
) -> tuple[float, dict[str, float]]:
    """(plugin weight, weight per resource) for the resources in play."""
    weight = _number(arguments.get("binpack.weight"), 1.0)
    configured = any(str(k).startswith("binpack.") for k in arguments)
    per: dict[str, float] = {}
    listed = {
        r.strip() for r in str(arguments.get("binpack.resources", "")).split(",") if r.strip()
    }
    for r in resources:
        if r == "pods":
            continue
        if r == "cpu":
            per[r] = _number(arguments.get("binpack.cpu"), 1.0)
        elif r == "memory":
            per[r] = _number(arguments.get("binpack.memory"), 1.0)
        elif not configured or r in listed:
            per[r] = _number(arguments.get(f"binpack.resources.{r}"), 1.0)
    return weight, {r: w for r, w in per.items() if w > 0}
