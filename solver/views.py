"""What the front ends show of a cluster besides a Decision: the network topology trees,
the queue tree and the queue admission webhook's verdicts.

The CLI and the service read these through this module (or the `solver` package), never
from a feature package, so a feature can move inside its folder without touching them.
"""

from __future__ import annotations

from typing import Any

from solver.config import Plugin, SchedulerConf
from solver.features.cards import CardMode
from solver.features.drf import hdrf_view, hierarchical
from solver.features.kaishare import KaiMode, settled_kai_tree
from solver.features.kueueshare import kueue_view
from solver.features.proportion import ProportionMode, settled_tree
from solver.features.queues import (
    DEFAULT_MAX_DEPTH,
    QueueInfo,
    QueueTree,
    QueueVerdict,
    QuotaMode,
    build_queue_tree,
    validate_queues,
)
from solver.features.topology.hypernode.tree import (
    HyperNodeTree,
    build_hypernode_tree,
    hypernode_view,
    render_hypernode_tree,
)
from solver.features.topology.tree import TopologyTree, build_tree, render_tree, topology_view
from solver.snapshot import Snapshot, Workload

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "HyperNodeTree",
    "KaiMode",
    "QueueInfo",
    "QueueTree",
    "QueueVerdict",
    "TopologyTree",
    "build_hypernode_tree",
    "build_tree",
    "hdrf_tree",
    "hypernode_view",
    "kai_queue_tree",
    "kueue_tree",
    "queue_tree",
    "render_hypernode_tree",
    "render_tree",
    "topology_view",
    "validate_queues",
]


def kai_queue_tree(snapshot: Snapshot, conf: SchedulerConf) -> tuple[QueueTree, KaiMode] | None:
    """KAI Queues as KAI's `proportion` sees them, with each queue's fair share for every
    pending job of the snapshot (`KaiMode.fair`); None when the queues are not KAI's."""
    return settled_kai_tree(snapshot, Workload.everything(snapshot), conf)


def kueue_tree(snapshot: Snapshot) -> dict[str, Any] | None:
    """Kueue's cohorts and ClusterQueues with quotas, usage, what each may still be given
    and its dominant resource share; None when the queues are not Kueue's."""
    return kueue_view(snapshot)


def hdrf_tree(snapshot: Snapshot, conf: SchedulerConf) -> dict[str, Any] | None:
    """The hierarchical DRF tree (`drf` with `enableHierarchy`) of the queues' annotated
    paths, with the shares their running pods give; None when the conf does not ask for
    it."""
    return hdrf_view(snapshot) if hierarchical(conf, snapshot) else None


def queue_tree(snapshot: Snapshot, conf: SchedulerConf) -> QueueTree | None:
    """The queue tree as the conf's quota plugin sees it (`capacity-card` counts card
    types, `capacity` resources, `proportion` resources with deserved water-filled by
    weight); None when no quota plugin is on."""
    if conf.enabled(Plugin.CAPACITY_CARD):
        return build_queue_tree(snapshot, CardMode(conf))
    if conf.enabled(Plugin.CAPACITY):
        return build_queue_tree(snapshot, QuotaMode(conf))
    if conf.enabled(Plugin.PROPORTION):  # deserved: water-filled for every pending job
        settled = settled_tree(snapshot, Workload.everything(snapshot), conf)
        return settled[0] if settled else build_queue_tree(snapshot, ProportionMode(conf))
    return None
