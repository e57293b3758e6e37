"""Kueue's part of a Problem: each pod type's ClusterQueue and flavors, for the Decision.

The quota rows themselves are the shared `QuotaBlock`'s (`features.queues`); this block
only carries what Kueue admitted each pod set with, so the answer can say it
(`Decision.flavor_assignments`, Kueue's `status.admission`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from solver.decision import KueueFlavorAssignment
from solver.problem import Block, IntArray, Problem

__all__ = ["KueueFlavorBlock", "flavor_decision"]


@dataclass(frozen=True, eq=False)
class KueueFlavorBlock(Block):
    type_cluster_queue: tuple[str, ...]  # [T] "" = not a Kueue pod type
    type_pod_set: tuple[str, ...]  # [T] its pod set (`kueue.x-k8s.io/podset`; `main`)
    type_flavors: tuple[tuple[tuple[str, str], ...], ...]  # [T] (resource, flavor), sorted


def flavor_decision(problem: Problem, pod_node: list[IntArray]) -> dict[str, Any]:
    """The Decision's `flavor_assignments`: one per pod set with a pod placed."""
    block = problem.block(KueueFlavorBlock)
    if block is None:
        return {}
    seen: dict[tuple[str, str], KueueFlavorAssignment] = {}
    for t, cq in enumerate(block.type_cluster_queue):
        if not cq or not (pod_node[t] >= 0).any():
            continue
        gang = problem.gang_ids[problem.type_gang[t]]
        key = (gang, block.type_pod_set[t])
        merged = dict(seen[key].flavors) if key in seen else {}
        merged.update(block.type_flavors[t])
        seen[key] = KueueFlavorAssignment(
            podgroup=gang, pod_set=key[1], cluster_queue=cq, flavors=tuple(sorted(merged.items()))
        )
    return {"flavor_assignments": tuple(seen[k] for k in sorted(seen))}
