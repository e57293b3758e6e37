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

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from solver.config import Plugin
from solver.features._base import CompileContext, Feature
from solver.problem import Block, FloatArray, IntArray, Problem

__all__ = ["FEATURE", "BinpackBlock", "binpack_weights"]


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


@dataclass(frozen=True, eq=False)
class BinpackBlock(Block):
    weight: float  # binpack.weight
    resource_weight: FloatArray  # [R] per-resource weight (0 = not scored)

    def node_scores(
        self, problem: Problem, t: int, used: IntArray, nodes: IntArray
    ) -> FloatArray | None:
        """Volcano binpack score of one more pod of type `t` on `nodes`, given their `used`."""
        if self.weight <= 0:
            return None
        demand = problem.type_demand[t]
        scored = np.flatnonzero((demand > 0) & (self.resource_weight > 0)).tolist()
        if not scored:
            return None
        wsum = float(self.resource_weight[scored].sum())
        columns = problem.capacity_columns
        total = np.zeros(len(nodes))
        # One contiguous column at a time: twice as fast as the [nodes, R] matrix at 10k
        # nodes, and the same sums in the same order for one node as for all of them.
        for r in scored:
            capacity = np.take(columns[r], nodes)
            after = used[:, r] + demand[r]
            share = np.divide(
                after,
                capacity,
                out=np.zeros(len(nodes)),
                where=(after <= capacity) & (capacity > 0),
            )
            total += self.resource_weight[r] * share
        return np.asarray(total / wsum * 100.0 * self.weight, dtype=np.float64)

    def score_key(self) -> Hashable:
        return (self.weight, self.resource_weight.tobytes())


def _compile(ctx: CompileContext) -> None:
    weight, per_resource = binpack_weights(ctx.conf.arguments(Plugin.BINPACK), ctx.resources)
    ctx.add_block(
        BinpackBlock(
            weight=weight,
            resource_weight=np.array(
                [per_resource.get(r, 0.0) for r in ctx.resources], dtype=np.float64
            ),
        )
    )


FEATURE = Feature(name="binpack", plugins=(Plugin.BINPACK,), compile=_compile)
