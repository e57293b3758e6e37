"""Node groups: the node label `volcano.sh/nodegroup-name`, interned per node generation."""

from __future__ import annotations

import numpy as np

from solver.problem import IntArray
from solver.snapshot import NodeTable

__all__ = ["LABEL", "node_groups"]

LABEL = "volcano.sh/nodegroup-name"


def node_groups(nodes: NodeTable) -> tuple[IntArray, tuple[str, ...]]:
    """[N] node group id of every node (-1 without the label), and the group names (sorted)."""

    def compute() -> tuple[IntArray, tuple[str, ...]]:
        labels = [n.labels.get(LABEL) for n in nodes.nodes]
        names = tuple(sorted({g for g in labels if g is not None}))
        index = {g: i for i, g in enumerate(names)}
        row = np.array([index[g] if g is not None else -1 for g in labels], dtype=np.int64)
        row.flags.writeable = False
        return row, names

    return nodes.memo(("nodegroup", "groups"), compute)
