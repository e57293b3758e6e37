"""The subset of Kubernetes objects gangplan reads, as pydantic models.

Field names follow the API (camelCase aliases); unknown fields are ignored so the
output of `kubectl get -o yaml` loads as it is. Quantities are turned into integers
here (see `solver.quantity`), so nothing past this module sees `"500Mi"`.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, field_validator

from solver.model import labels_problem
from solver.quantity import QuantityError, to_int

__all__ = [
    "Container",
    "K8sClusterNetworkTopology",
    "K8sNamespace",
    "K8sNode",
    "K8sPod",
    "K8sPodGroup",
    "K8sPriorityClass",
    "K8sQueue",
    "Metadata",
    "NetworkTopologySpecEntry",
    "ResourceList",
]


class KeyedQuantityError(QuantityError):
    """A bad quantity under a resource-list key; the key becomes part of the field path."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


def _parse_resource_list(value: object) -> dict[str, int]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError("must be a mapping of resource name to quantity")
    out: dict[str, int] = {}
    for key, raw in value.items():
        try:
            out[str(key)] = to_int(str(key), raw)
        except QuantityError as exc:
            raise KeyedQuantityError(str(key), str(exc)) from None
    return out


ResourceList = Annotated[dict[str, int], BeforeValidator(_parse_resource_list)]
Int32 = Annotated[int, Field(ge=-(2**31), le=2**31 - 1, strict=True)]
Count32 = Annotated[int, Field(ge=0, le=2**31 - 1, strict=True)]  # minMember and the like
"""Kubernetes int32 fields (priorities, PriorityClass value, queue weight)."""
"""`{resource: quantity}` parsed into integer units (milli-CPU, bytes, counts)."""


def _none_to_empty_list(value: object) -> object:
    return [] if value is None else value


def _yaml_scalar(value: object) -> str:
    if isinstance(value, (list, dict)):
        # e.g. `gang.scheduling.koordinator.sh/groups: ["a", "b"]` written as a YAML list.
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _string_map(value: object) -> object:
    # YAML turns `gpu: 8` or `enabled: true` into numbers and booleans; the API has strings.
    if value is None:
        return {}
    if isinstance(value, dict):
        return {str(k): v if isinstance(v, str) else _yaml_scalar(v) for k, v in value.items()}
    return value


def _string_list(value: object) -> object:
    if value is None:
        return []
    if isinstance(value, list):
        return [v if isinstance(v, str) else _yaml_scalar(v) for v in value]
    return value


StrMap = Annotated[dict[str, str], BeforeValidator(_string_map)]
"""A `map[string]string` (labels, annotations, selectors): YAML scalars read as strings."""
StrList = Annotated[list[str], BeforeValidator(_string_list)]
"""A `[]string` (values, namespaces, keys): YAML scalars read as strings."""


class _K8s(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True, frozen=True)


class Metadata(_K8s):
    name: str = Field(min_length=1)
    namespace: str = ""
    labels: StrMap = Field(default_factory=dict)
    annotations: StrMap = Field(default_factory=dict)
    creation_timestamp: str | None = Field(default=None, alias="creationTimestamp")
    deletion_timestamp: str | None = Field(default=None, alias="deletionTimestamp")

    @field_validator("labels")
    @classmethod
    def _labels(cls, labels: dict[str, str]) -> dict[str, str]:
        # the API server refuses an object whose label keys or values break the syntax
        if (problem := labels_problem(labels)) is not None:
            raise ValueError(problem)
        return labels

    @field_validator("creation_timestamp", "deletion_timestamp", mode="before")
    @classmethod
    def _timestamp(cls, value: object) -> object:
        # PyYAML parses unquoted RFC 3339 timestamps into datetime objects.
        return value.isoformat() if hasattr(value, "isoformat") else value


# ----------------------------------------------------------------------------- Node


class Taint(_K8s):
    key: str
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]

    @field_validator("value", mode="before")
    @classmethod
    def _value(cls, value: object) -> object:
        return "" if value is None else value


class NodeCondition(_K8s):
    type: str
    status: str


class NodeSpec(_K8s):
    unschedulable: bool = False
    taints: Annotated[list[Taint], BeforeValidator(_none_to_empty_list)] = Field(
        default_factory=list
    )


class NodeStatus(_K8s):
    allocatable: ResourceList = Field(default_factory=dict)
    capacity: ResourceList = Field(default_factory=dict)
    conditions: Annotated[list[NodeCondition], BeforeValidator(_none_to_empty_list)] = Field(
        default_factory=list
    )


class K8sNode(_K8s):
    metadata: Metadata
    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus = Field(default_factory=NodeStatus)


# ----------------------------------------------------------------------------- Pod


class ResourceRequirements(_K8s):
    requests: ResourceList = Field(default_factory=dict)
    limits: ResourceList = Field(default_factory=dict)


class Container(_K8s):
    name: str = ""
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    restart_policy: str | None = Field(default=None, alias="restartPolicy")


class Toleration(_K8s):
    key: str = ""
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str = ""
    effect: Literal["", "NoSchedule", "PreferNoSchedule", "NoExecute"] = ""

    @field_validator("key", "value", "effect", mode="before")
    @classmethod
    def _empty(cls, value: object) -> object:
        return "" if value is None else value

    @field_validator("operator", mode="before")
    @classmethod
    def _equal(cls, value: object) -> object:
        """An empty operator means Equal (v1 Toleration.ToleratesTaint)."""
        return "Equal" if value is None or value == "" else value


class NodeSelectorRequirement(_K8s):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: StrList = Field(default_factory=list)


class NodeSelectorTerm(_K8s):
    match_expressions: Annotated[
        list[NodeSelectorRequirement], BeforeValidator(_none_to_empty_list)
    ] = Field(default_factory=list, alias="matchExpressions")
    match_fields: Annotated[list[NodeSelectorRequirement], BeforeValidator(_none_to_empty_list)] = (
        Field(default_factory=list, alias="matchFields")
    )


class NodeSelector(_K8s):
    node_selector_terms: list[NodeSelectorTerm] = Field(alias="nodeSelectorTerms")


class PreferredSchedulingTerm(_K8s):
    weight: int  # 1..100: the model's rule
    preference: NodeSelectorTerm


class NodeAffinity(_K8s):
    required: NodeSelector | None = Field(
        default=None, alias="requiredDuringSchedulingIgnoredDuringExecution"
    )
    preferred: Annotated[list[PreferredSchedulingTerm], BeforeValidator(_none_to_empty_list)] = (
        Field(default_factory=list, alias="preferredDuringSchedulingIgnoredDuringExecution")
    )


class LabelSelectorRequirement(_K8s):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: StrList = Field(default_factory=list)


class LabelSelector(_K8s):
    match_labels: StrMap = Field(default_factory=dict, alias="matchLabels")
    match_expressions: Annotated[
        list[LabelSelectorRequirement], BeforeValidator(_none_to_empty_list)
    ] = Field(default_factory=list, alias="matchExpressions")


class PodAffinityTerm(_K8s):
    label_selector: LabelSelector | None = Field(default=None, alias="labelSelector")
    namespaces: StrList = Field(default_factory=list)
    namespace_selector: LabelSelector | None = Field(default=None, alias="namespaceSelector")
    topology_key: str = Field(alias="topologyKey")
    match_label_keys: StrList = Field(default_factory=list, alias="matchLabelKeys")
    mismatch_label_keys: StrList = Field(default_factory=list, alias="mismatchLabelKeys")


class WeightedPodAffinityTerm(_K8s):
    weight: int
    pod_affinity_term: PodAffinityTerm = Field(alias="podAffinityTerm")


class PodAffinity(_K8s):
    required: Annotated[list[PodAffinityTerm], BeforeValidator(_none_to_empty_list)] = Field(
        default_factory=list, alias="requiredDuringSchedulingIgnoredDuringExecution"
    )
    preferred: Annotated[list[WeightedPodAffinityTerm], BeforeValidator(_none_to_empty_list)] = (
        Field(default_factory=list, alias="preferredDuringSchedulingIgnoredDuringExecution")
    )


class Affinity(_K8s):
    node_affinity: NodeAffinity | None = Field(default=None, alias="nodeAffinity")
    pod_affinity: PodAffinity | None = Field(default=None, alias="podAffinity")
    pod_anti_affinity: PodAffinity | None = Field(default=None, alias="podAntiAffinity")


class TopologySpreadConstraint(_K8s):
    max_skew: int = Field(alias="maxSkew")
    topology_key: str = Field(alias="topologyKey")
    when_unsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"] = Field(
        alias="whenUnsatisfiable"
    )
    label_selector: LabelSelector | None = Field(default=None, alias="labelSelector")
    min_domains: int | None = Field(default=None, alias="minDomains")
    node_affinity_policy: Literal["Honor", "Ignore"] | None = Field(
        default=None, alias="nodeAffinityPolicy"
    )
    node_taints_policy: Literal["Honor", "Ignore"] | None = Field(
        default=None, alias="nodeTaintsPolicy"
    )
    match_label_keys: StrList = Field(default_factory=list, alias="matchLabelKeys")


class PodSchedulingGroup(_K8s):
    pod_group_name: str | None = Field(default=None, alias="podGroupName")


class SchedulingGate(_K8s):
    """`spec.schedulingGates[]`: the pod waits until every gate is removed."""

    name: str  # its rule is the model's (`Pod.scheduling_gates`)


class PodResourceClaim(_K8s):
    """`spec.resourceClaims[]` (DRA): the claim's name in the pod."""

    name: str = Field(min_length=1, max_length=63)


class PodSpec(_K8s):
    containers: list[Container] = Field(min_length=1)
    init_containers: Annotated[list[Container], BeforeValidator(_none_to_empty_list)] = Field(
        default_factory=list, alias="initContainers"
    )
    overhead: ResourceList = Field(default_factory=dict)
    node_name: str | None = Field(default=None, alias="nodeName")
    scheduler_name: str = Field(default="default-scheduler", alias="schedulerName")
    priority: Int32 | None = None
    priority_class_name: str | None = Field(default=None, alias="priorityClassName")
    preemption_policy: Literal["PreemptLowerPriority", "Never"] | None = Field(
        default=None, alias="preemptionPolicy"
    )
    node_selector: StrMap = Field(default_factory=dict, alias="nodeSelector")
    affinity: Affinity | None = None
    tolerations: Annotated[list[Toleration], BeforeValidator(_none_to_empty_list)] = Field(
        default_factory=list
    )
    scheduling_group: PodSchedulingGroup | None = Field(default=None, alias="schedulingGroup")
    resources: ResourceRequirements | None = None  # pod-level (KEP-2837)
    scheduling_gates: Annotated[list[SchedulingGate], BeforeValidator(_none_to_empty_list)] = Field(
        default_factory=list, alias="schedulingGates"
    )  # how many, and each one's rule: the model's (`Pod.scheduling_gates`)
    resource_claims: Annotated[list[PodResourceClaim], BeforeValidator(_none_to_empty_list)] = (
        Field(default_factory=list, alias="resourceClaims")
    )  # DRA (KEP-4381): not modelled; a pending pod with claims waits (convert.DRA_CLAIMS)
    topology_spread_constraints: Annotated[
        list[TopologySpreadConstraint], BeforeValidator(_none_to_empty_list)
    ] = Field(default_factory=list, alias="topologySpreadConstraints")
    active_deadline_seconds: int | None = Field(
        default=None, alias="activeDeadlineSeconds", ge=1, le=(1 << 63) - 1
    )  # a running pod's end at the latest (`solver.start`)


class PodCondition(_K8s):
    type: str
    status: str
    reason: str = ""
    message: str = ""


class PodStatus(_K8s):
    phase: Literal["", "Pending", "Running", "Succeeded", "Failed", "Unknown"] = ""
    nominated_node_name: str | None = Field(default=None, alias="nominatedNodeName")
    conditions: Annotated[list[PodCondition], BeforeValidator(_none_to_empty_list)] = Field(
        default_factory=list
    )
    start_time: str | None = Field(default=None, alias="startTime")  # activeDeadlineSeconds' start


class K8sNamespace(_K8s):
    metadata: Metadata


class K8sPod(_K8s):
    metadata: Metadata
    spec: PodSpec
    status: PodStatus = Field(default_factory=PodStatus)


# ----------------------------------------------------------------------------- scheduling objects


class PriorityClassBody(_K8s):
    value: Int32
    global_default: StrictBool = Field(default=False, alias="globalDefault")
    preemption_policy: Literal["PreemptLowerPriority", "Never"] = Field(
        default="PreemptLowerPriority", alias="preemptionPolicy"
    )


class K8sPriorityClass(PriorityClassBody):
    metadata: Metadata


class PodGroupSpec(_K8s):
    """Union of the three dialects' PodGroup specs (fields a dialect lacks stay unset)."""

    min_member: Count32 | None = Field(default=None, alias="minMember")
    min_resources: ResourceList = Field(default_factory=dict, alias="minResources")
    schedule_timeout_seconds: Int32 | None = Field(default=None, alias="scheduleTimeoutSeconds")
    queue: str | None = None
    priority_class_name: str | None = Field(default=None, alias="priorityClassName")
    min_task_member: dict[str, Count32] | None = Field(default=None, alias="minTaskMember")
    affinity: dict[str, Any] | None = None
    network_topology: dict[str, Any] | None = Field(default=None, alias="networkTopology")
    sub_group_policy: Any = Field(default=None, alias="subGroupPolicy")  # read_sub_group_policy


class PodGroupStatus(_K8s):
    phase: str = ""


class K8sPodGroup(_K8s):
    api_version: str = Field(alias="apiVersion")
    metadata: Metadata
    spec: PodGroupSpec = Field(default_factory=PodGroupSpec)
    status: PodGroupStatus = Field(default_factory=PodGroupStatus)


class QueueGuarantee(_K8s):
    resource: ResourceList = Field(default_factory=dict)


class QueueSpec(_K8s):
    parent: str | None = None
    capability: ResourceList = Field(default_factory=dict)
    deserved: ResourceList = Field(default_factory=dict)
    guarantee: QueueGuarantee = Field(default_factory=lambda: QueueGuarantee())
    weight: int | None = None  # its range is the model's (`Queue.weight`)
    priority: Int32 | None = None
    reclaimable: bool | None = None
    affinity: dict[str, Any] | None = None


class QueueStatus(_K8s):
    state: str | None = None
    allocated: ResourceList = Field(default_factory=dict)


class K8sQueue(_K8s):
    metadata: Metadata
    spec: QueueSpec = Field(default_factory=QueueSpec)
    status: QueueStatus = Field(default_factory=QueueStatus)


class NetworkTopologySpecEntry(_K8s):
    topology_layer: str = Field(alias="topologyLayer")
    parent_topology_layer: str | None = Field(default=None, alias="parentTopologyLayer")
    label_key: Annotated[list[str], BeforeValidator(_none_to_empty_list)] = Field(
        default_factory=list, alias="labelKey"
    )

    @field_validator("label_key", mode="before")
    @classmethod
    def _one_key(cls, value: object) -> object:
        # The proposal wrote a single string; the CRD has a list. Accept both.
        return [value] if isinstance(value, str) else value


class ClusterNetworkTopologySpec(_K8s):
    network_topology_spec: list[NetworkTopologySpecEntry] = Field(alias="networkTopologySpec")


class K8sClusterNetworkTopology(_K8s):
    metadata: Metadata
    spec: ClusterNetworkTopologySpec
