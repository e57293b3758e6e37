"""A pod's affinity terms, read as the API server admits them and the scheduler resolves them.

* Node affinity: required terms (validated per operator) and preferred terms with weights.
* Pod affinity / anti-affinity: `matchLabelKeys` become `key In (the pod's value)` and
  `mismatchLabelKeys` `key NotIn (...)` in the label selector (KEP-3633, merged by the API
  server); the term's namespaces are its list plus those its `namespaceSelector` picks among
  the namespaces the input knows (a `Namespace` object's labels, else the one label
  `kubernetes.io/metadata.name` every namespace carries); `namespaceSelector: {}` is every
  namespace; neither is the pod's own namespace.
* Topology spread: `matchLabelKeys` merged the same way (KEP-3243).

The rules the API server checks on these terms (a key, values that suit the operator,
weights 1..100, `maxSkew` >= 1, `minDomains` only with `DoNotSchedule`, tolerations) are the
model's own (`solver.model`): the objects are built with `build`, which names a broken rule
at its manifest path, as the gRPC codec names it at its wire path.
"""

from __future__ import annotations

from collections.abc import Mapping

from solver.kube.loader import RawObject
from solver.kube.objects import K8sPod
from solver.kube.objects import LabelSelector as K8sSelector
from solver.kube.objects import NodeSelectorTerm as K8sTerm
from solver.kube.objects import PodAffinity as K8sPodAffinity
from solver.kube.objects import PodAffinityTerm as K8sPodAffinityTerm
from solver.kube.validate import build
from solver.model import (
    FieldSelectorRequirement,
    InterPodTerms,
    LabelRequirement,
    LabelSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PodAffinityTerm,
    PreferredSchedulingTerm,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)

__all__ = ["NAMESPACE_NAME_LABEL", "PodAffinityReader", "label_selector", "node_selector_terms"]

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
_NODE_AFFINITY = "spec.affinity.nodeAffinity"
_SELECTOR_NAMES = {"selector": "labelSelector"}  # the model's name -> the manifest's


def node_selector_terms(
    raw: RawObject, terms: list[K8sTerm], path: str
) -> tuple[NodeSelectorTerm, ...]:
    """Node selector terms, each requirement checked as the API server checks it."""
    out = []
    for ti, term in enumerate(terms):
        kinds: dict[str, tuple[NodeSelectorRequirement, ...]] = {}
        for kind, items in (
            ("matchExpressions", term.match_expressions),
            ("matchFields", term.match_fields),
        ):
            model = FieldSelectorRequirement if kind == "matchFields" else NodeSelectorRequirement
            kinds[kind] = tuple(
                build(
                    raw,
                    model,
                    f"{path}[{ti}].{kind}[{ri}]",
                    key=r.key,
                    operator=r.operator,
                    values=tuple(r.values),
                )
                for ri, r in enumerate(items)
            )
        out.append(
            NodeSelectorTerm(
                match_expressions=kinds["matchExpressions"], match_fields=kinds["matchFields"]
            )
        )
    return tuple(out)


class PodAffinityReader:
    """Reads the pod-level terms of pods; knows the namespaces of the input and their labels."""

    def __init__(self, namespace_labels: Mapping[str, Mapping[str, str]]) -> None:
        self.namespace_labels = {
            ns: {**labels, NAMESPACE_NAME_LABEL: ns} for ns, labels in namespace_labels.items()
        }

    def node_affinity(
        self, raw: RawObject, k8s: K8sPod
    ) -> tuple[tuple[NodeSelectorTerm, ...] | None, tuple[PreferredSchedulingTerm, ...]]:
        """(required terms or None, preferred terms)."""
        affinity = k8s.spec.affinity.node_affinity if k8s.spec.affinity else None
        if affinity is None:
            return None, ()
        required = None
        if affinity.required is not None:
            required = node_selector_terms(
                raw,
                affinity.required.node_selector_terms,
                f"{_NODE_AFFINITY}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms",
            )
        base = f"{_NODE_AFFINITY}.preferredDuringSchedulingIgnoredDuringExecution"
        preferred = tuple(
            build(
                raw,
                PreferredSchedulingTerm,
                f"{base}[{i}]",
                weight=p.weight,
                preference=node_selector_terms(raw, [p.preference], f"{base}[{i}].preference")[0],
            )
            for i, p in enumerate(affinity.preferred)
        )
        return required, preferred

    def inter_pod(self, raw: RawObject, k8s: K8sPod) -> InterPodTerms | None:
        affinity = k8s.spec.affinity
        if affinity is None or (
            affinity.pod_affinity is None and affinity.pod_anti_affinity is None
        ):
            return None
        out: dict[str, object] = {}
        for name, spec, field in (
            ("affinity", affinity.pod_affinity, "podAffinity"),
            ("anti_affinity", affinity.pod_anti_affinity, "podAntiAffinity"),
        ):
            required, preferred = self._terms(raw, k8s, spec, f"spec.affinity.{field}")
            out[name], out[f"preferred_{name}"] = required, preferred
        terms = InterPodTerms.model_validate(out)
        return None if terms.empty else terms

    def _terms(
        self, raw: RawObject, k8s: K8sPod, spec: K8sPodAffinity | None, path: str
    ) -> tuple[tuple[PodAffinityTerm, ...], tuple[WeightedPodAffinityTerm, ...]]:
        if spec is None:
            return (), ()
        req = f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
        pref = f"{path}.preferredDuringSchedulingIgnoredDuringExecution"
        required = tuple(
            self._term(raw, k8s, t, f"{req}[{i}]") for i, t in enumerate(spec.required)
        )
        preferred = tuple(
            build(
                raw,
                WeightedPodAffinityTerm,
                f"{pref}[{i}]",
                weight=w.weight,
                term=self._term(raw, k8s, w.pod_affinity_term, f"{pref}[{i}].podAffinityTerm"),
            )
            for i, w in enumerate(spec.preferred)
        )
        return required, preferred

    def _term(
        self, raw: RawObject, k8s: K8sPod, term: K8sPodAffinityTerm, path: str
    ) -> PodAffinityTerm:
        labels = k8s.metadata.labels
        selector = label_selector(raw, term.label_selector, f"{path}.labelSelector")
        merged = [
            *((key, "In", f"{path}.matchLabelKeys") for key in term.match_label_keys),
            *((key, "NotIn", f"{path}.mismatchLabelKeys") for key in term.mismatch_label_keys),
        ]
        extra: list[LabelRequirement] = []
        for key, op, where in merged:
            if selector is None:
                raise raw.error(f"{where.rsplit('.', 1)[1]} needs a labelSelector", where)
            if key in labels:
                extra.append(LabelRequirement(key=key, operator=op, values=(labels[key],)))
        if selector is not None and extra:
            selector = selector.model_copy(
                update={"match_expressions": (*selector.match_expressions, *extra)}
            )
        return build(
            raw,
            PodAffinityTerm,
            path,
            names=_SELECTOR_NAMES,
            selector=selector,
            namespaces=self._namespaces(raw, k8s, term, path),
            topology_key=term.topology_key,
        )

    def _namespaces(
        self, raw: RawObject, k8s: K8sPod, term: K8sPodAffinityTerm, path: str
    ) -> tuple[str, ...] | None:
        own = k8s.metadata.namespace or "default"
        if term.namespace_selector is None:
            return tuple(sorted(set(term.namespaces))) if term.namespaces else (own,)
        chosen = label_selector(raw, term.namespace_selector, f"{path}.namespaceSelector")
        assert chosen is not None
        if chosen.empty:
            return None  # every namespace
        picked = {ns for ns, labels in self.namespace_labels.items() if chosen.matches(labels)}
        return tuple(sorted(picked | set(term.namespaces)))

    def spread(self, raw: RawObject, k8s: K8sPod) -> tuple[TopologySpreadConstraint, ...]:
        out = []
        labels = k8s.metadata.labels
        for i, c in enumerate(k8s.spec.topology_spread_constraints):
            path = f"spec.topologySpreadConstraints[{i}]"
            selector = label_selector(raw, c.label_selector, f"{path}.labelSelector")
            if c.match_label_keys and selector is None:
                raise raw.error("matchLabelKeys needs a labelSelector", f"{path}.matchLabelKeys")
            extra = []
            taken = (
                {k for k, _ in selector.match_labels} | {r.key for r in selector.match_expressions}
                if selector is not None
                else set()
            )
            for key in c.match_label_keys:
                if key in taken:
                    raise raw.error(
                        f"key {key!r} exists in both matchLabelKeys and labelSelector",
                        f"{path}.matchLabelKeys",
                    )
                if key in labels:
                    extra.append(LabelRequirement(key=key, operator="In", values=(labels[key],)))
            if selector is not None and extra:
                selector = selector.model_copy(
                    update={"match_expressions": (*selector.match_expressions, *extra)}
                )
            given = {} if c.min_domains is None else {"min_domains": c.min_domains}
            out.append(
                build(
                    raw,
                    TopologySpreadConstraint,
                    path,
                    names=_SELECTOR_NAMES,
                    max_skew=c.max_skew,
                    topology_key=c.topology_key,
                    when_unsatisfiable=c.when_unsatisfiable,
                    selector=selector,
                    node_affinity_policy=c.node_affinity_policy or "Honor",
                    node_taints_policy=c.node_taints_policy or "Ignore",
                    **given,
                )
            )
        return tuple(out)


def label_selector(raw: RawObject, k8s: K8sSelector | None, path: str) -> LabelSelector | None:
    """A validated `LabelSelector` manifest as the model's selector (None: none given)."""
    if k8s is None:
        return None
    reqs = [
        build(
            raw,
            LabelRequirement,
            f"{path}.matchExpressions[{i}]",
            key=r.key,
            operator=r.operator,
            values=tuple(r.values),
        )
        for i, r in enumerate(k8s.match_expressions)
    ]
    return LabelSelector(
        match_labels=tuple(sorted(k8s.match_labels.items())), match_expressions=tuple(reqs)
    )
