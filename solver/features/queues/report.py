"""The queues' part of a Decision: each queue on the paths of the call's jobs with the
allocate gate's limit, what it held at the start of the call and what the answer placed
in it (`solver.decision.QueueUse`), for capacity, capacity-card and proportion alike."""

from __future__ import annotations

from typing import Any

import numpy as np

from solver.decision import QueueUse
from solver.features.queues.block import QuotaBlock
from solver.problem import IntArray, Problem
from solver.quantity import UNLIMITED

__all__ = ["queue_uses"]


def queue_uses(problem: Problem, pod_node: list[IntArray]) -> dict[str, Any]:
    block = problem.block(QuotaBlock)
    if block is None or not block.queue_names or block.limit.size == 0:
        return {}
    placed = np.zeros_like(block.allocated)
    for t, queues in enumerate(block.type_queues):
        if not queues:
            continue
        nodes = pod_node[t][pod_node[t] >= 0]
        if not nodes.size:
            continue
        use = block.type_quota_demand[t] * int(nodes.size)
        if block.node_dims(t) and block.type_node_dim is not None:
            rows, counts = np.unique(block.type_node_dim[t, nodes], return_counts=True)
            for d, c in zip(rows.tolist(), counts.tolist(), strict=True):
                if d >= 0:
                    use[d] += int(block.type_node_dim_count[t]) * c
        placed[list(queues)] += use
    dims = block.quota_dims
    out = []
    for q, name in enumerate(block.queue_names):
        out.append(
            QueueUse(
                queue=name,
                limit={r: int(v) for r, v in zip(dims, block.limit[q].tolist(), strict=True)
                       if v < UNLIMITED},
                allocated={r: int(v) for r, v in zip(dims, block.allocated[q].tolist(), strict=True)
                           if v},
                placed={r: int(v) for r, v in zip(dims, placed[q].tolist(), strict=True) if v},
            )
        )  # fmt: skip
    return {"queues": tuple(out)}
