"""The anti-affinity bound: a gang whose pods repel each other needs that many domains.

A required anti-affinity row whose owners also match it (`app=x` avoiding `app=x` by
`kubernetes.io/hostname`: one worker per node) lets at most one of those pods into each
domain of its key, and none into a domain already holding a matching running pod; nodes
without the key are not constrained (kube-scheduler's `satisfyPodAntiAffinity`). So the
gang places at most

    its other pods + min(its repelling pods, domains free of matches with a node that has
    room for one of them + slots on nodes without the key)

and fewer than its need is a proof:

    gang default/workers needs 40 pods, at most one per kubernetes.io/hostname (anti-
    affinity app=w by kubernetes.io/hostname); its eligible nodes with room give 32

With preemption in the call, running matches could be evicted, so they block nothing.
"""

from __future__ import annotations

import numpy as np

from solver.decision import Certificate
from solver.features.interpod.block import InterPodBlock
from solver.model import HOSTNAME as HOST
from solver.problem import IntArray, Problem, best_places, slots_of

__all__ = ["anti_affinity_bound"]


def anti_affinity_bound(
    problem: Problem, gangs: list[int], free: IntArray, evicted: bool
) -> Certificate | None:
    block = problem.block(InterPodBlock)
    if block is None:
        return None
    for h in gangs:
        need = int(problem.gang_need[h])
        types = problem.gang_types(h)
        if need <= 0 or not block.unit_involved(types):
            continue
        for row in block.rows:
            repelling = [t for t in types if t in row.owners and t in row.matchers]
            if row.kind != "anti" or not repelling:
                continue
            slots = np.zeros(problem.num_nodes, dtype=np.int64)
            for t in repelling:
                slots = np.maximum(slots, np.minimum(slots_of(problem, t, free), need))
            domain = block.domain[row.key]
            open_domain = np.ones(block.num_domains[row.key], dtype=bool)
            if not evicted:
                open_domain &= row.existing == 0
            keyed = domain >= 0
            usable = keyed & (slots > 0)
            domains = np.unique(domain[usable])
            room = int(open_domain[domains].sum()) + int(slots[~keyed].sum())
            pods = sum(len(problem.type_pods[t]) for t in repelling)
            others = sum(len(problem.type_pods[t]) for t in types if t not in repelling)
            if others + min(pods, room) >= need:
                continue
            key = block.keys[row.key]
            blocked = int((~open_domain[domains]).sum())
            sentence = (
                f"gang {problem.gang_ids[h]} needs {need} pods, at most one per {key} "
                f"({row.text}); its eligible nodes with room give {room}"
                + (f" ({blocked} more hold a matching pod)" if blocked else "")
            )
            # one domain per node: the nodes with room (a new node would be one more)
            places = (
                best_places(problem.node_names, np.where(usable & open_domain[domain], slots, 0))
                if key == HOST and domains.size
                else ()
            )
            return Certificate(
                "anti-affinity", row.text, sentence, True, needed=need, offered=others + room,
                places=places,
            )  # fmt: skip
    return None
