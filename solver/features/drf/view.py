"""The hDRF tree of a cluster as `gangplan queues tree` draws it: every part of the queues'
annotated paths with its weight, the share its running pods give it (rescaled as `hdrf.py`
computes it), whether it is saturated, and the queues whose path ends there."""

from __future__ import annotations

from typing import Any

import numpy as np

from solver.features.drf.hdrf import HdrfTree, hierarchy_path
from solver.features.queues import columns, picked
from solver.quantity import PODS
from solver.snapshot import Snapshot

__all__ = ["hdrf_view"]


def hdrf_view(snapshot: Snapshot) -> dict[str, Any]:
    """The tree from the root: {name, weight, share, saturated, holds (running pods under
    it), queues, children}; each queue's running pods are one saturated leaf (a job whose
    pods all run)."""
    running = snapshot.running
    resources = tuple(r for r in snapshot.nodes.total if r != PODS)
    total = np.array([snapshot.nodes.total[r] for r in resources], dtype=np.float64)
    pick = columns(running.resources, resources)
    held = snapshot.usage.queue_requests
    use: dict[str, np.ndarray] = {}
    for q in range(min(len(running.queue_names), held.shape[0])):
        name = running.queue_names.value(q)
        use[name] = use.get(name, np.zeros(len(resources))) + picked(held[q], pick)
    tree = HdrfTree(total)
    ends: dict[int, list[str]] = {}
    names: dict[int, str] = {0: "root"}
    for name in sorted(set(snapshot.queues) | set(use)):
        spec = snapshot.queues.get(name)
        parts, weights = hierarchy_path(dict(spec.annotations) if spec is not None else {})
        path = tree.path(parts, weights)
        for at, part in zip(path[1:], parts, strict=True):
            names[at] = part
        ends.setdefault(path[-1], []).append(name)
        if name in use and use[name].any():
            tree.job(path[-1], use[name], use[name])
    tree.refresh()

    def node(n: int) -> dict[str, Any]:
        kids = [node(c) for c in tree.children[n] if not tree.leaf[c]]
        holds = any(tree.leaf[c] for c in tree.children[n]) or any(k["holds"] for k in kids)
        return {
            "name": names[n],
            "weight": tree.weight[n],
            "share": round(tree.share[n], 6),
            "saturated": holds and tree.saturated[n],  # a part no pod runs under: no
            "holds": holds,
            "queues": ends.get(n, []),
            "children": kids,
        }

    return node(0)
