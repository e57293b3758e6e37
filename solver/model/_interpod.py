"""Pod-level placement terms kube-scheduler enforces between pods, and node preferences.

Inter-pod affinity and anti-affinity (`spec.affinity.podAffinity` / `podAntiAffinity`),
topology spread (`spec.topologySpreadConstraints`) and preferred node affinity, as data.
Readers resolve what the API server or the scheduler resolves before the plugins run:
`matchLabelKeys` / `mismatchLabelKeys` are merged into the label selector with the pod's
own label values, and a term's namespaces are the explicit list, plus those a
`namespaceSelector` picks among the namespaces the input describes (`None`: every
namespace, the `namespaceSelector: {}` case); no list and no selector means the pod's own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from solver.model._cluster import NodeSelectorTerm
from solver.model._frozen import Frozen
from solver.model._labels import values_suit_operator

__all__ = [
    "InterPodTerms",
    "LabelRequirement",
    "LabelSelector",
    "PodAffinityTerm",
    "PreferredSchedulingTerm",
    "TopologySpreadConstraint",
    "WeightedPodAffinityTerm",
]


class LabelRequirement(Frozen):
    key: str = Field(min_length=1)
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: tuple[str, ...] = ()

    _values = field_validator("values")(values_suit_operator)


class LabelSelector(Frozen):
    """`metav1.LabelSelector`: every label and expression must hold; an empty selector
    matches every pod (a missing one, `None` where it is optional, matches none)."""

    match_labels: tuple[tuple[str, str], ...] = ()  # sorted (key, value) pairs
    match_expressions: tuple[LabelRequirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.match_labels and not self.match_expressions

    def matches(self, labels: Mapping[str, str]) -> bool:
        """`metav1.LabelSelectorAsSelector(s).Matches(labels)`."""
        if any(labels.get(k) != v for k, v in self.match_labels):
            return False
        for r in self.match_expressions:
            present = r.key in labels
            match r.operator:
                case "In":
                    ok = present and labels[r.key] in r.values
                case "NotIn":
                    ok = not present or labels[r.key] not in r.values
                case "Exists":
                    ok = present
                case "DoesNotExist":
                    ok = not present
            if not ok:
                return False
        return True


class PodAffinityTerm(Frozen):
    """Pods matching `selector` in `namespaces` (None: all), per domain of `topology_key`."""

    selector: LabelSelector | None = Field(default=None, description="None matches no pod")
    namespaces: tuple[str, ...] | None = Field(
        default=(), description="sorted; None for every namespace"
    )
    topology_key: str = Field(min_length=1)


class WeightedPodAffinityTerm(Frozen):
    weight: int = Field(ge=1, le=100)
    term: PodAffinityTerm


class TopologySpreadConstraint(Frozen):
    max_skew: int = Field(ge=1)
    topology_key: str = Field(min_length=1)
    when_unsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"]
    selector: LabelSelector | None = None
    min_domains: int = Field(default=1, ge=1, description="given only with DoNotSchedule")
    node_affinity_policy: Literal["Honor", "Ignore"] = "Honor"
    node_taints_policy: Literal["Honor", "Ignore"] = "Ignore"

    @field_validator("min_domains")
    @classmethod
    def _do_not_schedule(cls, domains: int, info: ValidationInfo) -> int:
        """Checked when given (a default is not validated): the API server refuses
        `minDomains` beside `ScheduleAnyway`."""
        if info.data.get("when_unsatisfiable", "DoNotSchedule") != "DoNotSchedule":
            raise ValueError("only allowed with whenUnsatisfiable DoNotSchedule")
        return domains


class PreferredSchedulingTerm(Frozen):
    weight: int = Field(ge=1, le=100)
    preference: NodeSelectorTerm


class InterPodTerms(Frozen):
    """A pod's inter-pod affinity and anti-affinity, required and preferred.

    Kept for running pods too: their required anti-affinity repels incoming pods, and
    their affinity terms count in the incoming pods' scores (`InterPodAffinity`).
    """

    affinity: tuple[PodAffinityTerm, ...] = ()
    anti_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedPodAffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedPodAffinityTerm, ...] = ()

    @property
    def empty(self) -> bool:
        return not (
            self.affinity
            or self.anti_affinity
            or self.preferred_affinity
            or self.preferred_anti_affinity
        )
