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

Per-node-group resource limits, the queue annotation `volcano.sh/nodegroup-resource-limits`
(`limits.py`): an invalid annotation fails every node first; after the affinity checks, a
node whose group the queue has filled to its limit fails ("node group resource limit
exceeded"). The limit holds for running plus newly placed pods in both engines (`greedy.py`:
a tracker the greedy places those pods through, one at a time; `cpsat.py`: one row per
limit and resource) and in preemption plans.

The verdict is evaluated per node *group* (the label values, interned once per node
generation), then spread to the nodes with one numpy gather: a call with 1,000 queues pays
per distinct affinity, not per queue and node.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from solver.config import Plugin, SchedulerConf
from solver.features._base import CompileContext, Feature
from solver.features._steps import CpsatSteps, GreedySteps
from solver.features.nodegroup import cpsat
from solver.features.nodegroup.greedy import nodegroup_tracker
from solver.features.nodegroup.groups import LABEL, node_groups
from solver.features.nodegroup.limits import (
    ANNOTATION,
    REASON_LIMIT_EXCEEDED,
    REASON_LIMIT_INVALID,
    NodeGroupLimitBlock,
    compile_limits,
    invalid_reason,
    queue_limits,
)
from solver.model import Queue, job_queue
from solver.problem import FloatArray, IntArray
from solver.snapshot import NodeTable

__all__ = [
    "ANNOTATION",
    "FEATURE",
    "LABEL",
    "REASON_AFFINITY_UNSET",
    "REASON_LABEL_MISSING",
    "REASON_LIMIT_EXCEEDED",
    "REASON_LIMIT_INVALID",
    "REASON_NOT_SATISFIED",
    "NodeGroupAffinity",
    "NodeGroupLimitBlock",
    "nodegroup_verdict",
    "queue_affinity",
]

REASON_LABEL_MISSING = "node group label not found"
REASON_AFFINITY_UNSET = "node group affinity not specified"
REASON_NOT_SATISFIED = "node does not satisfy the node group affinity"
_REQ = "requiredDuringSchedulingIgnoredDuringExecution"
_PREF = "preferredDuringSchedulingIgnoredDuringExecution"
REASONS = ("", REASON_LABEL_MISSING, REASON_AFFINITY_UNSET, REASON_NOT_SATISFIED)


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

    @property
    def terms(self) -> tuple[tuple[str, ...], ...]:
        return (self.required, self.preferred, self.anti_required, self.anti_preferred)


def _names(block: Any, key: str) -> tuple[str, ...]:
    value = block.get(key) if isinstance(block, dict) else None
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def _own(queues: Mapping[str, Queue], queue: str) -> NodeGroupAffinity | None:
    spec = queues.get(queue)
    if spec is None or not spec.affinity:
        return None
    pos = spec.affinity.get("nodeGroupAffinity") or {}
    neg = spec.affinity.get("nodeGroupAntiAffinity") or {}
    aff = NodeGroupAffinity(
        _names(pos, _REQ), _names(pos, _PREF), _names(neg, _REQ), _names(neg, _PREF), source=queue
    )
    return None if aff.unset else aff


def queue_affinity(queues: Mapping[str, Queue], queue: str, hierarchy: bool) -> NodeGroupAffinity:
    """The affinity in force for `queue`: its own, else (with hierarchy) the nearest ancestor's."""
    own = _own(queues, queue)
    if own is not None or not hierarchy:
        return own or NodeGroupAffinity()
    seen = {queue}
    spec = queues.get(queue)
    parent = (spec.parent if spec else None) or ("root" if queue != "root" else None)
    while parent is not None and parent not in seen:
        seen.add(parent)
        found = _own(queues, parent)
        if found is not None:
            return found
        parent_spec = queues.get(parent)
        if parent_spec is None:
            break  # missing parent: no inheritance
        parent = parent_spec.parent or ("root" if parent != "root" else None)
    return NodeGroupAffinity()


def _flag(arguments: dict[str, Any], key: str, default: bool) -> bool:
    value = arguments.get(key, default)
    return value if isinstance(value, bool) else default


def _verdict(
    aff: NodeGroupAffinity, names: tuple[str, ...], strict: bool, ordered: bool
) -> tuple[IntArray, FloatArray]:
    """Per group id (+1 for "no label" at index -1 → last): reason index and score."""
    reasons = np.zeros(len(names) + 1, dtype=np.int64)
    scores = np.zeros(len(names) + 1)
    reasons[-1] = 0 if (not strict and aff.unset) else 1
    for i, group in enumerate(names):
        if aff.unset:
            reasons[i] = 2
            continue
        allowed = group in aff.required or group in aff.preferred
        if group in aff.anti_required:
            allowed = False
        if group in aff.anti_preferred:
            allowed = True
        reasons[i] = 0 if allowed else 3
        score = 100.0 if group in aff.required else 0.0
        if group in aff.preferred:
            n = len(aff.preferred)
            score += 0.5 * 100 * (n - aff.preferred.index(group)) / n if ordered else 50.0
        if group in aff.anti_preferred:
            score = -1.0
        scores[i] = score
    return reasons, scores


def nodegroup_verdict(
    nodes: NodeTable, queues: Mapping[str, Queue], conf: SchedulerConf, queue: str
) -> tuple[list[str | None], FloatArray]:
    """Per node (name order): the failure reason (None = allowed) and the score for `queue`."""
    codes, scores = _rows(nodes, queues, conf, queue)
    return [REASONS[c] or None for c in codes.tolist()], scores


def _rows(
    nodes: NodeTable, queues: Mapping[str, Queue], conf: SchedulerConf, queue: str
) -> tuple[IntArray, FloatArray]:
    plugin = conf.plugin(Plugin.NODEGROUP)
    args = conf.arguments(Plugin.NODEGROUP)
    strict = _flag(args, "strict", True)
    ordered = _flag(args, "enablePreferredOrder", False)
    hierarchy = bool(plugin.options.get("enableHierarchy", False)) if plugin else False
    aff = queue_affinity(queues, queue, hierarchy)
    group, names = node_groups(nodes)

    def compute() -> tuple[IntArray, FloatArray]:
        reasons, scores = _verdict(aff, names, strict, ordered)
        codes, row = reasons[group], scores[group]
        codes.flags.writeable = row.flags.writeable = False
        return codes, row

    return nodes.memo(("nodegroup", aff.terms, strict, ordered), compute)


def _compile(ctx: CompileContext) -> None:
    plan = ctx.gangs
    queues = ctx.snapshot.queues
    verdicts: dict[str, tuple[IntArray, FloatArray]] = {}  # queue -> its rows, once per call
    gang_queue: dict[int, str] = {}
    nothing = np.zeros(len(ctx.nodes), dtype=bool)
    for g in sorted(set(ctx.type_gang)):
        gid = plan.gang_ids[g]
        q = job_queue(ctx.workload.gangs[gid], ctx.workload.members(gid))
        if q is None:
            continue
        gang_queue[g] = q
        if q not in verdicts:
            verdicts[q] = _rows(ctx.nodes, queues, ctx.conf, q)
        codes, scores = verdicts[q]
        types = ctx.types_of(g)
        invalid = invalid_reason(ctx.snapshot, q)
        if invalid is not None:  # upstream checks the annotation before anything else
            ctx.restrict(types, nothing, invalid)
        for code in (1, 2, 3):
            allowed = ctx.memo(("nodegroup", id(codes), code), partial(np.not_equal, codes, code))
            ctx.restrict(types, allowed, REASONS[code])
        ctx.score(types, scores, Plugin.NODEGROUP)
    for q in sorted(set(gang_queue.values())):
        parsed = queue_limits(ctx.snapshot).get(q)
        if parsed is not None and parsed.error is not None:
            ctx.notes.append(f"queue {q}: annotation {ANNOTATION} is invalid: {parsed.error}")
    compile_limits(ctx, gang_queue)


FEATURE = Feature(
    name="nodegroup",
    plugins=(Plugin.NODEGROUP,),
    compile=_compile,
    greedy=GreedySteps(trackers=(nodegroup_tracker,)),
    cpsat=CpsatSteps(modules=(cpsat.build,), class_splits=(cpsat.class_split,)),
)
