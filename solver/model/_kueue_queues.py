"""Kueue's quota objects (`kueue.x-k8s.io`): ClusterQueues, Cohorts and LocalQueues.

All three ride on a `Queue` (its `kueue` set), so one queue tree holds them:

* a **LocalQueue** is named `<namespace>/<name>` and its parent is its ClusterQueue
  (`spec.clusterQueue`); a job names it with the label `kueue.x-k8s.io/queue-name`;
* a **ClusterQueue**'s parent is its cohort (`spec.cohortName`, v1beta1 `spec.cohort`);
  its resource groups give, per flavor in the order Kueue tries them, each covered
  resource's `nominalQuota`, `borrowingLimit` and `lendingLimit`;
* a **Cohort** (v1beta2, v1alpha1) may have a parent cohort and quotas of its own; a
  cohort a ClusterQueue names without a Cohort object exists with no quota, as in Kueue.

Amounts are in gangplan's integer units (`cpu` milli, `memory` bytes, devices whole). A
flavor carries its ResourceFlavor's `nodeLabels` (the nodes whose pods use its quota).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from solver.model._frozen import Frozen

__all__ = [
    "KUEUE_PODSET_LABEL",
    "KUEUE_QUEUE_LABEL",
    "MAX_COHORT_DEPTH",
    "KueueFlavorQuota",
    "KueueQueue",
    "KueueQuota",
    "KueueResourceGroup",
    "flavor_resource",
]

KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
"""The label naming a job's LocalQueue (in the job's namespace)."""
MAX_COHORT_DEPTH = 64
"""The deepest cohort tree gangplan acts on (levels of cohorts above a ClusterQueue)."""
KUEUE_PODSET_LABEL = "kueue.x-k8s.io/podset"
"""The label naming a pod's pod set in its Workload (`main` without)."""

KueueKind = Literal["ClusterQueue", "Cohort", "LocalQueue"]


def flavor_resource(flavor: str, resource: str) -> str:
    """The quota dimension of one resource in one flavor (Kueue's `FlavorResource`)."""
    return f"{flavor}/{resource}"


class KueueQuota(Frozen):
    """One resource's `ResourceQuota` in one flavor. None: the limit is not set."""

    nominal: int = Field(default=0, ge=0)
    borrowing_limit: int | None = Field(default=None, ge=0)
    lending_limit: int | None = Field(default=None, ge=0)


class KueueFlavorQuota(Frozen):
    """A flavor of a resource group: its ResourceFlavor's node labels and its quotas."""

    name: str = Field(min_length=1)
    node_labels: dict[str, str] = Field(default_factory=dict)
    resources: dict[str, KueueQuota] = Field(default_factory=dict)


class KueueResourceGroup(Frozen):
    """`spec.resourceGroups[]`: the resources it covers and its flavors, in Kueue's order."""

    covered: tuple[str, ...] = ()
    flavors: tuple[KueueFlavorQuota, ...] = ()

    @field_validator("flavors")
    @classmethod
    def _covers(cls, flavors: tuple[KueueFlavorQuota, ...]) -> tuple[KueueFlavorQuota, ...]:
        names = [f.name for f in flavors]
        for i, name in enumerate(names):
            if names.index(name) != i:
                raise ValueError(f"flavor {name!r} is listed twice")
        return flavors


class KueueQueue(Frozen):
    """What Kueue reads of a ClusterQueue, Cohort or LocalQueue (see the module)."""

    kind: KueueKind
    groups: tuple[KueueResourceGroup, ...] = ()
    fair_weight: float = Field(default=1.0, ge=0.0, le=1e9)  # spec.fairSharing.weight
    strategy: Literal["BestEffortFIFO", "StrictFIFO"] = "BestEffortFIFO"

    def quotas(self) -> dict[str, KueueQuota]:
        """Every flavor-resource's quota (`flavor_resource` keys). Not cached on the model:
        `model_copy(update=...)` would carry a cache of the old groups."""
        return {
            flavor_resource(f.name, r): q
            for g in self.groups
            for f in g.flavors
            for r, q in f.resources.items()
        }
