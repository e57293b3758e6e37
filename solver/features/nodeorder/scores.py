"""kube-scheduler's NodeAffinity and TaintToleration scores, a row over all nodes at once.

    NodeAffinity     raw(node) = Σ weight of the pod's preferred terms the node matches
                     (a term with weight 0, no requirements or one that does not parse
                     counts nowhere); DefaultNormalizeScore(100, reverse=false).
                     A pod without preferred terms is not scored (PreScore returns Skip).
    TaintToleration  raw(node) = the node's PreferNoSchedule taints the pod does not
                     tolerate, counting only tolerations with effect "" or PreferNoSchedule;
                     DefaultNormalizeScore(100, reverse=true).

    DefaultNormalizeScore(max, reverse), over the scored nodes:
        m = max(0, largest raw score);  m = 0: every node 0, or `max` when reversed;
        else score = max · raw / m (integer division), and `max − score` when reversed.

Sources: pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go (PreScore, Score,
NormalizeScore), tainttoleration/taint_toleration.go, helper/normalize_score.go, and
component-helpers/scheduling/corev1/nodeaffinity (PreferredSchedulingTerms.Score).

The raw rows depend only on the nodes and the pod's terms or tolerations: each is computed
once per node generation and signature and memoised on the node table (`NodeTable.memo`),
with label columns (one code per node and label key) shared by every term that reads the
key, so a signature costs a few numpy passes over the nodes, not a Python loop per node.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from solver.features.predicates import label_integer, parses, tolerates
from solver.model import (
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pod,
    PreferredSchedulingTerm,
    Taint,
    Toleration,
)
from solver.problem import BoolArray, IntArray
from solver.snapshot import NodeTable

__all__ = [
    "MAX_NODE_SCORE",
    "LabelColumn",
    "default_normalize_score",
    "intolerable_taint_counts",
    "label_column",
    "node_affinity_scores",
    "preferred_affinity_counts",
    "scoring_tolerations",
    "taint_toleration_scores",
    "term_mask",
]

MAX_NODE_SCORE = 100
"""kube-scheduler's `framework.MaxNodeScore`."""
NAME_FIELD = "metadata.name"


@dataclass(frozen=True)
class LabelColumn:
    """One label key (or the node name) over the nodes, as integer codes."""

    codes: IntArray  # [N] code of the node's value, -1 where the node has no such label
    vocabulary: dict[str, int]  # value -> code
    numbers: IntArray  # [N] the value as a 64-bit integer, 0 where it is not one
    numeric: BoolArray  # [N] the node has the label and its value parses as an integer


def _column(values: list[str | None]) -> LabelColumn:
    vocabulary: dict[str, int] = {}
    codes = np.full(len(values), -1, dtype=np.int64)
    for i, value in enumerate(values):
        if value is not None:
            codes[i] = vocabulary.setdefault(value, len(vocabulary))
    present = codes >= 0
    numbers = np.zeros(len(values), dtype=np.int64)
    numeric = np.zeros(len(values), dtype=bool)
    if vocabulary:
        parsed = [label_integer(v) for v in vocabulary]
        numbers_by_code = np.array([0 if p is None else p for p in parsed], dtype=np.int64)
        numeric_by_code = np.array([p is not None for p in parsed], dtype=bool)
        numbers[present] = numbers_by_code[codes[present]]
        numeric[present] = numeric_by_code[codes[present]]
    for array in (codes, numbers, numeric):
        array.flags.writeable = False
    return LabelColumn(codes, vocabulary, numbers, numeric)


def label_column(nodes: NodeTable, key: str) -> LabelColumn:
    """The label `key` over the nodes, once per node generation."""
    return nodes.memo(
        ("nodeorder", "label", key),
        lambda: _column([node.labels.get(key) for node in nodes.nodes]),
    )


def _field_column(nodes: NodeTable, key: str) -> LabelColumn:
    """A `matchFields` key: the node name for `metadata.name`; no other field exists."""
    if key != NAME_FIELD:
        return nodes.memo(("nodeorder", "no field"), lambda: _column([None] * len(nodes)))
    return nodes.memo(("nodeorder", "field", key), lambda: _column(list(nodes.names)))


def _requirement_mask(column: LabelColumn, req: NodeSelectorRequirement) -> BoolArray:
    """`labels.Requirement.Matches` for every node (the requirement parses)."""
    match req.operator:
        case "In" | "NotIn":
            wanted = [column.vocabulary[v] for v in req.values if v in column.vocabulary]
            hit = np.isin(column.codes, np.array(wanted, dtype=np.int64))
            return hit if req.operator == "In" else ~hit
        case "Exists":
            return column.codes >= 0
        case "DoesNotExist":
            return column.codes < 0
        case "Gt" | "Lt":
            bound = label_integer(req.values[0])
            if bound is None:  # parses() refuses it; kept total for direct callers
                return np.zeros(len(column.codes), dtype=bool)
            side = column.numbers > bound if req.operator == "Gt" else column.numbers < bound
            return column.numeric & side
    raise AssertionError(req.operator)  # pragma: no cover - the Literal type admits no other


def _term_mask(nodes: NodeTable, term: NodeSelectorTerm) -> BoolArray:
    mask = np.full(len(nodes), parses(term), dtype=bool)
    if mask.any():
        for req in term.match_expressions:
            mask &= _requirement_mask(label_column(nodes, req.key), req)
        for req in term.match_fields:
            mask &= _requirement_mask(_field_column(nodes, req.key), req)
    mask.flags.writeable = False
    return mask


def term_mask(nodes: NodeTable, term: NodeSelectorTerm) -> BoolArray:
    """[N] the nodes a node selector term matches; none for an empty or unparsable term."""
    return nodes.memo(("nodeorder", "term", term), partial(_term_mask, nodes, term))


def _preferred_counts(nodes: NodeTable, terms: tuple[PreferredSchedulingTerm, ...]) -> IntArray:
    total = np.zeros(len(nodes), dtype=np.int64)
    for term in terms:
        if term.weight:
            total += term.weight * term_mask(nodes, term.preference)
    total.flags.writeable = False
    return total


def preferred_affinity_counts(
    nodes: NodeTable, terms: tuple[PreferredSchedulingTerm, ...]
) -> IntArray:
    """[N] NodeAffinity's raw score: the weights of the preferred terms each node matches."""
    return nodes.memo(("nodeorder", "preferred", terms), partial(_preferred_counts, nodes, terms))


def scoring_tolerations(pod: Pod) -> tuple[Toleration, ...]:
    """The tolerations TaintToleration scores with: effect "" or PreferNoSchedule."""
    return tuple(t for t in pod.tolerations if t.effect in ("", "PreferNoSchedule"))


def _taint_groups(nodes: NodeTable) -> tuple[list[tuple[Taint, ...]], IntArray]:
    """Nodes grouped by their PreferNoSchedule taints (in spec order, repeats kept)."""
    groups: dict[tuple[Taint, ...], int] = {}
    index = np.zeros(len(nodes), dtype=np.int64)
    for i, node in enumerate(nodes.nodes):
        taints = tuple(t for t in node.taints if t.effect == "PreferNoSchedule")
        index[i] = groups.setdefault(taints, len(groups))
    index.flags.writeable = False
    return list(groups), index


def _intolerable(nodes: NodeTable, tolerations: tuple[Toleration, ...]) -> IntArray:
    groups, index = nodes.memo(("nodeorder", "taint groups"), partial(_taint_groups, nodes))
    per_group = np.array(
        [sum(not any(tolerates(t, taint) for t in tolerations) for taint in g) for g in groups],
        dtype=np.int64,
    )
    counts = per_group[index]
    counts.flags.writeable = False
    return counts


def intolerable_taint_counts(nodes: NodeTable, pod: Pod) -> IntArray:
    """[N] TaintToleration's raw score: PreferNoSchedule taints `pod` does not tolerate."""
    tolerations = scoring_tolerations(pod)
    return nodes.memo(
        ("nodeorder", "intolerable", tolerations), partial(_intolerable, nodes, tolerations)
    )


def default_normalize_score(raw: IntArray, scored: BoolArray, reverse: bool) -> IntArray:
    """helper.DefaultNormalizeScore(MaxNodeScore, reverse) over the `scored` nodes; the
    others get 0 (they are not in the list upstream normalises)."""
    largest = max(int(raw[scored].max()), 0) if scored.any() else 0
    if largest == 0:
        normalized = np.full(len(raw), MAX_NODE_SCORE if reverse else 0, dtype=np.int64)
    else:
        normalized = MAX_NODE_SCORE * raw // largest
        if reverse:
            normalized = MAX_NODE_SCORE - normalized
    return np.where(scored, normalized, 0).astype(np.int64)


def node_affinity_scores(nodes: NodeTable, pod: Pod, scored: BoolArray) -> IntArray:
    """[N] NodeAffinity's normalised score of `pod` over the `scored` nodes."""
    if not pod.preferred_node_affinity:
        return np.zeros(len(nodes), dtype=np.int64)  # PreScore: Skip
    raw = preferred_affinity_counts(nodes, pod.preferred_node_affinity)
    return default_normalize_score(raw, scored, reverse=False)


def taint_toleration_scores(nodes: NodeTable, pod: Pod, scored: BoolArray) -> IntArray:
    """[N] TaintToleration's normalised score of `pod` over the `scored` nodes."""
    return default_normalize_score(intolerable_taint_counts(nodes, pod), scored, reverse=True)
