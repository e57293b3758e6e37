"""Hypothesis strategies for hostile gRPC requests, one `Door` per PlacementService method:
a small valid request with some of its scalars replaced by values a careless or hostile
client's encoder sends, sometimes sent against a stored snapshot instead of inline, and
sometimes with its bytes damaged.

`INVALID_REQUESTS` are invalid by construction, each with the field path its
INVALID_ARGUMENT must name, for the "never accepted" oracle.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp
from hypothesis import strategies as st

from gangplan.v1 import cluster_pb2 as pb
from gangplan.v1 import placement_service_pb2 as spb
from tests.fuzz.fields import Path, scalar_paths, set_field
from tests.fuzz.manifests import GPU, NAME

KUEUE_PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
KUEUE_GROUP = "kueue.x-k8s.io/podset-group-name"
FUZZ_SNAPSHOT = "fuzz"  # stored with `base_cluster()` before every example


def _term(key: str) -> pb.PodAffinityTerm:
    return pb.PodAffinityTerm(
        label_selector=pb.LabelSelector(
            match_labels={"app": "g"},
            match_expressions=[
                pb.LabelSelectorRequirement(
                    key="tier", operator=pb.LABEL_SELECTOR_OPERATOR_NOT_IN, values=["x"]
                )
            ],
        ),
        namespaces=["default"],
        topology_key=key,
    )


_TOLERATION = pb.Toleration(
    key="gpu",
    operator=pb.TOLERATION_OPERATOR_EQUAL,
    value="yes",
    effect=pb.TAINT_EFFECT_NO_SCHEDULE,
)
# A Godel gang with job-level affinity, resources and annotations: every Gang field is set
# somewhere in the base requests, so every one is fuzzed.
_GODEL_GANG = pb.Gang(
    namespace="default",
    name="godel",
    min_member=1,
    min_resources={"cpu": 1000},
    min_task_member={"worker": 1},
    annotations={"gang.scheduling.koordinator.sh/groups": '["default/godel"]'},
    affinity=pb.GangAffinity(
        required_topology_keys=["rack"],
        preferred_topology_keys=["kubernetes.io/hostname"],
        sort_rules=[pb.SortRule(resource="GPU", dimension="Capacity", order="Ascending")],
    ),
)


def base_cluster() -> pb.Cluster:
    return pb.Cluster(
        observed_time=Timestamp(seconds=1_700_003_600),
        disruption_budgets=[
            pb.DisruptionBudget(
                namespace="default",
                name="pdb",
                selector=pb.LabelSelector(match_labels={"app": "g"}),
                min_available="1",
                disruptions_allowed=1,
                disrupted_pods=["p9"],
            ),
            pb.DisruptionBudget(name="pdb2", max_unavailable="50%"),
        ],
        nodes=[
            pb.Node(
                name=f"n{i}",
                labels={"rack": f"r{i}"},
                allocatable={"cpu": 8000, "memory": 2**35, GPU: 4, "pods": 110},
                taints=[pb.Taint(key="gpu", value="yes", effect=pb.TAINT_EFFECT_NO_SCHEDULE)]
                if i == 1
                else [],
            )
            for i in range(2)
        ],
        pods=[
            pb.Pod(
                namespace="default",
                name="run",
                node_name="n0",
                requests={"cpu": 1000},
                labels={"app": "g"},
                pod_anti_affinity=pb.PodAffinity(required=[_term("rack")]),
                tolerations=[_TOLERATION],
                annotations={  # a running GPU share, as Koordinator records it
                    "scheduling.koordinator.sh/device-allocated": '{"gpu":[{"minor":1,'
                    '"resources":{"koordinator.sh/gpu-core":"50","koordinator.sh/gpu-memory-ratio":"50"}}]}'
                },
            )
        ],
        queues=[
            pb.Queue(
                name="q",
                capability={"cpu": 16000},
                deserved={"cpu": 8000},
                guarantee={"cpu": 1000},
                allocated={"cpu": 1000},
                annotations={"volcano.sh/card.quota": '{"A100": 4}'},
                affinity=pb.QueueAffinity(
                    node_group_affinity=pb.NodeGroupTerms(required=["a"], preferred=["b"]),
                    node_group_anti_affinity=pb.NodeGroupTerms(required=["c"], preferred=["d"]),
                ),
            )
        ],
        gangs=[_GODEL_GANG],
        topology=pb.NetworkTopology(
            layers=[
                pb.TopologyLayer(name="RackLayer", label_keys=["rack"]),
                pb.TopologyLayer(name="NodeTopologyLayer", parent="RackLayer"),
            ],
            kueue_topologies=[pb.KueueTopology(name="tas", levels=["rack"])],
            kueue_flavors=[
                pb.KueueResourceFlavor(name="f", topology_name="tas", node_labels={"rack": "r1"})
            ],
            hypernodes=[
                pb.HyperNode(
                    name="leaf",
                    tier=1,
                    tier_name="rack",
                    members=[pb.HyperNodeMember(type=pb.HYPER_NODE_MEMBER_TYPE_NODE, regex="^n")],
                ),
                pb.HyperNode(
                    name="spine",
                    tier=2,
                    members=[
                        pb.HyperNodeMember(
                            type=pb.HYPER_NODE_MEMBER_TYPE_HYPER_NODE, exact_name="leaf"
                        )
                    ],
                ),
            ],
        ),
    )


# A KAI PodGroup whose sub-groups each take a domain of their own inside its rack.
_KAI_GANG = pb.Gang(
    namespace="default",
    name="kai",
    min_member=1,
    topology_key="zone",
    topology_sub_groups=[
        pb.TopologySubGroup(
            name="replica",
            label="kai.scheduler/subgroup-name",
            values=["enc", "dec"],
            levels=["zone", "rack"],
        ),
        pb.TopologySubGroup(
            name="enc",
            label="kai.scheduler/subgroup-name",
            values=["enc"],
            levels=["zone", "rack"],
            min_member=1,
            preferred=["zone", "rack", "kubernetes.io/hostname"],
        ),
    ],
)


def base_job() -> pb.Job:
    return pb.Job(
        gangs=[
            pb.Gang(
                namespace="default",
                name="g",
                min_member=2,
                queue="q",
                network_topology=pb.VolcanoNetworkTopology(mode="hard", highest_tier_allowed=2),
                sub_group_policy=[
                    pb.VolcanoSubGroupPolicy(
                        name="part",
                        sub_group_size=1,
                        min_sub_groups=1,
                        match_label_keys=["app"],
                        network_topology=pb.VolcanoNetworkTopology(
                            mode="hard", highest_tier_allowed=1
                        ),
                    )
                ],
            ),
            _GODEL_GANG,
            _KAI_GANG,
        ],
        pods=[
            *(
                pb.Pod(
                    namespace="default",
                    name=f"p{i}",
                    gang="default/g",
                    requests={GPU: 1},
                    labels={"app": "g"},
                    annotations={
                        KUEUE_PREFERRED: "rack",
                        **({"gpu-fraction": "0.5"} if i == 0 else {}),
                    },
                    pod_affinity=pb.PodAffinity(
                        preferred=[pb.WeightedPodAffinityTerm(weight=10, term=_term("rack"))]
                    ),
                    pod_anti_affinity=pb.PodAffinity(required=[_term("kubernetes.io/hostname")]),
                    tolerations=[_TOLERATION],
                    node_selector={"rack": "r0"} if i == 1 else {},
                    creation_time=Timestamp(seconds=1_700_000_000 + i),
                    topology_spread_constraints=[
                        pb.TopologySpreadConstraint(
                            max_skew=1,
                            topology_key="rack",
                            when_unsatisfiable=pb.WHEN_UNSATISFIABLE_DO_NOT_SCHEDULE,
                            label_selector=pb.LabelSelector(match_labels={"app": "g"}),
                            min_domains=1,
                        )
                    ],
                    preferred_node_affinity=[
                        pb.PreferredSchedulingTerm(
                            weight=5,
                            preference=pb.NodeSelectorTerm(
                                match_expressions=[
                                    pb.NodeSelectorRequirement(
                                        key="rack", operator=pb.SELECTOR_OPERATOR_IN, values=["r0"]
                                    )
                                ]
                            ),
                        )
                    ],
                )
                for i in range(2)
            ),
            pb.Pod(
                namespace="default",
                name="k0",
                gang="default/kai",
                requests={"cpu": 100},
                labels={"kai.scheduler/subgroup-name": "enc"},
            ),
        ],
    )


def full_cluster() -> pb.Cluster:
    """`base_cluster()` with `base_job()`'s gangs and pods pending in it: every Cluster
    field set, for the methods that take a cluster alone."""
    cluster = base_cluster()
    job = base_job()
    cluster.gangs.extend(g for g in job.gangs if g.name != _GODEL_GANG.name)
    cluster.pods.extend(job.pods)
    return cluster


def kai_cluster() -> pb.Cluster:
    """`full_cluster()` with KAI-Scheduler queues in place of Volcano's (a snapshot holds one
    scheduler's queues): `q` under `top`, every KaiQueueResources field set."""
    cluster = full_cluster()
    del cluster.queues[:]
    for name, parent in (("top", ""), ("q", "top")):
        queue = pb.Queue(
            name=name,
            parent=parent,
            priority=100,
            kai=pb.KaiQueueResources(
                quota={"cpu": 4000.0, "memory": -1.0, GPU: 1.5},
                limit={"cpu": -1.0, GPU: 8.0},
                over_quota_weight={GPU: 2.0},
                usage={GPU: 0.25, "cpu": 0.1},
            ),
        )
        queue.kai.creation_time.seconds = 1_700_000_000
        queue.kai.preempt_min_runtime.seconds = 60
        queue.kai.reclaim_min_runtime.seconds = 600
        cluster.queues.append(queue)
    return cluster


def kueue_cluster() -> pb.Cluster:
    """`full_cluster()` with Kueue queues in place of Volcano's: cohort `org` under `top`,
    ClusterQueue `cq` in it (two flavors, every KueueResourceQuota field set), LocalQueue
    `default/main` of it (the base job's first pod names it)."""
    cluster = full_cluster()
    del cluster.queues[:]
    quotas = [
        pb.KueueResourceQuota(name="cpu", nominal_quota=8000, borrowing_limit=4000, lending_limit=2000),
        pb.KueueResourceQuota(name=GPU, nominal_quota=4, borrowing_limit=4, lending_limit=1),
    ]  # fmt: skip
    group = pb.KueueResourceGroup(
        covered_resources=["cpu", GPU],
        flavors=[
            pb.KueueFlavorQuotas(name="a", node_labels={"rack": "r0"}, resources=quotas),
            pb.KueueFlavorQuotas(name="b", resources=quotas),
        ],
    )
    cq = pb.KueueQueue(kind="ClusterQueue", resource_groups=[group], queueing_strategy="StrictFIFO")
    cq.fair_weight = 2.0
    own = pb.KueueResourceGroup(
        covered_resources=["cpu"],
        flavors=[
            pb.KueueFlavorQuotas(
                name="b", resources=[pb.KueueResourceQuota(name="cpu", nominal_quota=2000)]
            )
        ],
    )  # a root cohort's quota: no limits (they need a parent)
    cluster.queues.extend([
        pb.Queue(name="top", kueue=pb.KueueQueue(kind="Cohort", resource_groups=[own])),
        pb.Queue(name="org", parent="top", kueue=pb.KueueQueue(kind="Cohort")),
        pb.Queue(name="cq", parent="org", kueue=cq),
        pb.Queue(name="default/main", parent="cq", kueue=pb.KueueQueue(kind="LocalQueue")),
    ])  # fmt: skip
    return cluster


def kueue_job() -> pb.Job:
    job = base_job()
    for pod in job.pods:
        pod.labels["kueue.x-k8s.io/queue-name"] = "main"
    return job


def base_delta() -> spb.UpdateSnapshotRequest:
    """Against `FUZZ_SNAPSHOT`: a node, a queue and a gang added, a pending pod added and a
    running one reported, the running pod of `base_cluster()` removed."""
    return spb.UpdateSnapshotRequest(
        snapshot_id=FUZZ_SNAPSHOT,
        observed_time=Timestamp(seconds=1_700_007_200),
        upsert_disruption_budgets=[pb.DisruptionBudget(name="pdb3", max_unavailable="1")],
        remove_disruption_budgets=["default/pdb2"],
        upsert_nodes=[
            pb.Node(
                name="n2",
                labels={"rack": "r0"},
                allocatable={"cpu": 4000},
                taints=[pb.Taint(key="k", value="v", effect=pb.TAINT_EFFECT_PREFER_NO_SCHEDULE)],
            )
        ],
        upsert_queues=[
            pb.Queue(name="q2", parent="q", capability={"cpu": 2000}),
            *base_cluster().queues,
        ],
        upsert_gangs=[
            pb.Gang(namespace="default", name="g2", min_member=1, queue="q2"),
            pb.Gang(
                namespace="default",
                name="w",
                min_member=1,
                topology_key="rack",
                disruption_mode=pb.DISRUPTION_MODE_ALL,
            ),
            *full_cluster().gangs,
        ],
        upsert_pods=[
            pb.Pod(namespace="default", name="new", gang="default/g2", requests={"cpu": 100}),
            pb.Pod(namespace="default", name="r2", node_name="n1", requests={"cpu": 100}),
            *full_cluster().pods,
        ],
        remove_pods=["default/run"],
        bindings=[spb.Binding(pod="default/new", node="n0")],
        topology=base_cluster().topology,
    )


def base_plan() -> spb.PlanCapacityRequest:
    return spb.PlanCapacityRequest(
        cluster=base_cluster(),
        workload=base_job(),
        node_types=[
            spb.PlanNodeType(
                name="a100",
                cost=10.0,
                gpu_model="A100",
                allocatable={"cpu": 64000, GPU: 8, "pods": 110},
                max_count=4,
                nodes_per_block=2,
                labels={"rack": "new"},
            )
        ],
        card_quota={"A100": 16},
        budget=100.0,
        options=spb.SolveOptions(workers=1, seed=1),
    )


def _under(prefix: Path, paths: list[Path]) -> list[Path]:
    return [(*prefix, *p) for p in paths]


CLUSTER_INTS: list[Path] = [
    ("nodes", 0, "allocatable", "cpu"),
    ("pods", 0, "requests", "cpu"),
    ("pods", 0, "priority"),
    ("queues", 0, "capability", "cpu"),
    ("queues", 0, "weight"),
    ("topology", "hypernodes", 0, "tier"),
    ("topology", "hypernodes", 1, "members", 0, "type"),
]
CLUSTER_STRS: list[Path] = [
    ("nodes", 0, "name"),
    ("nodes", 0, "labels", "rack"),
    ("pods", 0, "name"),
    ("pods", 0, "node_name"),
    ("pods", 0, "gang"),
    ("queues", 0, "name"),
    ("queues", 0, "parent"),
    ("topology", "layers", 1, "parent"),
    ("topology", "layers", 0, "label_keys", 0),
    ("topology", "kueue_topologies", 0, "levels", 0),
    ("topology", "kueue_flavors", 0, "topology_name"),
    ("topology", "kueue_flavors", 0, "node_labels", "rack"),
    ("topology", "hypernodes", 0, "name"),
    ("topology", "hypernodes", 0, "members", 0, "regex"),
    ("topology", "hypernodes", 1, "members", 0, "exact_name"),
]
JOB_INTS: list[Path] = [
    ("gangs", 0, "min_member"),
    ("gangs", 0, "total_number"),
    ("gangs", 0, "priority"),
    ("gangs", 0, "match_policy"),
    ("gangs", 0, "mode"),
    ("pods", 0, "priority"),
    ("pods", 0, "preemption_policy"),
    ("pods", 0, "requests", GPU),
    ("pods", 0, "creation_time", "seconds"),
    ("pods", 0, "creation_time", "nanos"),
    ("gangs", 0, "network_topology", "highest_tier_allowed"),
    ("gangs", 0, "sub_group_policy", 0, "sub_group_size"),
    ("gangs", 0, "sub_group_policy", 0, "min_sub_groups"),
    ("gangs", 0, "sub_group_policy", 0, "network_topology", "highest_tier_allowed"),
]
JOB_STRS: list[Path] = [
    ("gangs", 0, "name"),
    ("gangs", 0, "namespace"),
    ("gangs", 0, "queue"),
    ("pods", 0, "gang"),
    ("pods", 0, "name"),
    ("pods", 0, "namespace"),
    ("pods", 0, "node_selector", "rack"),
    ("pods", 1, "labels", "app"),
    ("pods", 0, "annotations", KUEUE_PREFERRED),
    ("pods", 1, "annotations", "kueue.x-k8s.io/podset-slice-size"),
    ("pods", 0, "annotations", KUEUE_GROUP),
    ("pods", 1, "annotations", KUEUE_GROUP),
    ("gangs", 0, "network_topology", "mode"),
    ("gangs", 0, "network_topology", "highest_tier_name"),
    ("gangs", 0, "sub_group_policy", 0, "name"),
    ("gangs", 0, "sub_group_policy", 0, "match_label_keys", 0),
    ("gangs", 0, "sub_group_policy", 0, "network_topology", "mode"),
    ("gangs", 2, "topology_sub_groups", 0, "values", 1),
    ("gangs", 2, "topology_sub_groups", 1, "levels", 0),
    ("pods", 2, "labels", "kai.scheduler/subgroup-name"),
]
OPTION_INTS: list[Path] = [("options", "workers"), ("options", "seed")]
OPTION_STRS: list[Path] = [
    ("options", "engine"),
    ("options", "scheduler_conf"),
    ("options", "scheduler_names", 0),
    ("options", "namespaces", 0),
]


@dataclass(frozen=True)
class Door:
    """One method: a valid request, the response type, and the fields hostile values go
    into: every scalar of the valid request (`fields.scalar_paths`) and the paths listed
    here, which add entries the request does not have (a second pod's label, a map key)."""

    method: str
    base: Callable[[], Message]
    response: type[Message]
    ints: list[Path]
    strs: list[Path]
    doubles: list[Path] | None = None

    def __str__(self) -> str:
        return self.method

    @cached_property
    def paths(self) -> dict[str, list[Path]]:
        found = scalar_paths(self.base())
        listed = {"int": self.ints, "str": self.strs, "double": self.doubles or []}
        for kind, paths in listed.items():
            found[kind] = sorted(set(found[kind]) | set(paths), key=repr)
        return {kind: paths for kind, paths in found.items() if paths}


def _solve_door(method: str, request: type[Message], response: type[Message]) -> Door:
    return Door(
        method,
        lambda: request(
            cluster=base_cluster(), job=base_job(), options=spb.SolveOptions(engine="greedy")
        ),
        response,
        [*_under(("cluster",), CLUSTER_INTS), *_under(("job",), JOB_INTS), *OPTION_INTS],
        [*_under(("cluster",), CLUSTER_STRS), *_under(("job",), JOB_STRS), *OPTION_STRS],
    )


def base_why() -> spb.WhyRequest:
    request = spb.WhyRequest(
        cluster=base_cluster(),
        job=base_job(),
        options=spb.SolveOptions(engine="greedy"),
        gang="default/g",
        default_runtime_seconds=3600.0,
        node_types=base_plan().node_types,
    )
    request.now.seconds = 1_800_000_000
    return request


DOORS = [
    _solve_door("PlaceJob", spb.PlaceJobRequest, spb.PlaceJobResponse),
    _solve_door("Preempt", spb.PreemptRequest, spb.PreemptResponse),
    _solve_door("Enqueue", spb.EnqueueRequest, spb.EnqueueResponse),
    Door(
        "ValidateQueues",
        lambda: spb.ValidateQueuesRequest(cluster=full_cluster()),
        spb.ValidateQueuesResponse,
        _under(("cluster",), CLUSTER_INTS),
        _under(("cluster",), CLUSTER_STRS),
    ),
    Door(
        "PutSnapshot",
        lambda: spb.PutSnapshotRequest(cluster=full_cluster(), snapshot_id="fuzz-put"),
        spb.PutSnapshotResponse,
        _under(("cluster",), CLUSTER_INTS),
        [("snapshot_id",), *_under(("cluster",), CLUSTER_STRS)],
    ),
    Door(
        "PutSnapshot",
        lambda: spb.PutSnapshotRequest(cluster=kai_cluster(), snapshot_id="fuzz-put-kai"),
        spb.PutSnapshotResponse,
        _under(("cluster",), CLUSTER_INTS),
        [("snapshot_id",), *_under(("cluster",), CLUSTER_STRS)],
        [("cluster", "queues", 1, "kai", "limit", "memory")],
    ),
    Door(
        "PlaceJob",
        lambda: spb.PlaceJobRequest(
            cluster=kueue_cluster(), job=kueue_job(), options=spb.SolveOptions(engine="greedy")
        ),
        spb.PlaceJobResponse,
        [*_under(("cluster",), CLUSTER_INTS), *_under(("job",), JOB_INTS)],
        [*_under(("cluster",), CLUSTER_STRS), *_under(("job",), JOB_STRS)],
        [("cluster", "queues", 2, "kueue", "fair_weight")],
    ),
    Door(
        "UpdateSnapshot",
        base_delta,
        spb.UpdateSnapshotResponse,
        [
            ("expected_generation",),
            ("upsert_nodes", 0, "allocatable", "cpu"),
            ("upsert_pods", 0, "requests", "cpu"),
            ("upsert_pods", 1, "priority"),
            ("upsert_gangs", 0, "min_member"),
            ("upsert_gangs", 0, "mode"),
            ("upsert_queues", 0, "weight"),
            ("upsert_queues", 0, "capability", "cpu"),
        ],
        [
            ("snapshot_id",),
            ("upsert_nodes", 0, "name"),
            ("upsert_pods", 0, "gang"),
            ("upsert_pods", 0, "name"),
            ("upsert_pods", 1, "node_name"),
            ("upsert_gangs", 0, "queue"),
            ("upsert_queues", 0, "parent"),
            ("upsert_queues", 0, "name"),
            ("remove_pods", 0),
            ("topology", "layers", 1, "parent"),
        ],
    ),
    Door(
        "DeleteSnapshot",
        lambda: spb.DeleteSnapshotRequest(snapshot_id=FUZZ_SNAPSHOT),
        spb.DeleteSnapshotResponse,
        [],
        [("snapshot_id",)],
    ),
    Door(
        "PlanCapacity",
        base_plan,
        spb.PlanCapacityResponse,
        [
            ("node_types", 0, "max_count"),
            ("node_types", 0, "nodes_per_block"),
            ("node_types", 0, "allocatable", GPU),
            ("node_types", 0, "allocatable", "cpu"),
            ("card_quota", "A100"),
            ("value",),
            *OPTION_INTS,
            *_under(("workload",), JOB_INTS),
        ],
        [
            ("node_types", 0, "name"),
            ("node_types", 0, "gpu_model"),
            ("node_types", 0, "labels", "rack"),
            *_under(("workload",), JOB_STRS),
        ],
        [("node_types", 0, "cost"), ("budget",)],
    ),
    Door(
        "Why",
        base_why,
        spb.WhyResponse,
        [
            *_under(("cluster",), CLUSTER_INTS),
            *_under(("job",), JOB_INTS),
            *OPTION_INTS,
            ("now", "seconds"),
            ("now", "nanos"),
            ("node_types", 0, "max_count"),
            ("node_types", 0, "allocatable", "cpu"),
        ],
        [
            ("gang",),
            ("node_types", 0, "name"),
            *_under(("cluster",), CLUSTER_STRS),
            *_under(("job",), JOB_STRS),
        ],
        [("default_runtime_seconds",), ("node_types", 0, "cost")],
    ),
]


HOSTILE_DOUBLE = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([-1.0, 0.0, 1e308, -0.0]),
)


@st.composite
def hostile_request(draw: st.DrawFn, door: Door) -> bytes:
    """`door`'s request with 1-4 hostile values, serialized; sometimes damaged bytes."""
    request: Any = door.base()
    values = {
        "int": st.integers(-(2**70), 2**70),
        "str": NAME,
        "double": HOSTILE_DOUBLE,
        "bool": st.booleans(),
    }
    kinds = sorted(door.paths)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(kinds))
        set_field(request, draw(st.sampled_from(door.paths[kind])), draw(values[kind]))
    fields = request.DESCRIPTOR.fields_by_name
    if "snapshot" in fields and draw(st.integers(0, 2)) == 0:
        # the stored snapshot instead of the inline cluster, at a hostile generation
        request.snapshot.id = draw(st.sampled_from([FUZZ_SNAPSHOT, "absent", ""]))
        request.snapshot.expected_generation = draw(st.sampled_from([0, 1, 2, -1, 2**63 - 1]))
    data: bytes = request.SerializeToString()
    if draw(st.integers(0, 3)) == 0:
        cut = draw(st.integers(0, len(data)))
        flip = draw(st.binary(min_size=1, max_size=8))
        data = data[:cut] + flip + data[cut + len(flip) :]
    return data


# (method, path, value, the field path the error must name)
INVALID_REQUESTS: list[tuple[str, Path, Any, str]] = [
    ("PlaceJob", ("cluster", "nodes", 0, "allocatable", "cpu"), -5, "cluster.nodes[0].allocatable"),
    ("PlaceJob", ("job", "gangs", 0, "min_member"), -1, "job.gangs[0].min_member"),
    ("PlaceJob", ("job", "gangs", 0, "match_policy"), 99, "job.gangs[0].match_policy"),
    ("PlaceJob", ("job", "pods", 0, "preemption_policy"), 99, "job.pods[0].preemption_policy"),
    ("PlaceJob", ("cluster", "queues", 0, "parent"), "q", "cluster.queues[0].parent"),
    (
        "PlaceJob",
        ("cluster", "topology", "layers", 1, "parent"),
        "NodeTopologyLayer",
        "cluster.topology",
    ),
    ("PlaceJob", ("options", "seed"), -1, "options.seed"),
    (
        "PlaceJob",
        ("job", "gangs", 0, "network_topology", "mode"),
        "strict",
        "job.gangs[0].network_topology.mode",
    ),
    (
        "PlaceJob",
        ("cluster", "topology", "hypernodes", 0, "tier"),
        -1,
        "cluster.topology.hypernodes[0].tier",
    ),
    ("PlaceJob", ("options", "workers"), 10_000, "options.workers"),
    ("PlaceJob", ("job", "pods", 0, "annotations", KUEUE_GROUP), "7", "job.pods[0].annotations"),
    ("PlaceJob", ("options", "engine"), "quantum", "options.engine"),
    ("Preempt", ("job", "pods", 0, "gang"), "no-slash", "job.pods[0].gang"),
    ("Preempt", ("job", "pods", 0, "creation_time", "seconds"), 2**62, "job.pods[0].creation_time"),
    ("Enqueue", ("job", "gangs", 0, "mode"), 7, "job.gangs[0].mode"),
    ("Enqueue", ("cluster", "pods", 0, "requests", "cpu"), -1, "cluster.pods[0].requests"),
    ("ValidateQueues", ("cluster", "queues", 0, "capability", "cpu"), -1, "cluster.queues[0]"),
    ("PutSnapshot", ("snapshot_id",), "x" * 300, "snapshot_id"),
    ("PutSnapshot", ("cluster", "nodes", 0, "name"), "", "cluster.nodes[0].name"),
    ("UpdateSnapshot", ("upsert_queues", 0, "parent"), "q2", "upsert_queues[0].parent"),
    ("UpdateSnapshot", ("upsert_gangs", 0, "min_member"), -3, "upsert_gangs[0].min_member"),
    ("UpdateSnapshot", ("upsert_pods", 0, "requests", "cpu"), -1, "upsert_pods[0].requests"),
    ("UpdateSnapshot", ("upsert_pods", 0, "gang"), "no-slash", "upsert_pods[0].gang"),
    ("PlanCapacity", ("node_types", 0, "cost"), -1.0, "node_types[0].cost"),
    ("PlanCapacity", ("node_types", 0, "cost"), float("nan"), "node_types[0].cost"),
    ("PlanCapacity", ("budget",), float("inf"), "budget"),
    ("PlanCapacity", ("node_types", 0, "max_count"), -2, "node_types[0].max_count"),
    ("PlanCapacity", ("value",), 9, "value"),
    ("PlanCapacity", ("options", "workers"), -1, "options.workers"),
]
