"""Volcano's `nodegroup` plugin: queue ↔ node-group affinity, evaluated the Volcano way.

Node label `volcano.sh/nodegroup-name`; Queue `spec.affinity.nodeGroupAffinity` and
`nodeGroupAntiAffinity`, each with `requiredDuringSchedulingIgnoredDuringExecution` and
`preferredDuringSchedulingIgnoredDuringExecution` (lists of group names).

Predicate for a pod of a job in queue Q on node N (reference/volcano.md §2.2), in order:

1. N has no group label: pass only if not `strict` and Q has no affinity
   ("node group label not found");
2. Q has no affinity: fail ("node group affinity not specified");
3. allowed = g ∈ required ∪ preferred; g ∈ anti-required -> not allowed;
   g ∈ anti-preferred -> allowed again (evaluated last, as upstream does);
4. not allowed: fail ("node does not satisfy the node group affinity").

Score: +100 if g ∈ required; +50 if g ∈ preferred (with `enablePreferredOrder`,
50·(n−i)/n for the i-th of n preferred groups); g ∈ anti-preferred -> −1, overriding.

With `enableHierarchy`, a queue without affinity takes the whole affinity of its nearest
ancestor that has one (root included); its own affinity overrides, never merges.
Arguments: `strict` (default true upstream; false in gangplan's built-in default conf, so
clusters that do not use node groups are not blocked), `enablePreferredOrder` (false).
Jobs in no queue are not affected.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from solver.config import SchedulerConf
from solver.model import ClusterModel

__all__ = [
    "LABEL",
    "REASON_AFFINITY_UNSET",
    "REASON_LABEL_MISSING",
    "REASON_NOT_SATISFIED",
    "NodeGroupAffinity",
    "nodegroup_verdict",
    "queue_affinity",
]

LABEL = "volcano.sh/nodegroup-name"
REASON_LABEL_MISSING = "node group label not found"
REASON_AFFINITY_UNSET = "node group affinity not specified"
REASON_NOT_SATISFIED = "node does not satisfy the node group affinity"
_REQ = "requiredDuringSchedulingIgnoredDuringExecution"
_PREF = "preferredDuringSchedulingIgnoredDuringExecution"


@dataclass(frozen=True)
class NodeGroupAffinity:
    required: tuple[str, ...] = ()
    preferred: tuple[str, ...] = ()
    anti_required: tuple[str, ...] = ()
    anti_preferred: tuple[str, ...] = ()
    source: str = ""  # the queue it was written on (inheritance)

    @property
    def unset(self) -> bool:
        return not (self.required or self.preferred or self.anti_required or self.anti_preferred)


def _names(block: Any, key: str) -> tuple[str, ...]:
    value = block.get(key) if isinstance(block, dict) else None
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def _own(model: ClusterModel, queue: str) -> NodeGroupAffinity | None:
    spec = model.queues.get(queue)
    if spec is None or not spec.affinity:
        return None
    pos = spec.affinity.get("nodeGroupAffinity") or {}
    neg = spec.affinity.get("nodeGroupAntiAffinity") or {}
    aff = NodeGroupAffinity(
        _names(pos, _REQ), _names(pos, _PREF), _names(neg, _REQ), _names(neg, _PREF), source=queue
    )
    return None if aff.unset else aff


def queue_affinity(model: ClusterModel, queue: str, hierarchy: bool) -> NodeGroupAffinity:
    """The affinity in force for `queue`: its own, else (with hierarchy) the nearest ancestor's."""
    own = _own(model, queue)
    if own is not None or not hierarchy:
        return own or NodeGroupAffinity()
    seen = {queue}
    spec = model.queues.get(queue)
    parent = (spec.parent if spec else None) or ("root" if queue != "root" else None)
    while parent is not None and parent not in seen:
        seen.add(parent)
        found = _own(model, parent)
        if found is not None:
            return found
        parent_spec = model.queues.get(parent)
        if parent_spec is None:
            break  # missing parent: no inheritance
        parent = parent_spec.parent or ("root" if parent != "root" else None)
    return NodeGroupAffinity()


def _flag(arguments: dict[str, Any], key: str, default: bool) -> bool:
    value = arguments.get(key, default)
    return value if isinstance(value, bool) else default


def nodegroup_verdict(
    model: ClusterModel, conf: SchedulerConf, queue: str
) -> tuple[list[str | None], np.ndarray]:
    """Per node (model order): the failure reason (None = allowed) and the score for `queue`."""
    plugin = conf.plugin("nodegroup")
    args = conf.arguments("nodegroup")
    strict = _flag(args, "strict", True)
    ordered = _flag(args, "enablePreferredOrder", False)
    hierarchy = bool(plugin.options.get("enableHierarchy", False)) if plugin else False
    aff = queue_affinity(model, queue, hierarchy)
    reasons: list[str | None] = []
    scores = np.zeros(len(model.nodes))
    for i, node in enumerate(model.nodes):
        group = node.labels.get(LABEL)
        if group is None:
            reasons.append(None if (not strict and aff.unset) else REASON_LABEL_MISSING)
            continue
        if aff.unset:
            reasons.append(REASON_AFFINITY_UNSET)
            continue
        allowed = group in aff.required or group in aff.preferred
        if group in aff.anti_required:
            allowed = False
        if group in aff.anti_preferred:
            allowed = True
        reasons.append(None if allowed else REASON_NOT_SATISFIED)
        score = 100.0 if group in aff.required else 0.0
        if group in aff.preferred:
            n = len(aff.preferred)
            score += 0.5 * 100 * (n - aff.preferred.index(group)) / n if ordered else 50.0
        if group in aff.anti_preferred:
            score = -1.0
        scores[i] = score
    return reasons, scores
