"""Node fit apart from resources, node by node: cordon, readiness, taints, selector, affinity.

Checks run in kube-scheduler's filter order and the first failure is the node's reason,
worded as kube-scheduler words it so counted reasons read like a FitError::

    1. NodeUnschedulable  node(s) were unschedulable
    2. Readiness          node(s) were not ready
    3. TaintToleration    node(s) had untolerated taint {key: value}
    4. NodeAffinity       node(s) didn't match Pod's node affinity/selector

A cordoned node still takes pods tolerating `node.kubernetes.io/unschedulable:NoSchedule`
(kube-scheduler's NodeUnschedulable), and a NotReady node pods tolerating
`node.kubernetes.io/not-ready:NoSchedule`, because that is the taint the node lifecycle
controller puts on it. A node affinity term the scheduler cannot parse (`_labels`) matches
no node.
"""

from __future__ import annotations

from solver.features.predicates._labels import (
    label_integer,
    valid_field_requirement,
    valid_label_requirement,
)
from solver.model import Node, NodeSelectorRequirement, NodeSelectorTerm, Pod, Taint, Toleration

__all__ = [
    "REASON_AFFINITY",
    "REASON_NOT_READY",
    "REASON_UNSCHEDULABLE",
    "matches_requirement",
    "matches_term",
    "node_fit_reason",
    "parses",
    "tolerates",
    "untolerated_taint_reason",
]

REASON_UNSCHEDULABLE = "node(s) were unschedulable"
REASON_NOT_READY = "node(s) were not ready"
REASON_AFFINITY = "node(s) didn't match Pod's node affinity/selector"

_CORDON = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")
_NOT_READY = Taint(key="node.kubernetes.io/not-ready", effect="NoSchedule")


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """Kubernetes `Toleration.ToleratesTaint`."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator == "Exists":
        return True  # empty key with Exists tolerates everything (key checked above)
    return toleration.value == taint.value


def _tolerated(taint: Taint, tolerations: tuple[Toleration, ...]) -> bool:
    return any(tolerates(t, taint) for t in tolerations)


def untolerated_taint_reason(node: Node, pod: Pod) -> str | None:
    for taint in node.taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not _tolerated(taint, pod.tolerations):
            return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"
    return None


def matches_requirement(req: NodeSelectorRequirement, labels: dict[str, str]) -> bool:
    """One `matchExpressions` entry (Gt/Lt values are validated integers)."""
    present = req.key in labels
    value = labels.get(req.key, "")
    match req.operator:
        case "In":
            return present and value in req.values
        case "NotIn":
            return not present or value not in req.values
        case "Exists":
            return present
        case "DoesNotExist":
            return not present
        case "Gt" | "Lt":
            number, bound = label_integer(value), label_integer(req.values[0])
            if not present or number is None or bound is None:
                return False
            return number > bound if req.operator == "Gt" else number < bound
    return False  # pragma: no cover - the Literal type admits nothing else


def parses(term: NodeSelectorTerm) -> bool:
    """The scheduler can parse the term; an empty term or one that does not parse matches
    no node (component-helpers `nodeaffinity.LazyErrorNodeSelector`)."""
    return (
        bool(term.match_expressions or term.match_fields)
        and all(valid_label_requirement(r) for r in term.match_expressions)
        and all(valid_field_requirement(r) for r in term.match_fields)
    )


def matches_term(term: NodeSelectorTerm, node: Node) -> bool:
    """All expressions and fields of a term hold; an empty or unparsable term matches
    nothing."""
    if not parses(term):
        return False
    fields = {"metadata.name": node.name}
    return all(matches_requirement(r, node.labels) for r in term.match_expressions) and all(
        matches_requirement(r, fields) for r in term.match_fields
    )


def node_fit_reason(pod: Pod, node: Node) -> str | None:
    """Why `pod` cannot go to `node` for a reason other than resources; None when it can."""
    if node.unschedulable and not _tolerated(_CORDON, pod.tolerations):
        return REASON_UNSCHEDULABLE
    if not node.ready and not _tolerated(_NOT_READY, pod.tolerations):
        return REASON_NOT_READY
    taint = untolerated_taint_reason(node, pod)
    if taint:
        return taint
    if any(node.labels.get(k) != v for k, v in pod.node_selector.items()):
        return REASON_AFFINITY
    if pod.required_affinity is not None and not any(
        matches_term(t, node) for t in pod.required_affinity
    ):
        return REASON_AFFINITY
    return None
