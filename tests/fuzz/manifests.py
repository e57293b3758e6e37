"""Hypothesis strategies for hostile manifests (as YAML text): a small valid cluster and job
with some of its values replaced by values a careless or hostile writer produces, and
sometimes its text damaged.

`invalid_manifest_text` produces inputs that are invalid by construction, for the "never
accepted" oracle. The gRPC doors are in `requests.py`.
"""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import strategies as st

from tests.builders import network_topology, node, pod, podgroup, queue, workload_podgroup

GPU = "nvidia.com/gpu"

# ----------------------------------------------------------------------------- scalars

QUANTITY_TEXT = st.sampled_from(
    [
        "1",
        "500m",
        "2Gi",
        "0.5",
        "1e3",
        ".5",
        "1.",
        "0",
        "+1",
        "100Ki",
        "3n",
        # beyond Kubernetes or beyond int64 milli-units
        "99999999999999999999",
        "9Ei",
        "1e999999999",
        "-1",
        "1Zi",
        "1Y",
        "１",
        "١٢",
        "1 ",
        " 1",
        "",
        "nan",
        "inf",
        "1e",
        "e3",
        "1.1.1",
        "0x10",
        "1_000",
        "--1",
    ]
)
HOSTILE_INT = st.one_of(
    st.integers(-(2**70), 2**70),
    st.sampled_from([2**31, -(2**31) - 1, 2**63, -(2**63) - 1, 0, -1]),
)
NAME = st.one_of(
    st.sampled_from(["a", "n0", "ns/x", "", "-", "a" * 300, "ä", "../x", "a b", "root"]),
    st.text(min_size=0, max_size=12),
)
HOSTILE = st.one_of(
    QUANTITY_TEXT,
    HOSTILE_INT,
    NAME,
    st.floats(allow_nan=True, allow_infinity=True),
    st.none(),
    st.booleans(),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)


# ----------------------------------------------------------------------------- manifests


def _volcano_template() -> dict[str, Any]:
    template = pod("t").requests(cpu=1).obj()
    template["spec"]["schedulerName"] = "volcano"
    return template


def base_manifests() -> list[dict[str, Any]]:
    """Two nodes, a 2-pod gang with its PodGroup, a queue, a priority class and a topology:
    every kind the reader knows, so a replaced value can land anywhere. Indices matter to
    INVALID_MANIFEST_VALUES: 0-1 nodes, 2 PodGroup, 3-4 pods, 5 queue, 6 PriorityClass,
    7 topology, 8 a Volcano Job, 9 an Indexed batch Job, 10 a PyTorchJob, 11 a StatefulSet,
    12 a JobSet with Workload API gangs, 13 a LeaderWorkerSet (workloads expanded into
    pods), 14 a Workload API PodGroup with 15 its pod, 16 a Namespace, 17-18 a Kueue Topology
    and TAS ResourceFlavor, 19 a Kueue Workload asking for them, 20-21 HyperNodes, 22-25
    KAI-Scheduler's objects, 26 a Kueue-managed Job (`_kai`), 27-28 a Trainer v2
    ClusterTrainingRuntime and a TrainJob naming it (`_trainer`), 29 a PodDisruptionBudget,
    30-32 a Kueue Cohort, ClusterQueue and LocalQueue (`_kueue_queues`: read and checked,
    noted beside the Volcano queue)."""
    nodes = [node(f"n{i}").gpu(4).label("rack", f"r{i}").obj() for i in range(2)]
    group = podgroup("g", 2, "volcano")
    group["spec"].update(
        queue="q",
        priorityClassName="high",
        minTaskMember={"worker": 1},
        networkTopology={"mode": "hard", "highestTierName": "rack"},
        subGroupPolicy=[
            {
                "name": "part",
                "subGroupSize": 1,
                "minSubGroups": 1,
                "matchLabelKeys": ["part"],
                "labelSelector": {"matchLabels": {"app": "x"}},
                "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
            }
        ],
    )
    pods = [
        pod(f"p{i}")
        .annotate("scheduling.k8s.io/group-name", "g")
        .requests(cpu=1, gpu=1)
        .priority(10)
        .tolerate("k", operator="Exists")
        .label("app", "g")
        .anti_affinity("rack", app="g")
        .pod_affinity("rack", weight=10, app="g")
        .spread("rack", 1, app="g")
        .obj()
        for i in range(2)
    ]
    for p in pods:  # the reader's other doors for pod terms
        term = p["spec"]["affinity"]["podAntiAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ][0]
        term["namespaceSelector"] = {"matchLabels": {"team": "a"}}
        term["matchLabelKeys"] = ["app"]
        p["spec"]["topologySpreadConstraints"][0]["minDomains"] = 1
    # GPU sharing doors: a KAI fraction, an openb milli share, Koordinator percents
    pods[0]["metadata"]["annotations"].update({"gpu-fraction": "0.5", "runai-gpu": "0"})
    pods[1]["metadata"]["annotations"].update(
        {"alibabacloud.com/gpu-milli": "300", "alibabacloud.com/gpu-index": "1"}
    )
    pods[1]["spec"]["containers"][0]["resources"]["requests"].update(
        {"koordinator.sh/gpu-core": "30", "koordinator.sh/gpu-memory-ratio": "30"}
    )
    nodes[0]["status"]["allocatable"]["koordinator.sh/gpu-core"] = "400"
    nodes[0]["metadata"]["labels"]["nvidia.com/gpu.memory"] = "24576"
    priority = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "high"},
        "value": 1000,
    }
    topology = network_topology(
        ("RackLayer", None, ["rack"]), ("NodeTopologyLayer", "RackLayer", [])
    )
    workloads = [
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": "vj", "namespace": "default"},
            "spec": {
                "minAvailable": 2,
                "queue": "q",
                "tasks": [
                    {
                        "name": "w",
                        "replicas": 2,
                        "partitionPolicy": {"totalPartitions": 1, "partitionSize": 2},
                        "template": pod("t").requests(cpu=1).obj(),
                    }
                ],
            },
        },
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "bj", "namespace": "default"},
            "spec": {
                "parallelism": 2,
                "completionMode": "Indexed",
                "template": pod("t").label("scheduling.x-k8s.io/pod-group", "bj").obj(),
            },
        },
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": "pj", "namespace": "default"},
            "spec": {
                "runPolicy": {"schedulingPolicy": {"queue": "q", "minAvailable": 2}},
                "pytorchReplicaSpecs": {
                    "Master": {"replicas": 1, "template": _volcano_template()},
                    "Worker": {"replicas": 1, "template": _volcano_template()},
                },
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "ss", "namespace": "default"},
            "spec": {"replicas": 2, "ordinals": {"start": 1}, "template": pod("t").obj()},
        },
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {"name": "js", "namespace": "default"},
            "spec": {
                "scheduling": {
                    "replicatedJobs": [
                        {
                            "targetReplicatedJobs": ["w"],
                            "job": {"schedulingConstraints": {"topology": [{"key": "rack"}]}},
                        }
                    ]
                },
                "replicatedJobs": [
                    {
                        "name": "w",
                        "replicas": 2,
                        "template": {"spec": {"parallelism": 2, "template": pod("t").obj()}},
                    }
                ],
            },
        },
        {
            "apiVersion": "leaderworkerset.x-k8s.io/v1",
            "kind": "LeaderWorkerSet",
            "metadata": {"name": "lws", "namespace": "default"},
            "spec": {
                "replicas": 1,
                "startupPolicy": "LeaderReady",
                "leaderWorkerTemplate": {"size": 2, "workerTemplate": _volcano_template()},
            },
        },
    ]
    was_group = workload_podgroup("wg", 1, topology="rack", disruption="all", priority=5)
    was_pod = pod("wp").requests(cpu=1).scheduling_group("wg").obj()
    return [
        *nodes,
        group,
        *pods,
        queue("q", capability={"cpu": 16}),
        priority,
        topology,
        *workloads,
        was_group,
        was_pod,
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "default", "labels": {"team": "a"}},
        },
        *_kueue(),
        *_hypernodes(),
        *_kai(),
        *_trainer(),
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "pdb"},
            "spec": {"selector": {"matchLabels": {"app": "kpg"}}, "minAvailable": "50%"},
            "status": {"disruptionsAllowed": 1, "disruptedPods": {"x": "2026-01-01T00:00:00Z"}},
        },
        *_kueue_queues(),
    ]


def _kueue_queues() -> list[dict[str, Any]]:
    """30-32: a Kueue Cohort with quota of its own, a ClusterQueue in it (the TAS flavor `f`,
    every limit and its fair-sharing weight), its LocalQueue."""
    group = "kueue.x-k8s.io/v1beta2"
    resources = [
        {"name": "cpu", "nominalQuota": "4", "borrowingLimit": "2", "lendingLimit": "1"},
        {"name": GPU, "nominalQuota": 2, "borrowingLimit": 1, "lendingLimit": 1},
    ]
    groups = [
        {"coveredResources": ["cpu", GPU], "flavors": [{"name": "f", "resources": resources}]}
    ]
    return [
        {"apiVersion": group, "kind": "Cohort", "metadata": {"name": "org"},
         "spec": {"parentName": "top", "resourceGroups": groups, "fairSharing": {"weight": "2"}}},
        {"apiVersion": group, "kind": "ClusterQueue", "metadata": {"name": "cq"},
         "spec": {"cohortName": "org", "resourceGroups": groups, "queueingStrategy": "StrictFIFO",
                  "fairSharing": {"weight": "0.5"}, "stopPolicy": "None"}},
        {"apiVersion": group, "kind": "LocalQueue", "metadata": {"name": "main", "namespace": "default"},
         "spec": {"clusterQueue": "cq"}},
    ]  # fmt: skip


def _trainer() -> list[dict[str, Any]]:
    """27: a ClusterTrainingRuntime (coscheduling, one trainer Job); 28: a TrainJob of 2
    nodes naming it, with a runtime patch."""
    step = {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
    template = {"spec": {"containers": [{"name": "node", "resources": {"requests": {"cpu": "1"}}}]}}
    return [
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "ClusterTrainingRuntime",
            "metadata": {"name": "rt"},
            "spec": {
                "mlPolicy": {"numNodes": 1, "torch": {}},
                "podGroupPolicy": {"coscheduling": {"scheduleTimeoutSeconds": 60}},
                "template": {
                    "spec": {
                        "replicatedJobs": [
                            {
                                "name": "node",
                                "template": {
                                    "metadata": {"labels": step},
                                    "spec": {"template": template},
                                },
                            }
                        ]
                    }
                },
            },
        },
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "tj"},
            "spec": {
                "runtimeRef": {"name": "rt"},
                "trainer": {"numNodes": 2, "resourcesPerNode": {"limits": {"cpu": "1"}}},
                "runtimePatches": [
                    {
                        "manager": "m",
                        "trainingRuntimeSpec": {
                            "template": {"spec": {"replicatedJobs": [{"name": "node"}]}}
                        },
                    }
                ],
            },
        },
    ]


def _kai() -> list[dict[str, Any]]:
    """22-25: a KAI Topology, Queue and PodGroup (rack required, a sub-group with its own
    rack and a leaf with its minMember) with its pod, which also claims a DRA device; 26: a Kueue-managed Job named by generateName."""
    member = (
        pod("kai-0")
        .requests(cpu=1)
        .annotate("pod-group-name", "kpg")
        .label("kai.scheduler/subgroup-name", "a")
        .obj()
    )
    member["spec"]["schedulerName"] = "kai-scheduler"
    member["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one"}]
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"generateName": "tas-", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {
            "parallelism": 2,
            "template": {
                "metadata": {"annotations": {"kueue.x-k8s.io/podset-required-topology": "rack"}},
                "spec": _volcano_template()["spec"],
            },
        },
    }
    return [
        {
            "apiVersion": "kai.scheduler/v1alpha1",
            "kind": "Topology",
            "metadata": {"name": "kt"},
            "spec": {"levels": [{"nodeLabel": "rack"}]},
        },
        {
            "apiVersion": "scheduling.run.ai/v2",
            "kind": "Queue",
            "metadata": {"name": "kq", "annotations": {"gangplan.io/usage": "gpu=0.5"}},
            "spec": {
                "resources": {"gpu": {"quota": 1, "limit": 2, "overQuotaWeight": 1}},
                "preemptMinRuntime": "5m",
                "reclaimMinRuntime": "10m",
            },
        },
        {
            "apiVersion": "scheduling.run.ai/v2alpha2",
            "kind": "PodGroup",
            "metadata": {"name": "kpg"},
            "spec": {
                "minMember": 1,
                "queue": "kq",
                "topologyConstraint": {"topology": "kt", "requiredTopologyLevel": "rack"},
                "subGroups": [
                    {
                        "name": "p",
                        "topologyConstraint": {"topology": "kt", "requiredTopologyLevel": "rack"},
                    },
                    {"name": "a", "minMember": 1, "parent": "p"},
                ],
            },
        },
        member,
        job,
    ]


def _kueue() -> list[dict[str, Any]]:
    """A Kueue Topology over the racks, its TAS flavor and a Workload of 2 pods in one rack."""
    group = "kueue.x-k8s.io/v1beta2"
    return [
        {
            "apiVersion": group,
            "kind": "Topology",
            "metadata": {"name": "tas"},
            "spec": {"levels": [{"nodeLabel": "rack"}]},
        },
        {
            "apiVersion": group,
            "kind": "ResourceFlavor",
            "metadata": {"name": "f"},
            "spec": {"nodeLabels": {"rack": "r0"}, "topologyName": "tas"},
        },
        {
            "apiVersion": group,
            "kind": "Workload",
            "metadata": {"name": "kw"},
            "spec": {
                "podSets": [
                    {
                        "name": "main",
                        "count": 2,
                        "topologyRequest": {
                            "required": "rack",
                            "podSetSliceRequiredTopology": "rack",
                            "podSetSliceSize": 2,
                        },
                        "template": _volcano_template(),
                    }
                ]
            },
        },
    ]


def _hypernodes() -> list[dict[str, Any]]:
    """20, 21: Volcano HyperNodes (a regex leaf under a tier-2 parent)."""
    leaf = {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": "leaf"},
        "spec": {
            "tier": 1,
            "tierName": "rack",
            "members": [
                {"type": "Node", "selector": {"regexMatch": {"pattern": "^n[01]$"}}},
                {"type": "Node", "selector": {"labelMatch": {"matchLabels": {"rack": "r0"}}}},
            ],
        },
    }
    spine = {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": "spine"},
        "spec": {
            "tier": 2,
            "members": [{"type": "HyperNode", "selector": {"exactMatch": {"name": "leaf"}}}],
        },
    }
    return [leaf, spine]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside nested dicts and lists."""
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _replace(root: Any, path: tuple[Any, ...], value: Any) -> Any:
    """`root` with the value at `path` replaced; unchanged when an earlier replacement
    took the path away (a mapping replaced by a list: the document is invalid already)."""
    if not path:
        return value
    parent = root
    try:
        for step in path[:-1]:
            parent = parent[step]
        parent[path[-1]] = value
    except (TypeError, KeyError, IndexError):
        pass
    return root


@st.composite
def hostile_documents(draw: st.DrawFn) -> list[Any]:
    """The base manifests with 1-4 values (or whole subtrees) replaced by hostile ones."""
    docs: list[Any] = base_manifests()
    for _ in range(draw(st.integers(1, 4))):
        paths = _paths(docs)[1:]
        path = draw(st.sampled_from(paths))
        docs = _replace(docs, path, draw(HOSTILE))
    return docs


DAMAGE = st.sampled_from(
    [
        lambda text: text[: len(text) // 2],  # truncated
        lambda text: text.replace(":", "", 1),
        lambda text: "[" * 100_000 + text,
        lambda text: (
            text
            + "\n---\n"
            + "a: &a [x, x, x, x, x, x, x, x, x]\n"
            + "".join(
                f"{b}: &{b} [{', '.join(['*' + a] * 9)}]\n"
                for a, b in zip("abcdef", "bcdefg", strict=True)
            )
        ),
        lambda text: text.replace("kind: Pod", "kind: [Pod"),
        lambda text: "\t" + text,
        lambda text: text.replace("\n", "\n  ", 3),
    ]
)


@st.composite
def hostile_manifest_text(draw: st.DrawFn) -> str:
    docs = draw(hostile_documents())
    text = yaml.safe_dump_all(
        docs if isinstance(docs, list) else [docs], sort_keys=False, allow_unicode=True
    )
    if draw(st.integers(0, 4)) == 0:
        text = draw(DAMAGE)(text)
    return text


# Values Kubernetes (or gangplan's documented bounds) refuses, and where they go.
INVALID_MANIFEST_VALUES: list[tuple[tuple[Any, ...], Any]] = [
    ((0, "status", "allocatable", "cpu"), "99999999999999999999"),
    ((0, "status", "allocatable", "memory"), "1Zi"),
    ((0, "status", "allocatable", GPU), "１"),
    ((0, "status", "allocatable", "cpu"), "-4"),
    ((3, "spec", "containers", 0, "resources", "requests", "cpu"), "1Y"),
    ((3, "spec", "containers", 0, "resources", "requests", "cpu"), "9Ei"),
    ((3, "spec", "priority"), 2**31),
    ((6, "value"), -(2**31) - 1),
    ((5, "spec", "weight"), 2**40),
    ((5, "spec", "parent"), "q"),  # its own parent
    ((7, "spec", "networkTopologySpec", 0, "parentTopologyLayer"), "RackLayer"),
    ((8, "spec", "tasks", 0, "replicas"), 2**40),
    ((8, "spec", "minAvailable"), -1),
    ((8, "spec", "tasks", 0, "partitionPolicy", "partitionSize"), 0),
    ((8, "spec", "tasks", 0, "partitionPolicy", "totalPartitions"), 3),
    ((8, "spec", "tasks", 0, "partitionPolicy"), ["x"]),
    ((28, "spec", "trainer", "numNodes"), -2),
    ((31, "spec", "resourceGroups", 0, "flavors", 0, "resources", 0, "nominalQuota"), "-1"),
    ((31, "spec", "resourceGroups", 0, "flavors", 0, "resources", 1, "lendingLimit"), "1Zi"),
    ((31, "spec", "resourceGroups", 0, "flavors", 0, "name"), "missing"),
    ((31, "spec", "resourceGroups", 0, "coveredResources"), ["cpu"]),
    ((31, "spec", "queueingStrategy"), "LIFO"),
    ((31, "spec", "fairSharing", "weight"), "heavy"),
    ((30, "spec", "parentName"), "org"),  # its own parent
    ((32, "spec", "clusterQueue"), None),
    ((28, "spec", "runtimeRef"), "rt"),
    ((28, "spec", "runtimePatches", 0, "trainingRuntimeSpec"), 7),
    ((27, "spec", "template", "spec", "replicatedJobs"), {"name": "node"}),
    ((27, "spec", "podGroupPolicy"), ["coscheduling"]),
    ((9, "spec", "parallelism"), "2"),
    ((9, "spec", "completionMode"), "Sometimes"),
    ((10, "spec", "pytorchReplicaSpecs", "Worker", "replicas"), -3),
    ((10, "spec", "runPolicy", "schedulingPolicy", "minAvailable"), "all"),
    ((11, "spec", "ordinals", "start"), 2**40),
    ((11, "spec", "template"), "pod"),
    ((17, "spec", "levels", 0, "nodeLabel"), ""),
    ((18, "spec", "topologyName"), "missing"),
    ((19, "spec", "podSets", 0, "topologyRequest", "podSetSliceSize"), 0),
    ((19, "spec", "podSets", 0, "topologyRequest", "required"), "no label!"),
    ((3, "metadata", "annotations"), {"kueue.x-k8s.io/podset-slice-size": "2"}),
    ((3, "metadata", "annotations"), {"kueue.x-k8s.io/podset-group-name": "g"}),
    ((19, "spec", "podSets", 0, "topologyRequest", "podSetGroupName"), "12"),
    ((19, "spec", "podSets", 0, "topologyRequest", "podsetSliceRequiredTopologyConstraints"), "x"),
    ((19, "spec", "podSets", 0, "topologyRequest", "podsetSliceRequiredTopologyConstraints"), [{}]),
    (
        (3, "metadata", "annotations"),
        {"kueue.x-k8s.io/podset-slice-required-topology-constraints": "[{"},
    ),
    ((2, "spec", "networkTopology", "mode"), "strict"),
    ((2, "spec", "minTaskMember"), {"worker": -1}),
    ((2, "spec", "minTaskMember"), ["worker"]),
    ((2, "spec", "minTaskMember"), {f"r{i}": 1 for i in range(300)}),
    ((2, "spec", "networkTopology", "highestTierAllowed"), -1),
    ((2, "spec", "subGroupPolicy", 0, "name"), ""),
    ((2, "spec", "subGroupPolicy", 0, "subGroupSize"), -2),
    ((2, "spec", "subGroupPolicy", 0, "minSubGroups"), "two"),
    ((2, "spec", "subGroupPolicy", 0, "matchLabelKeys"), "part"),
    ((2, "spec", "subGroupPolicy", 0, "labelSelector", "matchLabels"), ["app"]),
    ((2, "spec", "subGroupPolicy", 0, "networkTopology", "mode"), "strict"),
    ((20, "spec", "tier"), "one"),
    ((20, "spec", "members", 0, "type"), "Rack"),
    ((21, "spec", "members", 0, "selector"), {"regexMatch": {"pattern": "x"}}),
    ((23, "spec", "reclaimMinRuntime"), "soon"),
    ((23, "spec", "preemptMinRuntime"), -5),
    ((23, "metadata", "annotations", "gangplan.io/usage"), "gpu=lots"),
    ((29, "spec", "minAvailable"), "half"),
    ((29, "spec", "maxUnavailable"), 1),
    ((29, "status", "disruptionsAllowed"), -1),
]


@st.composite
def invalid_manifest_text(draw: st.DrawFn) -> str:
    docs = base_manifests()
    for path, value in draw(st.lists(st.sampled_from(INVALID_MANIFEST_VALUES), min_size=1)):
        _replace(docs, path, value)
    return yaml.safe_dump_all(docs, sort_keys=False, allow_unicode=True)
