"""The Kubernetes Workload API (`scheduling.k8s.io`) as a gang dialect.

Field names from kubernetes/api `scheduling/v1beta1/types.go` (v1.37; `v1alpha3` has the
same PodGroup) and `core/v1/types.go` PodSchedulingGroup; semantics from KEP-4671 (gang
scheduling), KEP-5832 (standalone PodGroup), KEP-5732 (topology-aware workload
scheduling) and KEP-5710 (workload-aware preemption):

- a pod joins the PodGroup named by `spec.schedulingGroup.podGroupName` (same namespace);
- `spec.schedulingPolicy` is exactly one of `basic: {}` (pods placed one by one) and
  `gang: {minCount}` (at least minCount pods, counting those already scheduled, or none);
- `spec.schedulingConstraints.topology[0].key` (at most one): every pod of the group on
  nodes sharing one value of that node label — a required gather at that label;
- `spec.disruptionMode`: `single: {}` (the default; a pod may be evicted alone) or
  `all: {}` (evicting one evicts the group); v1alpha2 (v1.36) wrote it as the string
  `Pod` / `PodGroup`, read as Single / All;
- `spec.priority` (set by admission from `priorityClassName`) or the class named: the
  group's priority, which its pods are scheduled and preempted with;
- `spec.preemptionPolicy`: `Never` keeps the group from preempting;
- `spec.parentCompositePodGroupName` (alpha CompositePodGroup, a gang of gangs) is not
  enforced yet: such a group is refused (stays pending, with that reason), never placed
  as if it stood alone; so is a group with `spec.resourceClaims` (DRA, not modelled yet:
  as a pod with claims, it waits rather than run without its devices);
- `spec.workloadRef` names the Workload the group was made from: not scheduling input.

The `Workload` object only holds the templates a controller copies into PodGroups; the
scheduler reads the PodGroups, so a Workload is read (checked) and otherwise left alone.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, model_validator

from solver.kube.objects import Metadata, PodGroupStatus, _K8s
from solver.model import Dialect, MatchPolicy

__all__ = [
    "WORKLOAD_API",
    "WORKLOAD_API_VERSIONS",
    "K8sWorkload",
    "K8sWorkloadPodGroup",
]

WORKLOAD_API: Dialect = "scheduling.k8s.io"
WORKLOAD_API_VERSIONS = frozenset(
    {"scheduling.k8s.io/v1alpha2", "scheduling.k8s.io/v1alpha3", "scheduling.k8s.io/v1beta1"}
)
MAX_PRIORITY = 1_000_000_000  # HighestUserDefinablePriority
GANG_MATCH_POLICY = MatchPolicy.WAITING_AND_RUNNING  # "schedulable or scheduled" count


class _Empty(_K8s):
    """`basic: {}`, `single: {}`, `all: {}`: presence is the value."""


class _GangPolicy(_K8s):
    min_count: Annotated[int, Field(ge=1, le=2**31 - 1, strict=True)] = Field(alias="minCount")


class _Union(_K8s):
    """A Kubernetes union: exactly one of its fields is set."""

    @model_validator(mode="after")
    def _exactly_one(self) -> _Union:
        names = list(type(self).model_fields)
        if sum(getattr(self, n) is not None for n in names) != 1:
            raise ValueError(f"exactly one of {' and '.join(names)} must be set")
        return self


class SchedulingPolicy(_Union):
    basic: _Empty | None = None
    gang: _GangPolicy | None = None


class _TopologyConstraint(_K8s):
    key: str = Field(min_length=1)


class SchedulingConstraints(_K8s):
    topology: list[_TopologyConstraint] = Field(default_factory=list, max_length=1)


def _disruption_mode(value: object) -> object:
    """v1alpha2's string form -> the object form of v1alpha3 and later."""
    strings: dict[str, dict[str, dict[str, str]]] = {"Pod": {"single": {}}, "PodGroup": {"all": {}}}
    if isinstance(value, str):
        if value not in strings:
            raise ValueError(f"must be Pod or PodGroup, got {value!r}")
        return strings[value]
    return value


class DisruptionMode(_Union):
    single: _Empty | None = None
    all: _Empty | None = None

    @property
    def mode(self) -> Literal["Single", "All"]:
        return "All" if self.all is not None else "Single"


class _GroupPolicy(_K8s):
    """What a PodGroupTemplate holds and a controller copies into each PodGroup."""

    scheduling_policy: SchedulingPolicy = Field(alias="schedulingPolicy")
    scheduling_constraints: SchedulingConstraints | None = Field(
        default=None, alias="schedulingConstraints"
    )
    disruption_mode: Annotated[DisruptionMode | None, BeforeValidator(_disruption_mode)] = Field(
        default=None, alias="disruptionMode"
    )
    priority_class_name: str | None = Field(default=None, alias="priorityClassName")
    priority: Annotated[int, Field(ge=-(2**31), le=MAX_PRIORITY, strict=True)] | None = None
    preemption_policy: Literal["PreemptLowerPriority", "Never"] | None = Field(
        default=None, alias="preemptionPolicy"
    )


class WorkloadPodGroupSpec(_GroupPolicy):
    parent_composite: str | None = Field(default=None, alias="parentCompositePodGroupName")
    resource_claims: list[Any] = Field(default_factory=list, alias="resourceClaims")

    @property
    def min_count(self) -> int:
        """The gang's minCount; a basic group needs just the pod at hand."""
        gang = self.scheduling_policy.gang
        return gang.min_count if gang is not None else 1

    @property
    def topology_key(self) -> str | None:
        constraints = self.scheduling_constraints
        return constraints.topology[0].key if constraints and constraints.topology else None


class K8sWorkloadPodGroup(_K8s):
    api_version: str = Field(alias="apiVersion")
    metadata: Metadata
    spec: WorkloadPodGroupSpec
    status: PodGroupStatus = Field(default_factory=PodGroupStatus)


class _PodGroupTemplate(_GroupPolicy):
    name: str = Field(min_length=1)


class _WorkloadSpec(_K8s):
    pod_group_templates: list[_PodGroupTemplate] = Field(
        default_factory=list, alias="podGroupTemplates", max_length=8
    )


class K8sWorkload(_K8s):
    metadata: Metadata
    spec: _WorkloadSpec = Field(default_factory=_WorkloadSpec)


def workload_gang_fields(pg: K8sWorkloadPodGroup) -> dict[str, Any]:
    """The Gang fields a Workload API PodGroup sets (besides id, names and priority)."""
    spec = pg.spec
    return {
        "dialect": WORKLOAD_API,
        "min_member": spec.min_count,
        "total_number": spec.min_count,
        "match_policy": GANG_MATCH_POLICY,
        "topology_key": spec.topology_key,
        "disruption_mode": spec.disruption_mode.mode if spec.disruption_mode else "Single",
        "refused": (
            f"its parent CompositePodGroup {spec.parent_composite!r} (alpha) is not enforced "
            "by gangplan yet"
            if spec.parent_composite
            else "it claims devices through DRA (spec.resourceClaims), which gangplan does not "
            "model yet: it waits rather than run without them"
            if spec.resource_claims
            else None
        ),
    }
