"""Node fit apart from resources, re-derived: cordon, readiness, taints, selector, affinity."""

from __future__ import annotations

import re

from solver.model import Node, Pod
from solver.verify._context import VerifyContext

__all__ = ["label_expression_holds", "predicates"]

_INTEGER = re.compile(r"[+-]?[0-9]+")


def predicates(ctx: VerifyContext) -> list[str]:
    """With `predicates`: every placed or nominated pod passes its node's filters."""
    problems = []
    for node_name, pods in ctx.new_on.items():
        node = ctx.node(node_name)
        for pod in pods:
            why = _predicate_violation(pod, node)
            if why:
                problems.append(f"{pod.key} on {node_name}: {why}")
    return problems


def _tolerated(pod: Pod, key: str, value: str, effect: str) -> bool:
    for t in pod.tolerations:
        key_ok = t.key == key or (t.key == "" and t.operator == "Exists")
        effect_ok = t.effect in ("", effect)
        value_ok = t.operator == "Exists" or t.value == value
        if key_ok and effect_ok and value_ok:
            return True
    return False


def label_expression_holds(
    labels: dict[str, str], key: str, op: str, values: tuple[str, ...]
) -> bool:
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op == "In":
        return labels.get(key) in values
    if op == "NotIn":
        return labels.get(key) not in values
    # Gt / Lt: both sides base-10 integers as Go's strconv.ParseInt reads them ("+5" too)
    if key not in labels or not _INTEGER.fullmatch(labels[key]):
        return False
    return int(labels[key]) > int(values[0]) if op == "Gt" else int(labels[key]) < int(values[0])


def _predicate_violation(pod: Pod, node: Node) -> str | None:
    if pod.scheduling_gates:
        return f"pod has scheduling gates ({', '.join(pod.scheduling_gates)})"
    if node.unschedulable and not _tolerated(
        pod, "node.kubernetes.io/unschedulable", "", "NoSchedule"
    ):
        return "node is cordoned"
    if not node.ready and not _tolerated(pod, "node.kubernetes.io/not-ready", "", "NoSchedule"):
        return "node is not ready"
    for taint in node.taints:
        if taint.effect != "PreferNoSchedule" and not _tolerated(
            pod, taint.key, taint.value, taint.effect
        ):
            return f"taint {taint.key}={taint.value}:{taint.effect} not tolerated"
    for key, value in pod.node_selector.items():
        if node.labels.get(key) != value:
            return f"nodeSelector {key}={value} not matched"
    if pod.required_affinity is not None:
        fields = {"metadata.name": node.name}
        term_holds = [
            (bool(term.match_expressions) or bool(term.match_fields))
            and all(
                label_expression_holds(node.labels, e.key, e.operator, e.values)
                for e in term.match_expressions
            )
            and all(
                label_expression_holds(fields, e.key, e.operator, e.values)
                for e in term.match_fields
            )
            for term in pod.required_affinity
        ]
        if not any(term_holds):
            return "required node affinity not matched"
    return None
