"""A pod's placement constraints on the wire, both directions: node selector terms (required
and preferred), tolerations, pod (anti-)affinity and topology spread.

Readers check the wire's own shape (enums) and build the model's objects, which check the
rules the API server checks (`solver.model`, written once for both readers); each violation
is reported at its field path. The writers are their inverse (for the CLI talking to a
server).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from gangplan.v1 import cluster_pb2 as pb
from solver.codec._errors import Violations, build
from solver.model import (
    FieldSelectorRequirement,
    InterPodTerms,
    LabelRequirement,
    LabelSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PodAffinityTerm,
    PreferredSchedulingTerm,
    Toleration,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)
from solver.model._cluster import TaintEffect

__all__ = [
    "EFFECTS",
    "SELECTOR_OPS",
    "inter_pod_from_proto",
    "inter_pod_to_proto",
    "known",
    "label_selector_from_proto",
    "label_selector_to_proto",
    "missing_or_unknown",
    "node_affinity_from_proto",
    "preferred_from_proto",
    "preferred_to_proto",
    "requirements_from_proto",
    "spread_from_proto",
    "spread_to_proto",
    "terms_to_proto",
    "tolerations_from_proto",
]

EFFECTS: dict[pb.TaintEffect.ValueType, TaintEffect] = {
    pb.TAINT_EFFECT_NO_SCHEDULE: "NoSchedule",
    pb.TAINT_EFFECT_PREFER_NO_SCHEDULE: "PreferNoSchedule",
    pb.TAINT_EFFECT_NO_EXECUTE: "NoExecute",
}
SELECTOR_OPS: dict[pb.SelectorOperator.ValueType, str] = {
    pb.SELECTOR_OPERATOR_IN: "In",
    pb.SELECTOR_OPERATOR_NOT_IN: "NotIn",
    pb.SELECTOR_OPERATOR_EXISTS: "Exists",
    pb.SELECTOR_OPERATOR_DOES_NOT_EXIST: "DoesNotExist",
    pb.SELECTOR_OPERATOR_GT: "Gt",
    pb.SELECTOR_OPERATOR_LT: "Lt",
}
_LABEL_OPS: dict[
    pb.LabelSelectorOperator.ValueType, Literal["In", "NotIn", "Exists", "DoesNotExist"]
] = {
    pb.LABEL_SELECTOR_OPERATOR_IN: "In",
    pb.LABEL_SELECTOR_OPERATOR_NOT_IN: "NotIn",
    pb.LABEL_SELECTOR_OPERATOR_EXISTS: "Exists",
    pb.LABEL_SELECTOR_OPERATOR_DOES_NOT_EXIST: "DoesNotExist",
}
_WHEN: dict[pb.WhenUnsatisfiable.ValueType, Literal["DoNotSchedule", "ScheduleAnyway"]] = {
    pb.WHEN_UNSATISFIABLE_DO_NOT_SCHEDULE: "DoNotSchedule",
    pb.WHEN_UNSATISFIABLE_SCHEDULE_ANYWAY: "ScheduleAnyway",
}
_POLICIES: dict[pb.NodeInclusionPolicy.ValueType, Literal["Honor", "Ignore"]] = {
    pb.NODE_INCLUSION_POLICY_HONOR: "Honor",
    pb.NODE_INCLUSION_POLICY_IGNORE: "Ignore",
}
_SELECTOR_CODES = {v: k for k, v in SELECTOR_OPS.items()}
_LABEL_CODES = {v: k for k, v in _LABEL_OPS.items()}
_WHEN_CODES = {v: k for k, v in _WHEN.items()}
_POLICY_CODES = {v: k for k, v in _POLICIES.items()}


def known(enum: Any, value: int, path: str, out: Violations) -> None:
    """A proto3 enum field holds any int32 on the wire: only declared values are input."""
    if value not in enum.DESCRIPTOR.values_by_number:
        out.add(path, f"unknown enum value {value}")


def missing_or_unknown(value: int, missing: str) -> str:
    return missing if value == 0 else f"unknown enum value {value}"


# ----------------------------------------------------------------------------- node affinity


def requirements_from_proto(
    items: Iterable[pb.NodeSelectorRequirement], path: str, out: Violations, fields: bool
) -> tuple[NodeSelectorRequirement, ...]:
    kind = FieldSelectorRequirement if fields else NodeSelectorRequirement
    result = []
    for i, r in enumerate(items):
        where = f"{path}[{i}]"
        op = SELECTOR_OPS.get(r.operator)
        if op is None:
            out.add(f"{where}.operator", missing_or_unknown(r.operator, "must be set"))
            continue
        req = build(kind, where, out, key=r.key, operator=op, values=tuple(r.values))
        if req is not None:
            result.append(req)
    return tuple(result)


def _term(msg: pb.NodeSelectorTerm, path: str, out: Violations) -> NodeSelectorTerm:
    return NodeSelectorTerm(
        match_expressions=requirements_from_proto(
            msg.match_expressions, f"{path}.match_expressions", out, fields=False
        ),
        match_fields=requirements_from_proto(msg.match_fields, f"{path}.match_fields", out, True),
    )


def node_affinity_from_proto(
    msg: pb.Pod, path: str, out: Violations
) -> tuple[NodeSelectorTerm, ...]:
    return tuple(
        _term(t, f"{path}.required_node_affinity[{i}]", out)
        for i, t in enumerate(msg.required_node_affinity)
    )


def preferred_from_proto(
    msg: pb.Pod, path: str, out: Violations
) -> tuple[PreferredSchedulingTerm, ...]:
    result = []
    for i, p in enumerate(msg.preferred_node_affinity):
        where = f"{path}.preferred_node_affinity[{i}]"
        term = _term(p.preference, f"{where}.preference", out)
        preferred = build(PreferredSchedulingTerm, where, out, weight=p.weight, preference=term)
        if preferred is not None:
            result.append(preferred)
    return tuple(result)


def tolerations_from_proto(msg: pb.Pod, path: str, out: Violations) -> tuple[Toleration, ...]:
    tolerations = []
    for i, toleration in enumerate(msg.tolerations):
        known(pb.TolerationOperator, toleration.operator, f"{path}.tolerations[{i}].operator", out)
        if toleration.effect:
            known(pb.TaintEffect, toleration.effect, f"{path}.tolerations[{i}].effect", out)
        exists = toleration.operator == pb.TOLERATION_OPERATOR_EXISTS
        built = build(
            Toleration,
            f"{path}.tolerations[{i}]",
            out,
            key=toleration.key,
            operator="Exists" if exists else "Equal",
            value=toleration.value,
            effect=EFFECTS.get(toleration.effect, ""),
        )
        if built is not None:
            tolerations.append(built)
    return tuple(tolerations)


# ----------------------------------------------------------------------------- pod terms


def _selector(msg: pb.LabelSelector, path: str, out: Violations) -> LabelSelector:
    reqs = []
    for i, r in enumerate(msg.match_expressions):
        where = f"{path}.match_expressions[{i}]"
        op = _LABEL_OPS.get(r.operator)
        if op is None:
            out.add(f"{where}.operator", missing_or_unknown(r.operator, "must be set"))
            continue
        req = build(LabelRequirement, where, out, key=r.key, operator=op, values=tuple(r.values))
        if req is not None:
            reqs.append(req)
    return LabelSelector(
        match_labels=tuple(sorted(msg.match_labels.items())), match_expressions=tuple(reqs)
    )


def _pod_term(
    msg: pb.PodAffinityTerm, own: str, path: str, out: Violations
) -> PodAffinityTerm | None:
    if msg.all_namespaces and msg.namespaces:
        out.add(f"{path}.namespaces", "must be empty when all_namespaces is set")
    namespaces: tuple[str, ...] | None = (
        None if msg.all_namespaces else tuple(sorted(set(msg.namespaces))) or (own,)
    )
    selector = (
        _selector(msg.label_selector, f"{path}.label_selector", out)
        if msg.HasField("label_selector")
        else None
    )
    return build(
        PodAffinityTerm,
        path,
        out,
        names=_SELECTOR_NAMES,
        selector=selector,
        namespaces=namespaces,
        topology_key=msg.topology_key,
    )


_SELECTOR_NAMES = {"selector": "label_selector"}  # the model's name -> the wire's


def _terms(
    msg: pb.PodAffinity, own: str, path: str, out: Violations
) -> tuple[tuple[PodAffinityTerm, ...], tuple[WeightedPodAffinityTerm, ...]]:
    required = [_pod_term(t, own, f"{path}.required[{i}]", out) for i, t in enumerate(msg.required)]
    preferred = []
    for i, w in enumerate(msg.preferred):
        where = f"{path}.preferred[{i}]"
        term = _pod_term(w.term, own, f"{where}.term", out)
        weighted = build(WeightedPodAffinityTerm, where, out, weight=w.weight, term=term)
        if weighted is not None:
            preferred.append(weighted)
    return tuple(t for t in required if t is not None), tuple(preferred)


def inter_pod_from_proto(msg: pb.Pod, own: str, path: str, out: Violations) -> InterPodTerms | None:
    """The pod's (anti-)affinity; `own` is its namespace (a term's default)."""
    if not msg.HasField("pod_affinity") and not msg.HasField("pod_anti_affinity"):
        return None
    affinity, preferred = _terms(msg.pod_affinity, own, f"{path}.pod_affinity", out)
    anti, preferred_anti = _terms(msg.pod_anti_affinity, own, f"{path}.pod_anti_affinity", out)
    terms = InterPodTerms(
        affinity=affinity,
        anti_affinity=anti,
        preferred_affinity=preferred,
        preferred_anti_affinity=preferred_anti,
    )
    return None if terms.empty else terms


def spread_from_proto(
    msg: pb.Pod, path: str, out: Violations
) -> tuple[TopologySpreadConstraint, ...]:
    result = []
    for i, c in enumerate(msg.topology_spread_constraints):
        where = f"{path}.topology_spread_constraints[{i}]"
        before = len(out.items)
        when = _WHEN.get(c.when_unsatisfiable)
        if when is None:
            out.add(
                f"{where}.when_unsatisfiable",
                missing_or_unknown(c.when_unsatisfiable, "must be set"),
            )
        for name in ("node_affinity_policy", "node_taints_policy"):
            known(pb.NodeInclusionPolicy, getattr(c, name), f"{where}.{name}", out)
        selector = (
            _selector(c.label_selector, f"{where}.label_selector", out)
            if c.HasField("label_selector")
            else None
        )
        given = {"min_domains": c.min_domains} if c.min_domains else {}  # 0: not given
        spread = build(  # built even past a violation above, so that each is named
            TopologySpreadConstraint,
            where,
            out,
            names=_SELECTOR_NAMES,
            max_skew=c.max_skew,
            topology_key=c.topology_key,
            when_unsatisfiable=when or "DoNotSchedule",
            selector=selector,
            node_affinity_policy=_POLICIES.get(c.node_affinity_policy, "Honor"),
            node_taints_policy=_POLICIES.get(c.node_taints_policy, "Ignore"),
            **given,
        )
        if spread is not None and len(out.items) == before:
            result.append(spread)
    return tuple(result)


# ----------------------------------------------------------------------------- writers


def terms_to_proto(terms: Iterable[NodeSelectorTerm]) -> list[pb.NodeSelectorTerm]:
    def reqs(items: tuple[NodeSelectorRequirement, ...]) -> list[pb.NodeSelectorRequirement]:
        return [
            pb.NodeSelectorRequirement(
                key=r.key, operator=_SELECTOR_CODES[r.operator], values=list(r.values)
            )
            for r in items
        ]

    return [
        pb.NodeSelectorTerm(
            match_expressions=reqs(t.match_expressions), match_fields=reqs(t.match_fields)
        )
        for t in terms
    ]


def preferred_to_proto(
    terms: tuple[PreferredSchedulingTerm, ...],
) -> list[pb.PreferredSchedulingTerm]:
    return [
        pb.PreferredSchedulingTerm(weight=t.weight, preference=terms_to_proto([t.preference])[0])
        for t in terms
    ]


def _selector_to_proto(selector: LabelSelector) -> pb.LabelSelector:
    return pb.LabelSelector(
        match_labels=dict(selector.match_labels),
        match_expressions=[
            pb.LabelSelectorRequirement(
                key=r.key, operator=_LABEL_CODES[r.operator], values=list(r.values)
            )
            for r in selector.match_expressions
        ],
    )


def _pod_term_to_proto(term: PodAffinityTerm) -> pb.PodAffinityTerm:
    msg = pb.PodAffinityTerm(
        namespaces=list(term.namespaces or ()),
        all_namespaces=term.namespaces is None,
        topology_key=term.topology_key,
    )
    if term.selector is not None:
        msg.label_selector.CopyFrom(_selector_to_proto(term.selector))
    return msg


def inter_pod_to_proto(terms: InterPodTerms | None, into: pb.Pod) -> None:
    if terms is None:
        return
    for target, required, preferred in (
        (into.pod_affinity, terms.affinity, terms.preferred_affinity),
        (into.pod_anti_affinity, terms.anti_affinity, terms.preferred_anti_affinity),
    ):
        if not required and not preferred:
            continue
        target.SetInParent()
        target.required.extend(_pod_term_to_proto(t) for t in required)
        target.preferred.extend(
            pb.WeightedPodAffinityTerm(weight=w.weight, term=_pod_term_to_proto(w.term))
            for w in preferred
        )


def spread_to_proto(
    constraints: tuple[TopologySpreadConstraint, ...],
) -> list[pb.TopologySpreadConstraint]:
    out = []
    for c in constraints:
        msg = pb.TopologySpreadConstraint(
            max_skew=c.max_skew,
            topology_key=c.topology_key,
            when_unsatisfiable=_WHEN_CODES[c.when_unsatisfiable],
            min_domains=c.min_domains if c.when_unsatisfiable == "DoNotSchedule" else 0,
            node_affinity_policy=_POLICY_CODES[c.node_affinity_policy],
            node_taints_policy=_POLICY_CODES[c.node_taints_policy],
        )
        if c.selector is not None:
            msg.label_selector.CopyFrom(_selector_to_proto(c.selector))
        out.append(msg)
    return out


label_selector_from_proto = _selector
"""A LabelSelector message as the model's (violations under `path`), for other readers."""
label_selector_to_proto = _selector_to_proto
