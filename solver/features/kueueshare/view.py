"""`gangplan queues tree` for Kueue: every cohort and ClusterQueue with its quotas, what its
running pods use, what it may still be given, and its dominant resource share."""

from __future__ import annotations

import math
from typing import Any

from solver.features.kueueshare.mode import kueue_nodes, kueue_specs
from solver.features.kueueshare.quota import depth_problem
from solver.snapshot import Snapshot

__all__ = ["kueue_view"]


def kueue_view(snapshot: Snapshot) -> dict[str, Any] | None:
    """The cohort forest as data (None without Kueue queues): per node its kind, parent,
    fair-sharing weight, queueing strategy, LocalQueues, children and per flavor-resource
    nominal quota, borrowing and lending limits, subtree quota, usage, and for a
    ClusterQueue what it may still be given (`available`) and at most (`potential`); the
    weighted dominant resource share (`share`, null when a zero weight borrows)."""
    specs = kueue_specs(snapshot)
    if not specs:
        return None
    if problem := depth_problem(specs):
        return {"broken": problem, "roots": []}
    nodes = kueue_nodes(snapshot)
    locals_of: dict[str, list[str]] = {}
    for name, q in snapshot.queues.items():
        if q.kueue is not None and q.kueue.kind == "LocalQueue" and q.parent:
            locals_of.setdefault(q.parent, []).append(name)

    def one(name: str) -> dict[str, Any]:
        node = nodes.nodes[name]
        spec = specs[name][1]
        quotas = spec.quotas()
        frs = sorted(set(quotas) | set(node.subtree) | set(node.usage))
        drs = nodes.drs(name)
        return {
            "name": name,
            "kind": spec.kind,
            "parent": node.parent,
            "weight": spec.fair_weight,
            **({"strategy": spec.strategy} if node.cluster_queue else {}),
            "share": None if math.isinf(drs.share) else round(drs.share, 3),
            "localQueues": sorted(locals_of.get(name, [])),
            "resources": {
                fr: {
                    "nominal": quotas[fr].nominal if fr in quotas else 0,
                    "borrowingLimit": quotas[fr].borrowing_limit if fr in quotas else None,
                    "lendingLimit": quotas[fr].lending_limit if fr in quotas else None,
                    "subtree": node.subtree.get(fr, 0),
                    "usage": node.usage.get(fr, 0),
                    **(
                        {
                            "available": max(0, nodes.available(name, fr)),
                            "potential": nodes.potential(name, fr),
                        }
                        if node.cluster_queue
                        else {}
                    ),
                }
                for fr in frs
            },
            "children": [one(c) for c in sorted(node.children)],
        }

    roots = sorted(n for n, v in nodes.nodes.items() if v.parent is None)
    return {"roots": [one(r) for r in roots]}
