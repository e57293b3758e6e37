"""Kueue's quotas: ClusterQueues, cohorts (hierarchical), LocalQueues, flavors, borrowing
and lending limits, and fair sharing between ClusterQueues.

    quota.py    Kueue's resource-node arithmetic: subtree and local quota, usage,
                available, potential available, borrowing level, dominant resource share
    flavors.py  the flavor assigner on quota: each pod set's flavor per resource group
    order.py    Kueue's scheduling cycles: heads per ClusterQueue, classical or fair-sharing
                order, StrictFIFO / BestEffortFIFO
    usage.py    what each LocalQueue's running pods use, per flavor-resource
    block.py    each pod type's ClusterQueue and flavors, for the Decision
    view.py     `gangplan queues tree`: the cohort forest with quotas, usage and shares
    mode.py     the whole as a `QuotaMode` of the shared queue machinery (`features.queues`)

On whenever the snapshot's queues are Kueue's (Kueue needs no scheduler plugin), whatever
the conf lists; fair sharing with the conf's `fairSharing` stanza (Kueue's Configuration).
A job is in the LocalQueue its pods' label `kueue.x-k8s.io/queue-name` names in their
namespace; a job's pods may use only the nodes of the flavors it was assigned.
"""

from __future__ import annotations

import numpy as np

from solver.features._base import CompileContext, Feature
from solver.features._steps import DecideSteps
from solver.features.kueueshare.block import KueueFlavorBlock, flavor_decision
from solver.features.kueueshare.flavors import Assignment, PodSet, assign
from solver.features.kueueshare.mode import KueueMode, kueue_nodes, kueue_specs
from solver.features.kueueshare.order import Cycles, Workload, run_cycles
from solver.features.kueueshare.quota import MAX_COHORT_DEPTH, Drs, KueueNode, KueueNodes
from solver.features.kueueshare.usage import node_flavors, running_usage
from solver.features.kueueshare.view import kueue_view
from solver.features.queues import compile_quotas
from solver.model import KUEUE_PODSET_LABEL
from solver.problem import BoolArray
from solver.snapshot import NodeTable, Snapshot

__all__ = [
    "FEATURE",
    "MAX_COHORT_DEPTH",
    "Assignment",
    "Cycles",
    "Drs",
    "KueueFlavorBlock",
    "KueueMode",
    "KueueNode",
    "KueueNodes",
    "PodSet",
    "Workload",
    "assign",
    "kueue_nodes",
    "kueue_specs",
    "kueue_view",
    "node_flavors",
    "run_cycles",
    "running_usage",
]


def _compile(ctx: CompileContext) -> None:
    mode = KueueMode(ctx.conf)
    tree = compile_quotas(ctx, mode)
    if tree is None or tree.broken:
        return
    ctx.add_block(
        KueueFlavorBlock(
            type_cluster_queue=tuple(mode.type_cq.get(t, "") for t in range(ctx.num_types)),
            type_pod_set=tuple(
                ctx.first_pod(t).labels.get(KUEUE_PODSET_LABEL, "main")
                for t in range(ctx.num_types)
            ),
            type_flavors=tuple(
                tuple(sorted(mode.type_flavors.get(t, {}).items())) for t in range(ctx.num_types)
            ),
        )
    )
    labels = ctx.snapshot.memo(("kueue", "flavor labels"), lambda: _flavor_labels(ctx.snapshot))
    for t, flavors in sorted(mode.type_flavors.items()):
        for flavor in sorted(set(flavors.values())):
            if labels.get(flavor):
                allowed = _flavor_nodes(ctx.snapshot.nodes, labels[flavor])
                reason = f"node(s) didn't match the nodeLabels of ResourceFlavor {flavor}"
                ctx.restrict([t], allowed, reason)


def _flavor_labels(snapshot: Snapshot) -> dict[str, dict[str, str]]:
    """Each flavor a ClusterQueue names: its ResourceFlavor's node labels."""
    return {
        f.name: f.node_labels
        for _, spec in kueue_specs(snapshot).values()
        for group in spec.groups
        for f in group.flavors
    }


def _flavor_nodes(nodes: NodeTable, labels: dict[str, str]) -> BoolArray:
    """[N] the nodes carrying every label (memoised per node generation)."""

    def compute() -> BoolArray:
        match = [all(n.labels.get(k) == v for k, v in labels.items()) for n in nodes.nodes]
        return np.array(match, dtype=bool)

    return nodes.memo(("kueue", "flavor nodes", tuple(sorted(labels.items()))), compute)


FEATURE = Feature(
    name="kueueshare",
    plugins=(),
    compile=_compile,
    decide=DecideSteps(decision=flavor_decision),
    always=True,
)
