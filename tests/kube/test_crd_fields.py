"""Nothing dropped in silence, every object kind gangplan reads beyond the core ones: each
field of each kind's upstream schema (the projects' own CRDs, vendored with their sources in
`crd_fields.json` by `scripts/vendor_crd_fields.py`; the built-in workload kinds from the
Kubernetes API's schema) is set on a valid scenario and must be refused naming it, noted, or
read (the model changes), or be listed in `solver/kube/fields.py` `CRD_IGNORED` as not
scheduling input, with why (`crd_walk.py`). A field an upstream release adds fails this test
until it is classified. Pod templates are the core walk's (`test_fields.py`)."""

from __future__ import annotations

from typing import Any

import pytest

from solver.kube.fields import CRD_IGNORED
from tests.builders import network_topology, node, pod, podgroup, queue, workload_podgroup
from tests.kube.crd_walk import CRDS, Leaf, builtin_schema, classify, leaves

Objects = list[dict[str, Any]]
TEMPLATE = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
GANG_TEMPLATE = {"spec": {**TEMPLATE["spec"], "schedulerName": "volcano"}}
NODE_TEMPLATE = {
    "spec": {"containers": [{"name": "node", "resources": {"requests": {"cpu": "1"}}}]}
}
READ_AT_DEFAULT: dict[str, dict[str, str]] = {
    "scheduling.k8s.io/PodGroup": {
        "spec.disruptionMode.single": "read; `single` is the default mode, so setting it "
        "changes nothing",
    },
}
"""Fields read whose every value the walk can set equals the default (so nothing changes)."""
NODE = node("n1").cpu("64").memory("256Gi").gpu(8).label("rack", "r1").obj()


def member(group_key: str, group: str, scheduler: str = "default-scheduler") -> dict[str, Any]:
    """A pending pod of the group (linked by label for coscheduling, else by annotation)."""
    p = pod("m0").requests(cpu="1").obj()
    where = (
        "labels" if group_key.startswith(("pod-group.", "scheduling.x-k8s.io")) else "annotations"
    )
    p["metadata"][where] = {group_key: group}
    p["spec"]["schedulerName"] = scheduler
    return p


def _kind(api_version: str, kind: str, spec: dict[str, Any], name: str = "x") -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}, "spec": spec}


def _kubeflow(kind: str, key: str, roles: tuple[str, ...]) -> Objects:
    spec = {key: {r: {"replicas": 1, "template": GANG_TEMPLATE} for r in roles}}
    spec["runPolicy"] = {"schedulingPolicy": {"minAvailable": len(roles)}}
    return [NODE, _kind("kubeflow.org/v1", kind, spec)]


def _trainjob() -> Objects:
    """A TrainJob and its runtime: one trainer Job of `numNodes` pods, a coscheduling gang."""
    runtime = _kind(
        "trainer.kubeflow.org/v1alpha1",
        "ClusterTrainingRuntime",
        {
            "mlPolicy": {"numNodes": 2},
            "podGroupPolicy": {"coscheduling": {}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "metadata": {
                                    "labels": {
                                        "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"
                                    }
                                },
                                "spec": {"template": NODE_TEMPLATE},
                            },
                        }
                    ]
                }
            },
        },
        "rt",
    )
    job = _kind("trainer.kubeflow.org/v1alpha1", "TrainJob", {"runtimeRef": {"name": "rt"}})
    return [runtime, job, NODE]


KAI: Objects = [
    NODE,
    _kind("kai.scheduler/v1alpha1", "Topology", {"levels": [{"nodeLabel": "rack"}]}, "t"),
    _kind(
        "scheduling.run.ai/v2alpha2",
        "PodGroup",
        {"minMember": 1, "topologyConstraint": {"topology": "t", "requiredTopologyLevel": "rack"}},
        "pg",
    ),
    member("pod-group-name", "pg", "kai-scheduler"),
]
"""A KAI Topology (walked at 1) and a PodGroup of one pod that requires its level (at 2)."""

SCENARIOS: dict[str, tuple[Objects, int]] = {
    # (objects, index of the object whose fields are walked)
    "batch.volcano.sh/Job": (
        [
            NODE,
            _kind(
                "batch.volcano.sh/v1alpha1",
                "Job",
                {"minAvailable": 1, "tasks": [{"name": "w", "replicas": 2, "template": TEMPLATE}]},
            ),
        ],
        1,
    ),
    "scheduling.volcano.sh/PodGroup": (
        [
            NODE,
            podgroup("pg", 1, "volcano"),
            member("scheduling.k8s.io/group-name", "pg", "volcano"),
        ],
        1,
    ),
    "scheduling.volcano.sh/Queue": ([NODE, queue("q")], 1),
    "topology.volcano.sh/HyperNode": (
        [
            NODE,
            {
                "apiVersion": "topology.volcano.sh/v1alpha1",
                "kind": "HyperNode",
                "metadata": {"name": "s0"},
                "spec": {
                    "tier": 1,
                    "members": [{"type": "Node", "selector": {"exactMatch": {"name": "n1"}}}],
                },
            },
        ],
        1,
    ),
    "scheduling.run.ai/PodGroup": (
        KAI,
        2,
    ),
    "scheduling.run.ai/Queue": (
        [NODE, _kind("scheduling.run.ai/v2", "Queue", {"resources": {}})],  # KAI's webhook
        1,
    ),
    "kai.scheduler/Topology": (
        KAI,
        1,
    ),
    "kueue.x-k8s.io/Topology": (
        [
            NODE,
            _kind("kueue.x-k8s.io/v1beta2", "Topology", {"levels": [{"nodeLabel": "rack"}]}, "t"),
        ],
        1,
    ),
    "kueue.x-k8s.io/ResourceFlavor": (
        [
            NODE,
            _kind("kueue.x-k8s.io/v1beta2", "Topology", {"levels": [{"nodeLabel": "rack"}]}, "t"),
            _kind(
                "kueue.x-k8s.io/v1beta2",
                "ResourceFlavor",
                {"topologyName": "t", "nodeLabels": {"rack": "r1"}},
                "f",
            ),
        ],
        2,
    ),
    "kueue.x-k8s.io/Workload": (
        [
            NODE,
            _kind(
                "kueue.x-k8s.io/v1beta2",
                "Workload",
                {"podSets": [{"name": "main", "count": 1, "template": TEMPLATE}]},
            ),
        ],
        1,
    ),
    "scheduling.koordinator.sh/ClusterNetworkTopology": (
        [
            NODE,
            network_topology(("RackLayer", None, ["rack"]), ("NodeTopologyLayer", "RackLayer", [])),
        ],
        1,
    ),
    "scheduling.sigs.k8s.io/PodGroup": (
        [NODE, podgroup("pg", 1), member("pod-group.scheduling.sigs.k8s.io", "pg")],
        1,
    ),
    "scheduling.x-k8s.io/PodGroup": (
        [
            NODE,
            {**podgroup("pg", 1), "apiVersion": "scheduling.x-k8s.io/v1alpha1"},
            member("scheduling.x-k8s.io/pod-group", "pg"),
        ],
        1,
    ),
    "scheduling.godel.kubewharf.io/PodGroup": (
        [
            NODE,
            podgroup("pg", 1, "godel"),
            member("godel.bytedance.com/pod-group-name", "pg", "godel-scheduler"),
        ],
        1,
    ),
    "jobset.x-k8s.io/JobSet": (
        [
            NODE,
            _kind(
                "jobset.x-k8s.io/v1alpha2",
                "JobSet",
                {
                    "replicatedJobs": [
                        {
                            "name": "w",
                            "replicas": 1,
                            "template": {"spec": {"parallelism": 4, "template": TEMPLATE}},
                        }
                    ]
                },
            ),
        ],
        1,
    ),
    "leaderworkerset.x-k8s.io/LeaderWorkerSet": (
        [
            NODE,
            _kind(
                "leaderworkerset.x-k8s.io/v1",
                "LeaderWorkerSet",
                {"replicas": 1, "leaderWorkerTemplate": {"size": 2, "workerTemplate": TEMPLATE}},
            ),
        ],
        1,
    ),
    "trainer.kubeflow.org/TrainJob": (_trainjob(), 1),
    "trainer.kubeflow.org/ClusterTrainingRuntime": (_trainjob(), 0),
    "kubeflow.org/PyTorchJob": (
        _kubeflow("PyTorchJob", "pytorchReplicaSpecs", ("Master", "Worker")),
        1,
    ),
    "kubeflow.org/TFJob": (_kubeflow("TFJob", "tfReplicaSpecs", ("Worker",)), 1),
    "kubeflow.org/XGBoostJob": (
        _kubeflow("XGBoostJob", "xgbReplicaSpecs", ("Master", "Worker")),
        1,
    ),
    "kubeflow.org/PaddleJob": (
        _kubeflow("PaddleJob", "paddleReplicaSpecs", ("Master", "Worker")),
        1,
    ),
    "kubeflow.org/JAXJob": (_kubeflow("JAXJob", "jaxReplicaSpecs", ("Worker",)), 1),
    "kubeflow.org/MPIJob": (_kubeflow("MPIJob", "mpiReplicaSpecs", ("Launcher", "Worker")), 1),
}

BUILTIN: dict[str, tuple[str, Objects, int, tuple[str, ...]]] = {
    # kind -> (schema definition, objects, index, where the definition sits in the object)
    "batch/Job": (
        "io.k8s.api.batch.v1.JobSpec",
        [
            NODE,
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": "j"},
                "spec": {"parallelism": 4, "template": TEMPLATE},
            },
        ],
        1,
        ("spec",),
    ),
    **{
        f"apps/{kind}": (
            f"io.k8s.api.apps.v1.{kind}Spec",
            [NODE, _kind("apps/v1", kind, {"template": TEMPLATE}, kind.lower())],
            1,
            ("spec",),
        )
        for kind in ("Deployment", "StatefulSet", "ReplicaSet")
    },
    "scheduling.k8s.io/PodGroup": (
        "io.k8s.api.scheduling.v1alpha3.PodGroupSpec",
        [NODE, workload_podgroup("pg", 1, version="v1alpha3")],
        1,
        ("spec",),
    ),
}


def _cases() -> list[tuple[str, Objects, int, tuple[str, ...], Leaf]]:
    out = []
    for kind, (objects, index) in SCENARIOS.items():
        out += [(kind, objects, index, (), leaf) for leaf in leaves(CRDS[kind]["schema"])]
    for kind, (definition, objects, index, root) in BUILTIN.items():
        out += [(kind, objects, index, root, leaf) for leaf in leaves(builtin_schema(definition))]
    return out


CASES = _cases()


def test_every_kind_gangplan_reads_has_a_scenario() -> None:
    assert set(CRDS) == set(SCENARIOS)


@pytest.mark.parametrize(
    ("kind", "objects", "index", "root", "leaf"),
    CASES,
    ids=[f"{c[0]}:{'.'.join(c[3])}{'.' if c[3] else ''}{c[4].text}" for c in CASES],
)
def test_every_upstream_field_is_read_noted_refused_or_not_scheduling_input(
    kind: str, objects: Objects, index: int, root: tuple[str, ...], leaf: Leaf
) -> None:
    path = ".".join((*root, leaf.text)).replace(".[", "[")
    verdict = classify(objects, index, root, leaf)
    if (
        path in READ_AT_DEFAULT.get(kind, {})
        or path in CRD_IGNORED.get(kind, {})
        or _ignored_prefix(kind, path)
    ):
        assert verdict in ("silent", "read", "noted", "refused"), verdict
        return
    assert verdict in ("read", "noted", "refused"), f"{kind} {path}: {verdict}"


def _ignored_prefix(kind: str, path: str) -> bool:
    return any(
        path.startswith(f"{p}.") or path.startswith(f"{p}[") for p in CRD_IGNORED.get(kind, {})
    )
