"""Volcano's `nodeorder` plugin: kube-scheduler's node scores, weighted and summed.

Per pod type, a static score row per kube-scheduler plugin, computed exactly as
kube-scheduler does (`scores`) and multiplied by the plugin's `nodeorder` weight
(`weights`, Volcano's `calculateWeight`), as Volcano's `BatchNodeOrderFn` does:

    nodeorder.nodeaffinity     nodeaffinity.weight    (2) × NodeAffinity score
    nodeorder.tainttoleration  tainttoleration.weight (3) × TaintToleration score
    nodeorder.podaffinity      podaffinity.weight     (2) × InterPodAffinity score
    nodeorder.podtopologyspread podtopologyspread.weight (2) × PodTopologySpread score
                               (both against the running pods: `interpod/scores.py`)

The rows join the other plugins' node scores (node groups, card order, ...) in the
`affinity` tier of both engines, as Volcano sums every plugin's node score.

Which nodes a score is normalised over: upstream normalises over the nodes that passed
the filters for this pod. Here, the nodes passing every filter of the pod's type in this
call (node fit, queue node groups, topology domains, card types: every feature registered
before this one), without resource fit: rows are static for the whole call, and a node
that is full now can be freed by preemption or become the better choice as others fill.
Normalisation is monotone, so the nodes' order within a row is the same either way; only
a row's scale next to other plugins' scores can differ from upstream's (where the best
node is full).

Each row is then shifted by its minimum over those nodes (and is 0 on the others): a
constant per pod type changes no node choice, in Volcano or here, but a constant row of
300 (TaintToleration when no usable node has an untolerated PreferNoSchedule taint)
would otherwise add to the objective for every placed pod and favour placing some pod
types over others. So pods without preferred node affinity, on clusters without
PreferNoSchedule taints, carry no nodeorder row at all.

Pods of one type agree on their preferred terms and their tolerations (`type_key`).
Raw rows are memoised on the node table per signature; normalising is one numpy pass
per distinct (raw row, filter set) per call, never a loop over pods.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from functools import partial

import numpy as np

from solver.config import Plugin
from solver.features._base import CompileContext, Feature, combine_filters
from solver.features.interpod.scores import inter_pod_affinity_scores, spread_scores
from solver.features.nodeorder.scores import (
    MAX_NODE_SCORE,
    default_normalize_score,
    intolerable_taint_counts,
    label_column,
    node_affinity_scores,
    preferred_affinity_counts,
    scoring_tolerations,
    taint_toleration_scores,
    term_mask,
)
from solver.features.nodeorder.weights import NodeOrderWeights, nodeorder_weights
from solver.model import Pod
from solver.problem import BoolArray, FloatArray, IntArray

__all__ = [
    "FEATURE",
    "MAX_NODE_SCORE",
    "NodeOrderWeights",
    "default_normalize_score",
    "intolerable_taint_counts",
    "label_column",
    "node_affinity_scores",
    "nodeorder_weights",
    "preferred_affinity_counts",
    "relative_row",
    "scoring_signature",
    "taint_toleration_scores",
    "term_mask",
]

PLUGIN = Plugin.NODEORDER
NODE_AFFINITY = "nodeorder.nodeaffinity"
TAINT_TOLERATION = "nodeorder.tainttoleration"
POD_AFFINITY = "nodeorder.podaffinity"
POD_TOPOLOGY_SPREAD = "nodeorder.podtopologyspread"
ScoreFn = Callable[[CompileContext, Pod, BoolArray], IntArray | None]


def scoring_signature(pod: Pod) -> Hashable:
    """What the nodeorder rows of a pod depend on: pods with equal signatures share them."""
    return (pod.preferred_node_affinity, scoring_tolerations(pod))


def relative_row(normalized: IntArray, weight: int, usable: BoolArray) -> FloatArray:
    """`weight` × a normalised score, minus its minimum over the `usable` nodes; 0 on the
    others (module docstring: a constant per pod type decides nothing)."""
    weighted = weight * normalized.astype(np.float64)
    lowest = float(weighted[usable].min()) if usable.any() else 0.0
    row = np.where(usable, weighted - lowest, 0.0)
    row.flags.writeable = False
    return row


def _usable(ctx: CompileContext, t: int) -> BoolArray:
    """The nodes passing every filter type `t` has so far, shared by types with the same."""
    key = ("nodeorder", "usable", tuple((id(mask), code) for mask, code in ctx.filters[t]))
    return ctx.memo(key, partial(_no_reason, ctx, t))


def _no_reason(ctx: CompileContext, t: int) -> BoolArray:
    usable: BoolArray = combine_filters(ctx.filters[t], len(ctx.nodes)) == 0
    return usable


def _affinity_row(ctx: CompileContext, pod: Pod, usable: BoolArray, weight: int) -> FloatArray:
    return relative_row(node_affinity_scores(ctx.nodes, pod, usable), weight, usable)


def _taint_row(ctx: CompileContext, pod: Pod, usable: BoolArray, weight: int) -> FloatArray:
    return relative_row(taint_toleration_scores(ctx.nodes, pod, usable), weight, usable)


def _scored_row(
    ctx: CompileContext, pod: Pod, usable: BoolArray, weight: int, score: ScoreFn
) -> FloatArray | None:
    normalized = score(ctx, pod, usable)
    return None if normalized is None else relative_row(normalized, weight, usable)


def _compile(ctx: CompileContext) -> None:
    weights, notes = nodeorder_weights(ctx.conf.arguments(PLUGIN))
    ctx.notes.extend(notes)
    rows: dict[int, tuple[str, FloatArray, list[int]]] = {}  # id(row) -> plugin, row, types
    for t in range(ctx.num_types):
        pod = ctx.first_pod(t)
        usable = _usable(ctx, t)
        if weights.node_affinity and pod.preferred_node_affinity:
            raw = preferred_affinity_counts(ctx.nodes, pod.preferred_node_affinity)
            key = (NODE_AFFINITY, id(raw), id(usable))
            row = ctx.memo(key, partial(_affinity_row, ctx, pod, usable, weights.node_affinity))
            rows.setdefault(id(row), (NODE_AFFINITY, row, []))[2].append(t)
        for plugin, weight, score in (
            (POD_AFFINITY, weights.pod_affinity, inter_pod_affinity_scores),
            (POD_TOPOLOGY_SPREAD, weights.pod_topology_spread, spread_scores),
        ):
            if not weight:
                continue
            pod_key = (
                plugin,
                id(usable),
                pod.namespace,
                pod.inter_pod,
                pod.spread,
                tuple(sorted(pod.labels.items())),
            )
            found = ctx.memo(pod_key, partial(_scored_row, ctx, pod, usable, weight, score))
            if found is not None:
                rows.setdefault(id(found), (plugin, found, []))[2].append(t)
        if weights.taint_toleration:
            raw = intolerable_taint_counts(ctx.nodes, pod)
            if not raw[usable].any():
                continue  # every usable node scores 100: a constant, no row
            key = (TAINT_TOLERATION, id(raw), id(usable))
            row = ctx.memo(key, partial(_taint_row, ctx, pod, usable, weights.taint_toleration))
            rows.setdefault(id(row), (TAINT_TOLERATION, row, []))[2].append(t)
    for plugin, row, types in rows.values():
        ctx.score(types, row, plugin)


FEATURE = Feature(
    name=PLUGIN,
    plugins=(PLUGIN,),
    compile=_compile,
    type_key=scoring_signature,
)
