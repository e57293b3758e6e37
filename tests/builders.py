"""Fluent builders for Kubernetes manifests in tests (Kueue style).

    node("gpu-1").cpu("32").gpu(8).label("rack", "r1").taint("gpu", "yes").obj()
    pod("w-0").group("train").requests(cpu="2", gpu=1).obj()

Builders emit the same dicts `yaml.safe_load` would, so tests go through the real reader.
"""

from __future__ import annotations

import copy
from typing import Any

from solver.kube import RawObject, build_model
from solver.model import ClusterModel

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

    def on(self, node: str, phase: str = "Running") -> PodBuilder:
        self.body["spec"]["nodeName"] = node
        self.body["status"] = {"phase": phase}
        return self

    def priority(self, value: int) -> PodBuilder:
        self.body["spec"]["priority"] = value
        return self

    def selector(self, **labels: str) -> PodBuilder:
        self.body["spec"]["nodeSelector"] = labels
        return self

    def affinity(self, *terms: list[dict[str, Any]]) -> PodBuilder:
        self.body["spec"]["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": t} for t in terms]
                }
            }
        }
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


def node(name: str) -> NodeBuilder:
    return NodeBuilder(name)


def pod(name: str, namespace: str = "default") -> PodBuilder:
    return PodBuilder(name, namespace)


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
