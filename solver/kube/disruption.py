"""`policy/v1` (and `v1beta1`) PodDisruptionBudget manifests as `DisruptionBudget`s."""

from __future__ import annotations

from pydantic import Field

from solver.kube.affinity import label_selector
from solver.kube.loader import RawObject
from solver.kube.objects import LabelSelector as K8sSelector
from solver.kube.objects import Metadata, _K8s
from solver.kube.validate import build
from solver.model import DisruptionBudget

__all__ = ["K8sDisruptionBudget", "read_budget"]

DEFAULT_NAMESPACE = "default"


class _Spec(_K8s):
    selector: K8sSelector | None = None
    min_available: int | str | None = Field(default=None, alias="minAvailable")
    max_unavailable: int | str | None = Field(default=None, alias="maxUnavailable")
    unhealthy_pod_eviction_policy: str | None = Field(
        default=None, alias="unhealthyPodEvictionPolicy"
    )


class _Status(_K8s):
    disruptions_allowed: int | None = Field(default=None, alias="disruptionsAllowed")
    disrupted_pods: dict[str, str] = Field(default_factory=dict, alias="disruptedPods")


class K8sDisruptionBudget(_K8s):
    metadata: Metadata
    spec: _Spec = Field(default_factory=_Spec)
    status: _Status | None = None


def _count(raw: RawObject, value: int | str | None, field: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise raw.error("must be a count of 0 or more, or a percentage", field=field)
    return str(value)  # its rule is the model's (`DisruptionBudget`)


def read_budget(raw: RawObject, k8s: K8sDisruptionBudget, notes: list[str]) -> DisruptionBudget:
    """The budget as the disruption controller and Volcano's `pdb` plugin read it: a status
    (when the manifest has one) gives the allowance; else the spec does.
    `unhealthyPodEvictionPolicy` is noted: every selected running pod counts as healthy."""
    spec = k8s.spec
    if spec.unhealthy_pod_eviction_policy is not None:
        notes.append(
            f"{raw.source}: document {raw.document}: PodDisruptionBudget "
            f"{k8s.metadata.namespace or DEFAULT_NAMESPACE}/{k8s.metadata.name}: "
            f"spec.unhealthyPodEvictionPolicy {spec.unhealthy_pod_eviction_policy!r} not acted "
            "on (gangplan counts every selected running pod as healthy)"
        )
    status = k8s.status
    return build(
        raw,
        DisruptionBudget,
        "",
        names=_FIELDS,
        namespace=k8s.metadata.namespace or DEFAULT_NAMESPACE,
        name=k8s.metadata.name,
        selector=label_selector(raw, spec.selector, "spec.selector"),
        min_available=_count(raw, spec.min_available, "spec.minAvailable"),
        max_unavailable=_count(raw, spec.max_unavailable, "spec.maxUnavailable"),
        disruptions_allowed=status.disruptions_allowed if status is not None else None,
        disrupted_pods=tuple(sorted(status.disrupted_pods)) if status is not None else (),
    )


_FIELDS = {  # the model's name -> its place in the manifest
    "name": "metadata.name",
    "selector": "spec.selector",
    "min_available": "spec.minAvailable",
    "max_unavailable": "spec.maxUnavailable",
    "disruptions_allowed": "status.disruptionsAllowed",
}
