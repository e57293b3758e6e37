"""Fluent builders for Kubernetes manifests in tests (Kueue style).

    node("gpu-1").cpu("32").gpu(8).label("rack", "r1").taint("gpu", "yes").obj()
    pod("w-0").group("train").requests(cpu="2", gpu=1).obj()

Builders emit the same dicts `yaml.safe_load` would, so tests go through the real reader.
"""

from __future__ import annotations

import copy
from typing import Any

from solver.config import SchedulerConf
from solver.features.cards import CardMode
from solver.features.proportion import ProportionMode
from solver.features.queues import QueueTree, QuotaMode, build_queue_tree
from solver.kube import RawObject, build_model
from solver.model import ClusterModel
from solver.schedule import snapshot_of

GPU = "nvidia.com/gpu"


class NodeBuilder:
    def __init__(self, name: str) -> None:
        self.body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {}},
            "spec": {},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
        }

    def alloc(self, resource: str, value: Any) -> NodeBuilder:
        self.body["status"]["allocatable"][resource] = value
        return self

    def cpu(self, value: Any) -> NodeBuilder:
        return self.alloc("cpu", value)

    def memory(self, value: Any) -> NodeBuilder:
        return self.alloc("memory", value)

    def gpu(self, count: int) -> NodeBuilder:
        return self.alloc(GPU, str(count))

    def pods(self, count: int) -> NodeBuilder:
        return self.alloc("pods", str(count))

    def label(self, key: str, value: str) -> NodeBuilder:
        self.body["metadata"]["labels"][key] = value
        return self

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> NodeBuilder:
        self.body["spec"].setdefault("taints", []).append(
            {"key": key, "value": value, "effect": effect}
        )
        return self

    def cordon(self) -> NodeBuilder:
        self.body["spec"]["unschedulable"] = True
        return self

    def not_ready(self) -> NodeBuilder:
        self.body["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
        return self

    def obj(self) -> dict[str, Any]:
        return copy.deepcopy(self.body)


class PodBuilder:
    def __init__(self, name: str, namespace: str = "default") -> None:
        self.body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": {}, "annotations": {}},
            "spec": {"containers": [{"name": "main", "resources": {"requests": {"cpu": "1"}}}]},
        }

    def requests(self, **values: Any) -> PodBuilder:
        req = {("nvidia.com/gpu" if k == "gpu" else k): str(v) for k, v in values.items()}
        self.body["spec"]["containers"][0]["resources"]["requests"] = req
        return self

    def label(self, key: str, value: str) -> PodBuilder:
        self.body["metadata"]["labels"][key] = value
        return self

    def annotate(self, key: str, value: str) -> PodBuilder:
        self.body["metadata"]["annotations"][key] = value
        return self

    def group(self, name: str) -> PodBuilder:
        return self.label("pod-group.scheduling.sigs.k8s.io", name)

    def scheduling_group(self, pod_group: str) -> PodBuilder:
        """Joins a Kubernetes Workload API PodGroup (`spec.schedulingGroup.podGroupName`)."""
        self.body["spec"]["schedulingGroup"] = {"podGroupName": pod_group}
        return self

    def on(self, node: str, phase: str = "Running") -> PodBuilder:
        self.body["spec"]["nodeName"] = node
        self.body["status"] = {"phase": phase}
        return self

    def nominated(self, node: str) -> PodBuilder:
        """Pending, with `status.nominatedNodeName` (left there by a preemption)."""
        self.body["status"] = {"phase": "Pending", "nominatedNodeName": node}
        return self

    def terminating(self) -> PodBuilder:
        self.body["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        return self

    def priority(self, value: int) -> PodBuilder:
        self.body["spec"]["priority"] = value
        return self

    def selector(self, **labels: str) -> PodBuilder:
        self.body["spec"]["nodeSelector"] = labels
        return self

    def affinity(self, *terms: list[dict[str, Any]]) -> PodBuilder:
        self.body["spec"].setdefault("affinity", {})["nodeAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": t} for t in terms]
            }
        }
        return self

    def pod_affinity(
        self,
        key: str,
        *,
        anti: bool = False,
        weight: int | None = None,
        expressions: list[dict[str, Any]] | None = None,
        **labels: str,
    ) -> PodBuilder:
        """A pod (anti-)affinity term selecting `labels` per domain of node label `key`;
        `weight` makes it preferred."""
        term: dict[str, Any] = {"labelSelector": {"matchLabels": labels}, "topologyKey": key}
        if expressions:
            term["labelSelector"]["matchExpressions"] = expressions
        kind = "podAntiAffinity" if anti else "podAffinity"
        spec = self.body["spec"].setdefault("affinity", {}).setdefault(kind, {})
        if weight is None:
            spec.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(term)
        else:
            spec.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
                {"weight": weight, "podAffinityTerm": term}
            )
        return self

    def anti_affinity(self, key: str, **labels: str) -> PodBuilder:
        return self.pod_affinity(key, anti=True, **labels)

    def spread(
        self,
        key: str,
        max_skew: int = 1,
        *,
        when: str = "DoNotSchedule",
        min_domains: int | None = None,
        **labels: str,
    ) -> PodBuilder:
        constraint: dict[str, Any] = {
            "maxSkew": max_skew,
            "topologyKey": key,
            "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": labels},
        }
        if min_domains is not None:
            constraint["minDomains"] = min_domains
        self.body["spec"].setdefault("topologySpreadConstraints", []).append(constraint)
        return self

    def tolerate(
        self, key: str = "", value: str = "", effect: str = "", operator: str = "Equal"
    ) -> PodBuilder:
        self.body["spec"].setdefault("tolerations", []).append(
            {"key": key, "value": value, "effect": effect, "operator": operator}
        )
        return self

    def obj(self) -> dict[str, Any]:
        return copy.deepcopy(self.body)


DIALECT_API = {
    "sigs": "scheduling.sigs.k8s.io/v1alpha1",
    "volcano": "scheduling.volcano.sh/v1beta1",
    "godel": "scheduling.godel.kubewharf.io/v1alpha1",
}


def podgroup(
    name: str,
    min_member: int | None,
    dialect: str = "sigs",
    namespace: str = "default",
    **annotations: str,
) -> dict[str, Any]:
    spec = {} if min_member is None else {"minMember": min_member}
    return {
        "apiVersion": DIALECT_API[dialect],
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "annotations": dict(annotations)},
        "spec": spec,
    }


def workload_podgroup(
    name: str,
    min_count: int | None,
    *,
    topology: str | None = None,
    disruption: str | None = None,
    priority: int | None = None,
    namespace: str = "default",
    version: str = "v1beta1",
) -> dict[str, Any]:
    """A `scheduling.k8s.io` PodGroup: gang policy with `min_count`, basic when None."""
    policy = {"basic": {}} if min_count is None else {"gang": {"minCount": min_count}}
    spec: dict[str, Any] = {"schedulingPolicy": policy}
    if topology is not None:
        spec["schedulingConstraints"] = {"topology": [{"key": topology}]}
    if disruption is not None:
        spec["disruptionMode"] = {disruption: {}}
    if priority is not None:
        spec["priority"] = priority
    return {
        "apiVersion": f"scheduling.k8s.io/{version}",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def node(name: str) -> NodeBuilder:
    return NodeBuilder(name)


def pod(name: str, namespace: str = "default") -> PodBuilder:
    return PodBuilder(name, namespace)


def placed_per_job(decision: Any, sep: str = "-") -> dict[str, int]:
    """How many pods of each job a Decision placed, a pod being named `<job><sep><index>`."""
    out: dict[str, int] = {}
    for key in decision.placed:
        name = key.split("/")[1].rsplit(sep, 1)[0]
        out[name] = out.get(name, 0) + 1
    return out


def raw(*objects: dict[str, Any]) -> list[RawObject]:
    return [
        RawObject(source="test.yaml", document=str(i), body=o) for i, o in enumerate(objects, 1)
    ]


def model(*objects: dict[str, Any]) -> ClusterModel:
    return build_model(raw(*objects))


def groups_annotation(*ids: str) -> dict[str, str]:
    import json

    return {"gang.scheduling.koordinator.sh/groups": json.dumps(list(ids))}


# ----------------------------------------------------------------------------- topology

SPINE = "network.topology.nvidia.com/spine"
BLOCK = "network.topology.nvidia.com/block"
SPEC_ANNOTATION = "gang.scheduling.koordinator.sh/network-topology-spec"
INDEX_ANNOTATION = "gang.scheduling.koordinator.sh/network-topology-index"


def network_topology(
    *layers: tuple[str, str | None, list[str]], name: str = "default"
) -> dict[str, Any]:
    """`ClusterNetworkTopology`: layers as (topologyLayer, parentTopologyLayer, labelKey)."""
    spec = []
    for layer, parent, keys in layers:
        entry: dict[str, Any] = {"topologyLayer": layer}
        if parent:
            entry["parentTopologyLayer"] = parent
        if keys:
            entry["labelKey"] = keys
        spec.append(entry)
    return {
        "apiVersion": "scheduling.koordinator.sh/v1alpha1",
        "kind": "ClusterNetworkTopology",
        "metadata": {"name": name},
        "spec": {"networkTopologySpec": spec},
    }


def spine_block_topology() -> dict[str, Any]:
    """The reference's tree: SpineLayer -> BlockLayer -> NodeTopologyLayer (NVIDIA labels)."""
    return network_topology(
        ("SpineLayer", None, [SPINE]),
        ("BlockLayer", "SpineLayer", [BLOCK]),
        ("NodeTopologyLayer", "BlockLayer", []),
    )


def gather(*rules: tuple[str, str] | tuple[str, str, int]) -> dict[str, str]:
    """PodGroup annotation network-topology-spec from (layer, strategy[, podCountMultiple])."""
    import json

    strategy = []
    for rule in rules:
        entry: dict[str, Any] = {"layer": rule[0], "strategy": rule[1]}
        if len(rule) > 2:
            entry["podCountMultiple"] = rule[2]
        strategy.append(entry)
    return {SPEC_ANNOTATION: json.dumps({"gatherStrategy": strategy})}


def godel_podgroup(name: str, min_member: int, affinity: dict[str, Any]) -> dict[str, Any]:
    """A Godel PodGroup with `spec.affinity.podGroupAffinity`."""
    pg = podgroup(name, min_member, dialect="godel")
    pg["spec"]["affinity"] = {"podGroupAffinity": affinity}
    return pg


def queue(
    name: str,
    parent: str | None = None,
    *,
    capability: dict[str, Any] | None = None,
    deserved: dict[str, Any] | None = None,
    guarantee: dict[str, Any] | None = None,
    affinity: dict[str, list[str]] | None = None,
    anti: dict[str, list[str]] | None = None,
    state: str | None = None,
    priority: int | None = None,
    allocated_pods: int | None = None,
    weight: int | None = None,
) -> dict[str, Any]:
    """A Volcano Queue; `affinity`/`anti` map "required"/"preferred" to node-group names."""
    spec: dict[str, Any] = {}
    if parent:
        spec["parent"] = parent
    if capability:
        spec["capability"] = {k: str(v) for k, v in capability.items()}
    if deserved:
        spec["deserved"] = {k: str(v) for k, v in deserved.items()}
    if guarantee:
        spec["guarantee"] = {"resource": {k: str(v) for k, v in guarantee.items()}}
    if priority is not None:
        spec["priority"] = priority
    if weight is not None:
        spec["weight"] = weight
    if affinity or anti:
        spec["affinity"] = {}
        for key, lists in (("nodeGroupAffinity", affinity), ("nodeGroupAntiAffinity", anti)):
            if lists:
                spec["affinity"][key] = {
                    f"{kind}DuringSchedulingIgnoredDuringExecution": names
                    for kind, names in lists.items()
                }
    body: dict[str, Any] = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
    }
    status: dict[str, Any] = {}
    if state:
        status["state"] = state
    if allocated_pods is not None:
        status["allocated"] = {"pods": str(allocated_pods)}
    if status:
        body["status"] = status
    return body


def volcano_job(
    name: str,
    queue_name: str,
    pods: int,
    *,
    gpu: int = 1,
    cpu: int = 1,
    min_member: int | None = None,
    priority: int | None = None,
    bound_on: str | None = None,
) -> list[dict[str, Any]]:
    """A Volcano PodGroup (with minResources) in `queue_name` and its pods."""
    mm = pods if min_member is None else min_member
    pg = podgroup(name, mm, "volcano")
    pg["spec"]["queue"] = queue_name
    pg["spec"]["minResources"] = {"cpu": str(cpu * mm), "nvidia.com/gpu": str(gpu * mm)}
    out = [pg]
    for i in range(pods):
        b = (
            pod(f"{name}-{i}")
            .annotate("scheduling.k8s.io/group-name", name)
            .requests(cpu=cpu, gpu=gpu)
        )
        if priority is not None:
            b.priority(priority)
        if bound_on:
            b.on(bound_on)
        out.append(b.obj())
    return out


def volcano_batch_job(name: str, queue_name: str, replicas: int, cpu: str = "1") -> dict[str, Any]:
    """A `batch.volcano.sh` Job of one task (`minAvailable` = its replicas): the workload
    object, expanded by gangplan's reader into a PodGroup and pods."""
    container = {"name": "c", "resources": {"requests": {"cpu": cpu}}}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "minAvailable": replicas,
            "queue": queue_name,
            "tasks": [
                {
                    "name": "t",
                    "replicas": replicas,
                    "template": {"spec": {"containers": [container]}},
                }
            ],
        },
    }


def queue_tree(cluster: ClusterModel, conf: SchedulerConf) -> QueueTree | None:
    """The queue tree the conf's quota plugin builds for a whole input (None without one)."""
    if conf.enabled("capacity-card"):
        mode: QuotaMode = CardMode(conf)
    elif conf.enabled("proportion"):
        mode = ProportionMode(conf)
    elif conf.enabled("capacity"):
        mode = QuotaMode(conf)
    else:
        return None
    return build_queue_tree(snapshot_of(cluster), mode)
