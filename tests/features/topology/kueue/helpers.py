"""Kueue TAS test clusters: nodes as `block/rack/host:cpu`, a Topology, a TAS flavor, and a
pod set as pods with the pod-template annotations (the Kueue pod integration's view)."""

from __future__ import annotations

from typing import Any

from solver import SchedulerConf, schedule
from solver.decision import Decision
from solver.model import ClusterModel
from tests.builders import model, node, pod, podgroup

BLOCK = "cloud.com/topology-block"
RACK = "cloud.com/topology-rack"
HOST = "kubernetes.io/hostname"
THREE = (BLOCK, RACK, HOST)
TWO = (BLOCK, RACK)
POOL = {"node-group": "tas"}
REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
UNCONSTRAINED = "kueue.x-k8s.io/podset-unconstrained-topology"
SLICE_LEVEL = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
CONF = SchedulerConf.default()

# Upstream tas_cache_test.go TestFindTopologyAssignments fixtures (path: cpu; pods 10 each,
# x4 of defaultNodes 40; labels only where the node has them):
#
#   defaultNodes          b1                 b2          scatteredNodes   b1          b2
#                      /      \           /      \                        |           |
#                     r1       r2        r1       r2                      r1          r1
#                     |      /  |  \     |         |                   /  |  \       /  \
#                     x3    x5  x1  x6   x2       x4:2               x3:4 x5  x1   x6:2  x2
DEFAULT = ["b1/r1/x3:1", "b1/r2/x5:1", "b1/r2/x1:1", "b1/r2/x6:1", "b2/r1/x2:1", "b2/r2/x4:2"]
SCATTERED = ["b1/r1/x3:4", "b1/r1/x5:1", "b1/r1/x1:1", "b2/r1/x6:2", "b2/r1/x2:1"]
#   binaryTreesNodes           b1                    b2
#                          /        \             /      \
#                         r1         r2          r1       r2
#                        /  \      /   \        /   \    /   \
#                       x3   x5   x1    x6     x2   x4  x7    x8      (1 cpu each)
BINARY = [f"{p}:1" for p in ("b1/r1/x3", "b1/r1/x5", "b1/r2/x1", "b1/r2/x6")] + [
    f"{p}:1" for p in ("b2/r1/x2", "b2/r1/x4", "b2/r2/x7", "b2/r2/x8")
]


def nodes_of(spec: list[str], labels: tuple[str, ...] = THREE) -> list[dict[str, Any]]:
    """`b1/r1/x3:2` -> node b1-r1-x3 with those level labels (in THREE order) and 2 cpu."""
    out = []
    for item in spec:
        path, cpu = item.split(":")
        values = path.split("/")
        builder = node("-".join(values)).cpu(cpu).memory("4Gi").pods(40 if cpu == "2" else 10)
        for key, value in zip(labels, values, strict=False):
            builder = builder.label(key, value)
        for key, value in POOL.items():
            builder = builder.label(key, value)
        out.append(builder.obj())
    return out


def topology(levels: tuple[str, ...], name: str = "default") -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Topology",
            "metadata": {"name": name},
            "spec": {"levels": [{"nodeLabel": lv} for lv in levels]},
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "tas-flavor"},
            "spec": {"nodeLabels": dict(POOL), "topologyName": name},
        },
    ]


def pod_set(
    name: str, count: int, annotations: dict[str, str], cpu: str = "1"
) -> list[dict[str, Any]]:
    """A gang of `count` pods needing all of them, each with the annotations."""
    pods = []
    for i in range(count):
        builder = pod(f"{name}-{i}").requests(cpu=cpu).label("scheduling.x-k8s.io/pod-group", name)
        for key, value in annotations.items():
            builder = builder.annotate(key, value)
        pods.append(builder.obj())
    return [podgroup(name, count), *pods]


def cluster(
    spec: list[str],
    levels: tuple[str, ...],
    count: int,
    annotations: dict[str, str],
    cpu: str = "1",
    labels: tuple[str, ...] = THREE,
) -> ClusterModel:
    return model(
        *nodes_of(spec, labels), *topology(levels), *pod_set("job", count, annotations, cpu)
    )


def run(cluster_model: ClusterModel, engine: str) -> Decision:
    return schedule(cluster_model, CONF, engine=engine, workers=1, seed=0, time_limit=10)


def assigned(decision: Decision) -> dict[str, int]:
    """The decision's Kueue assignment as `values joined by / -> count` (all pod sets)."""
    return {
        "/".join(values): count
        for a in decision.topology_assignments
        for values, count in a.domains
    }
