"""KAI-Scheduler's topology-aware allocation, translated from its own tests
(NVIDIA/KAI-Scheduler at 72de64fc: `pkg/scheduler/actions/allocate/allocateTopology_test.go`
`TestHandleTopologyAllocation`, and `pkg/scheduler/plugins/topology/job_filtering_test.go`
`TestTopologyPlugin_calculateRelevantDomainLevels`), each case named as upstream names it and
run on both engines (every decision verified inside `schedule`).

A case's expected nodes are upstream's, exactly, for the greedy (which follows KAI's order:
domains most packed first, and inside the chosen one its preferred sub-domains most room
first, as KAI's node score ranks them). Where upstream's choice of node inside a domain is
node scoring that gangplan's default conf does not share, the case asserts the domain
property instead and says so; CP-SAT, which breaks ties by its own objective, is held to
the same domain property everywhere.

The cases without sub-groups are here; the sub-group cases are gangplan's stricter one-domain
reading (`tests/kube/test_kai.py`, docs/dialects/kai.md).
"""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest

from solver import SchedulerConf, schedule
from solver.codec import decision_to_proto
from solver.kube import load_objects
from solver.kube.kai import _Constraint, _level_error, _preferred_keys
from solver.model import PodSelection
from solver.schedule import snapshot_of
from solver.snapshot import Workload
from tests.builders import raw

ENGINES = ["greedy", "cpsat"]
RACK, SPINE, ZONE = "k8s.io/rack", "k8s.io/spine", "k8s.io/zone"
AFFINITY = "kai.test/node-affinity"  # tasks_fake.NodeAffinityKey
Objects = list[dict[str, Any]]


def topology(*levels: str) -> dict[str, Any]:
    return {
        "apiVersion": "kai.scheduler/v1alpha1",
        "kind": "Topology",
        "metadata": {"name": "cluster-topology"},
        "spec": {"levels": [{"nodeLabel": level} for level in levels]},
    }


def gpu_node(name: str, gpus: int, **labels: str) -> dict[str, Any]:
    """`nodes_fake.TestNodeBasic`: GPUs, labels; CPU and memory to spare."""
    keys = {"rack": RACK, "spine": SPINE, "zone": ZONE, "affinity": AFFINITY}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {keys[k]: v for k, v in labels.items()}},
        "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "nvidia.com/gpu": str(gpus)}},
    }


def running(name: str, node: str, gpus: int = 1) -> dict[str, Any]:
    """A running task of another job (`running_job0`)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "w", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}],
        },
        "status": {"phase": "Running"},
    }


def job(
    tasks: int,
    gpus: int = 1,
    required: str = "",
    preferred: str = "",
    affinity: dict[int, str] | None = None,
) -> Objects:
    """`pending_job0`: a KAI PodGroup of `tasks` pods (minMember = tasks), its
    root topology constraint, and the node affinity some tasks carry."""
    constraint = {"topology": "cluster-topology"}
    if required:
        constraint["requiredTopologyLevel"] = required
    if preferred:
        constraint["preferredTopologyLevel"] = preferred
    group = {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "pending-job0"},
        "spec": {"minMember": tasks, "queue": "queue0", "topologyConstraint": constraint},
    }
    pods = []
    for i in range(tasks):
        spec: dict[str, Any] = {
            "schedulerName": "kai-scheduler",
            "containers": [{"name": "w", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}],
        }
        if affinity and i in affinity:
            spec["nodeSelector"] = {AFFINITY: affinity[i]}
        pods.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"pending-job0-{i}",
                    "annotations": {"pod-group-name": "pending-job0"},
                },
                "spec": spec,
            }
        )
    return [group, *pods]


def run(objects: Objects, engine: str) -> dict[str, str | None]:
    cluster = load_objects(raw(*objects))
    snapshot = snapshot_of(cluster)
    workload, _ = Workload.everything(snapshot).select(
        PodSelection(scheduler_names=frozenset({"kai-scheduler"}))
    )
    decision = schedule(
        snapshot, SchedulerConf.default(), workload=workload, engine=engine, workers=1, seed=0
    )
    return {k.split("/", 1)[1]: p.node for k, p in decision.placements.items()}


def labels_of(objects: Objects) -> dict[str, dict[str, str]]:
    return {o["metadata"]["name"]: o["metadata"]["labels"] for o in objects if o["kind"] == "Node"}


@dataclass
class Case:
    upstream: str
    objects: Objects
    nodes: list[str] | None  # upstream's nodes for pending-job0-0.., None: stays pending
    exact: bool = True  # False: upstream's nodes are one of several equally good answers
    same: tuple[str, ...] = field(default=())  # labels every placed pod must share


FOUR_TWO_LEVEL = [
    gpu_node("node0", 2, rack="rack1", spine="spine1"),
    gpu_node("node1", 2, rack="rack1", spine="spine2"),
    gpu_node("node2", 2, rack="rack2", spine="spine1"),
    gpu_node("node3", 2, rack="rack2", spine="spine2"),
]


def evenly(zones: int, spines: int, racks: int, nodes: int, gpus: int) -> Objects:
    """`buildEvenlyDistributedTopologyNodes`: node0.. over zone/spine/rack, numbered in order."""
    out, n = [], 0
    for z in range(1, zones + 1):
        for sp in range(1, spines + 1):
            for r in range(1, racks + 1):
                for _ in range(nodes):
                    spine = sp + (z - 1) * spines
                    rack = r + (sp - 1) * racks + (z - 1) * spines * racks
                    out.append(
                        gpu_node(
                            f"node{n}",
                            gpus,
                            zone=f"zone{z}",
                            spine=f"spine{spine}",
                            rack=f"rack{rack}",
                        )
                    )
                    n += 1
    return out


CASES = [
    # rack1: node0 node1 | rack2: node2 node3 (1 GPU each); node0 busy
    Case(
        "Required topology level - schedule all tasks on the same rack",
        [
            topology(RACK),
            gpu_node("node0", 1, rack="rack1"),
            gpu_node("node1", 1, rack="rack1"),
            gpu_node("node2", 1, rack="rack2"),
            gpu_node("node3", 1, rack="rack2"),
            running("running-job0-0", "node0"),
            *job(2, required=RACK),
        ],
        ["node2", "node3"],
    ),
    # task 0 may only run where affinity1 is: rack2, though rack1 sorts first
    Case(
        "Required topology level - could not schedule on first domain due to affinity, "
        "goes to next",
        [
            topology(RACK),
            gpu_node("node0", 1, rack="rack1"),
            gpu_node("node1", 1, rack="rack1"),
            gpu_node("node2", 1, rack="rack2", affinity="affinity1"),
            gpu_node("node3", 1, rack="rack2", affinity="affinity1"),
            *job(2, required=RACK, affinity={0: "affinity1"}),
        ],
        ["node2", "node3"],
        exact=False,  # which of the two takes task 0 is node scoring
        same=(RACK,),
    ),
    # rack1 ─┬─ spine1: node0 (2 GPUs, 1 busy)
    #        └─ spine2: node1 (2 GPUs)
    Case(
        "Required topology with multiple levels - schedule all tasks on the same spine",
        [
            topology(RACK, SPINE),
            *FOUR_TWO_LEVEL[:2],
            running("running-job0-0", "node0"),
            *job(2, required=SPINE),
        ],
        ["node1", "node1"],
    ),
    Case(
        "Required topology with multiple levels - schedule all tasks on the same rack",
        [
            topology(RACK, SPINE),
            *FOUR_TWO_LEVEL,
            running("running-job0-0", "node0"),
            *job(4, required=RACK),
        ],
        ["node2", "node2", "node3", "node3"],
        exact=False,  # the multiset is forced; which pod takes which is node scoring
    ),
    Case(
        "Required topology with multiple levels - schedule all tasks on the same partially "
        "occupied rack",
        [
            topology(RACK, SPINE),
            *FOUR_TWO_LEVEL[:2],
            running("running-job0-0", "node0"),
            *job(2, required=RACK),
        ],
        ["node0", "node1"],
        exact=False,  # node1 twice is as valid; upstream's GPU bin-packing fills node0 first
        same=(RACK,),
    ),
    Case(
        "Required topology with multiple levels - job remains pending as no available rack "
        "can be found",
        [
            topology(RACK, SPINE),
            *FOUR_TWO_LEVEL,
            running("running-job0-0", "node0"),
            running("running-job1-0", "node2"),
            *job(4, required=RACK),
        ],
        None,
    ),
    # rack1: node0 (2 GPUs, 1 busy) | rack2: node1 (2 GPUs)
    Case(
        "Preferred topology - schedule job on the same rack",
        [
            topology(RACK),
            gpu_node("node0", 2, rack="rack1"),
            gpu_node("node1", 2, rack="rack2"),
            running("running-job0-0", "node0"),
            *job(2, preferred=RACK),
        ],
        ["node1", "node1"],
    ),
    Case(
        "Preferred topology - schedule job even if preferred constraint can't be met",
        [
            topology(RACK),
            gpu_node("node0", 2, rack="rack1"),
            gpu_node("node1", 2, rack="rack2"),
            running("running-job0-0", "node0"),
            running("running-job1-0", "node1"),
            *job(2, preferred=RACK),
        ],
        ["node1", "node0"],
        exact=False,  # one pod per rack is forced; the order is node scoring
    ),
    # free GPUs: node0 0, node1 1 (rack1) | node2 1, node3 1 (rack2): no spine holds 2
    Case(
        "Combined preferred and required topology constraints - schedule job although "
        "preferred constraint cannot be satisfied",
        [
            topology(RACK, SPINE),
            *FOUR_TWO_LEVEL,
            running("running-job0-0", "node0"),
            running("running-job0-1", "node0"),
            running("running-job0-2", "node1"),
            running("running-job0-3", "node2"),
            running("running-job0-4", "node3"),
            *job(2, required=RACK, preferred=SPINE),
        ],
        ["node3", "node2"],
        exact=False,
        same=(RACK,),
    ),
    # rack1 over spine1..spine4, two 1-GPU nodes each: no spine holds 3 pods, so 2 spines
    Case(
        "Combined preferred and required topology constraints - preferred level respected "
        "when possible",
        [
            topology(RACK, SPINE),
            *(gpu_node(f"node{i}", 1, rack="rack1", spine=f"spine{i // 2 + 1}") for i in range(8)),
            *job(3, required=RACK, preferred=SPINE),
        ],
        ["node6", "node7", "node4"],  # KAI's node score ranks the last spine highest
    ),
    # zone1 ─┬─ spine1 ─┬─ rack1: node0 node1 (busy)      spine2 ─┬─ rack3: node4 node5
    #        │          └─ rack2: node2 (busy) node3              └─ rack4: node6 node7
    Case(
        "Bin Packing - allocate on domain with least free resources (most occupied)",
        [
            topology(ZONE, SPINE, RACK),
            *evenly(1, 2, 2, 2, 1),
            running("running-job0-0", "node0"),
            running("running-job0-1", "node1"),
            running("running-job0-2", "node2"),
            *job(1, preferred=SPINE),
        ],
        ["node3"],
    ),
    # zone1 ─┬─ spine1 ─┬─ rack1: node0   spine2 ── rack4: node3 node4
    #        │          ├─ rack2: node1
    #        │          └─ rack3: node2
    Case(
        "Bin Packing - Pack Top-Most domain first",
        [
            topology(ZONE, SPINE, RACK),
            gpu_node("node0", 1, zone="zone1", spine="spine1", rack="rack1"),
            gpu_node("node1", 1, zone="zone1", spine="spine1", rack="rack2"),
            gpu_node("node2", 1, zone="zone1", spine="spine1", rack="rack3"),
            gpu_node("node3", 1, zone="zone1", spine="spine2", rack="rack4"),
            gpu_node("node4", 1, zone="zone1", spine="spine2", rack="rack4"),
            *job(1, preferred=RACK),
        ],
        ["node3"],
        exact=False,  # node3 and node4 tie inside rack4
        same=(SPINE,),
    ),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.upstream[:80])
def test_handle_topology_allocation(case: Case, engine: str) -> None:
    placed = run(case.objects, engine)
    got = [placed[f"pending-job0-{i}"] for i in range(_tasks(case))]
    if case.nodes is None:
        assert not any(got), got
        return
    assert all(got), got
    if case.exact and engine == "greedy":
        assert got == case.nodes
    labels = labels_of(case.objects)
    for key in case.same:
        assert len({labels[n][key] for n in got if n}) == 1, got
    if not case.same:
        # the multiset of domains at every level equals upstream's
        for key in (RACK, SPINE, ZONE):
            want = Counter(labels[n].get(key) for n in case.nodes)
            assert Counter(labels[n].get(key) for n in got if n) == want or (
                not case.exact and _same_shape(want, Counter(labels[n].get(key) for n in got if n))
            ), (key, got)


def _tasks(case: Case) -> int:
    return sum(1 for o in case.objects if o["metadata"]["name"].startswith("pending-job0-"))


def _same_shape(a: Counter[str | None], b: Counter[str | None]) -> bool:
    """The same number of pods per domain, up to which domains (a tie between domains)."""
    return sorted(a.values()) == sorted(b.values())


LEVELS = ("datacenter", "zone", "rack")


@pytest.mark.parametrize(
    ("upstream", "levels", "required", "preferred", "want"),
    [
        (
            "both required and preferred placement specified",
            LEVELS,
            "zone",
            "rack",
            ("zone", ("rack",)),
        ),
        ("only required placement specified", LEVELS, "zone", "", ("zone", ())),
        ("only preferred placement specified", LEVELS, "", "rack", ("", LEVELS)),
        ("required placement at first level", LEVELS, "rack", "", ("rack", ())),
        ("preferred placement at first level", LEVELS, "", "rack", ("", LEVELS)),
        ("preferred placement at middle level", LEVELS, "", "zone", ("", ("datacenter", "zone"))),
        ("single level topology with preferred placement", ("zone",), "", "zone", ("", ("zone",))),
        (
            "complex topology with multiple levels",
            ("datacenter", "region", "zone", "rack"),
            "region",
            "zone",
            ("region", ("zone",)),
        ),
    ],
)
def test_calculate_relevant_domain_levels(
    upstream: str,
    levels: tuple[str, ...],
    required: str,
    preferred: str,
    want: tuple[str, tuple[str, ...]],
) -> None:
    """Upstream's relevant levels, finest first, up to the required level or the root, are
    gangplan's hard key (the required level) plus its preferred keys (coarsest first)."""
    c = _Constraint(topology="t", requiredTopologyLevel=required, preferredTopologyLevel=preferred)
    keys = _preferred_keys(c, levels) if preferred else ()
    assert (required, keys) == want, upstream
    assert _level_error(c, {"t": levels}, "workload") is None


@pytest.mark.parametrize(
    ("upstream", "required", "preferred", "message"),
    [
        (
            "required placement not found in topology",
            "nonexistent",
            "",
            "topology constraint error: workload specified 'nonexistent' as the required "
            "topology constraint level, but the topology tree 't' does not contain a level "
            "with this name",
        ),
        (
            "preferred placement not found in topology",
            "",
            "nonexistent",
            "topology constraint error: workload specified 'nonexistent' as the preferred "
            "topology constraint level, but the topology tree 't' does not contain a level "
            "with this name",
        ),
        (
            "(gangplan) a preferred level above the required one: the search stops first",
            "rack",
            "zone",
            "topology constraint error: workload specified 'zone' as the preferred "
            "topology constraint level, but the topology tree 't' does not contain a level "
            "with this name",
        ),
    ],
)
def test_calculate_relevant_domain_levels_errors(
    upstream: str, required: str, preferred: str, message: str
) -> None:
    c = _Constraint(topology="t", requiredTopologyLevel=required, preferredTopologyLevel=preferred)
    assert _level_error(c, {"t": LEVELS}, "workload") == message, upstream


# ----------------------------------------------------------------------------- sub-groups


def sub_job(
    gpus: int,
    tasks: list[str],
    root: dict[str, str],
    groups: list[tuple[str, str | None, int, dict[str, str]]],
) -> Objects:
    """`pending_job0` with sub-groups: (name, parent, minMember, constraint) — KAI's
    SubGroupSets and PodSets — and one pod per entry of `tasks` naming its leaf."""

    def constraint(levels: dict[str, str]) -> dict[str, str]:
        return {"topology": "cluster-topology", **levels} if levels else {}

    spec: dict[str, Any] = {"minMember": len(tasks), "queue": "queue0", "subGroups": []}
    if root:
        spec["topologyConstraint"] = constraint(root)
    for name, parent, minimum, levels in groups:
        entry: dict[str, Any] = {"name": name, "minMember": minimum}
        if parent:
            entry["parent"] = parent
        if levels:
            entry["topologyConstraint"] = constraint(levels)
        spec["subGroups"].append(entry)
    pods = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"pending-job0-{i}",
                "annotations": {"pod-group-name": "pending-job0"},
                "labels": {"kai.scheduler/subgroup-name": leaf},
            },
            "spec": {
                "schedulerName": "kai-scheduler",
                "containers": [
                    {"name": "w", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}
                ],
            },
        }
        for i, leaf in enumerate(tasks)
    ]
    group = {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "pending-job0"},
        "spec": spec,
    }
    return [group, *pods]


REQ_RACK = {"requiredTopologyLevel": RACK}
PREF_RACK = {"preferredTopologyLevel": RACK}
STRICTER = (
    "sub-groups share one domain of the finest required level (per-sub-group domains: not modelled)"
)
ZR_NODES = [
    gpu_node("node0", 2, rack="rack1", zone="zone1"),
    gpu_node("node1", 2, rack="rack2", zone="zone1"),
    gpu_node("node2", 2, rack="rack3", zone="zone2"),
    gpu_node("node3", 2, rack="rack4", zone="zone2"),
]
EIGHT = [
    gpu_node(
        f"node{i}", 2, rack=f"rack{i + 1}", spine=f"spine{i // 2 + 1}", zone=f"zone{i // 4 + 1}"
    )
    for i in range(8)
]
ZR4 = [gpu_node(f"node{i}", 4, rack=f"rack{i + 1}", zone=f"zone{i // 2 + 1}") for i in range(4)]
REPLICAS = [
    ("replica1", None, 0, {}),
    ("encoder1", "replica1", 1, {}),
    ("decoder1", "replica1", 1, {}),
    ("replica2", None, 0, {}),
    ("encoder2", "replica2", 1, {}),
    ("decoder2", "replica2", 1, {}),
]
ENC_DEC = ["encoder1", "decoder1", "encoder2", "decoder2"]


def _with(
    groups: list[tuple[str, str | None, int, dict[str, str]]], **levels: dict[str, str]
) -> list[tuple[str, str | None, int, dict[str, str]]]:
    """REPLICAS with the replicas' (or leaves') constraints set by name."""
    return [(n, p, m, levels.get(n, c)) for n, p, m, c in groups]


SUB_CASES = [
    Case(
        "Required topology constraint - prefer packed domain",
        [
            topology(RACK),
            gpu_node("node0", 10, rack="rack1"),
            gpu_node("node1", 10, rack="rack2"),
            running("running-job0-0", "node1"),
            *sub_job(1, ["sub-a", "sub-a"], {}, [("sub-a", None, 1, REQ_RACK)]),
        ],
        ["node1", "node1"],
    ),
    Case(
        "Preferred topology at multiple subgroup hierarchy levels - rack and zone",
        [
            topology(ZONE, RACK),
            *ZR4,
            running("running-job0-0", "node0"),
            *sub_job(
                2,
                ENC_DEC,
                {"preferredTopologyLevel": ZONE},
                _with(REPLICAS, replica1=PREF_RACK, replica2=PREF_RACK),
            ),
        ],
        ["node2", "node2", "node3", "node3"],
        exact=False,
    ),
    Case(
        "Hierarchical Preferred Topology - PodGroup prefers Spine, SubGroups has no preference - "
        "should allocate on closest Spine nodes",
        [
            topology(ZONE, SPINE, RACK),
            *evenly(1, 2, 2, 2, 1),
            *sub_job(
                1,
                ["pod-a-1", "pod-a-2", "pod-a-3", "pod-b-1", "pod-b-2", "pod-b-3"],
                {"preferredTopologyLevel": SPINE},
                [
                    ("subgroup-a", None, 0, {}),
                    *((f"pod-a-{i}", "subgroup-a", 1, {}) for i in (1, 2, 3)),
                    ("subgroup-b", None, 0, {}),
                    *((f"pod-b-{i}", "subgroup-b", 1, {}) for i in (1, 2, 3)),
                ],
            ),
        ],
        ["node4", "node5", "node6", "node7", "node0", "node1"],
        exact=False,
    ),
]
PREF_SPINE = {"preferredTopologyLevel": SPINE}
SUB_CASES.append(
    Case(
        "Hierarchical Conflicting Preferred Topology - PodGroup prefers Spine, SubGroups prefer "
        "Rack - should allocate on closest Rack nodes",
        [
            topology(ZONE, SPINE, RACK),
            *evenly(1, 2, 2, 2, 1),
            *sub_job(
                1,
                ["pod-a-1", "pod-a-2", "pod-a-3", "pod-b-1", "pod-b-2", "pod-b-3"],
                PREF_SPINE,
                [
                    ("subgroup-a", None, 0, PREF_RACK),
                    *((f"pod-a-{i}", "subgroup-a", 1, {}) for i in (1, 2, 3)),
                    ("subgroup-b", None, 0, PREF_RACK),
                    *((f"pod-b-{i}", "subgroup-b", 1, {}) for i in (1, 2, 3)),
                ],
            ),
        ],
        # no rack holds a sub-group's 3 pods, so each takes a spine: a spine1, b spine2,
        # each filling its roomiest rack first (the sub-group's node score)
        ["node2", "node3", "node0", "node6", "node7", "node4"],
    )
)
SUB_DEPARTURES = [
    Case(
        "Required topology at multiple subgroup hierarchy levels - subgroup on the same rack "
        "and workload in the same zone",
        [
            topology(ZONE, RACK),
            *ZR_NODES,
            running("running-job0-0", "node0", 2),
            *sub_job(
                2,
                ["sub-a", "sub-b"],
                {"requiredTopologyLevel": ZONE},
                [("sub-a", None, 1, REQ_RACK), ("sub-b", None, 1, REQ_RACK)],
            ),
        ],
        ["node2", "node3"],
        exact=False,
        same=(ZONE,),
    ),
    Case(
        "Required topology at multiple subgroup hierarchy levels - rack, spine and zone",
        [
            topology(ZONE, SPINE, RACK),
            *EIGHT,
            running("running-job0-0", "node0", 2),
            *sub_job(
                2,
                ["rep1-sub-a", "rep1-sub-b", "rep2-sub-a", "rep2-sub-b"],
                {"requiredTopologyLevel": ZONE},
                [
                    ("replica1", None, 0, {"requiredTopologyLevel": SPINE}),
                    ("rep1-sub-a", "replica1", 1, REQ_RACK),
                    ("rep1-sub-b", "replica1", 1, REQ_RACK),
                    ("replica2", None, 0, {"requiredTopologyLevel": SPINE}),
                    ("rep2-sub-a", "replica2", 1, REQ_RACK),
                    ("rep2-sub-b", "replica2", 1, REQ_RACK),
                ],
            ),
        ],
        ["node4", "node5", "node6", "node7"],
        exact=False,
    ),
    Case(
        "Required and preferred topology constraints combined at different levels - rack and zone",
        [
            topology(ZONE, RACK),
            *ZR4,
            running("running-job0-0", "node0"),
            *sub_job(
                2,
                ENC_DEC,
                {"preferredTopologyLevel": ZONE},
                _with(REPLICAS, replica1=REQ_RACK, replica2=REQ_RACK),
            ),
        ],
        ["node2", "node2", "node3", "node3"],
        exact=False,
    ),
    Case(
        "Required and preferred topology constraints with single unconstrained level",
        [
            topology(ZONE, SPINE, RACK),
            *EIGHT,
            running("running-job0-0", "node0", 2),
            *sub_job(
                2,
                ["rep1-sub-a", "rep1-sub-b", "rep2-sub-a", "rep2-sub-b"],
                {"preferredTopologyLevel": ZONE},
                [
                    ("replica1", None, 0, {"requiredTopologyLevel": SPINE}),
                    ("rep1-sub-a", "replica1", 1, {}),
                    ("rep1-sub-b", "replica1", 1, {}),
                    ("replica2", None, 0, {"requiredTopologyLevel": SPINE}),
                    ("rep2-sub-a", "replica2", 1, {}),
                    ("rep2-sub-b", "replica2", 1, {}),
                ],
            ),
        ],
        ["node4", "node5", "node6", "node7"],
        exact=False,
    ),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", SUB_CASES, ids=lambda c: c.upstream[:80])
def test_handle_topology_allocation_with_sub_groups(case: Case, engine: str) -> None:
    test_handle_topology_allocation(case, engine)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", SUB_DEPARTURES, ids=lambda c: c.upstream[:80])
def test_sub_groups_in_domains_of_their_own(case: Case, engine: str) -> None:
    """Upstream puts each sub-group (replica) in a rack or spine of its own; gangplan holds
    the whole job to one domain of the finest required level, which no domain can hold
    here: it stays pending (stricter than KAI, never looser)."""
    test_handle_topology_allocation(case, engine)


def test_a_sixteen_level_topology_keeps_every_tier_a_64_bit_integer() -> None:
    """KAI allows 16 levels: with a preferred finest level and no required one, the
    preferred tier's weights were (pods + 1)^15, 1.6e24 for 40 pods, too wide for the wire's
    int64 and for CP-SAT's coefficients. Saturated weights keep it 64-bit; CP-SAT proves."""
    levels = [f"kai.test/l{i}" for i in range(16)]
    nodes = []
    for n in range(8):
        labels = {lv: f"v{n >> max(0, 3 - i) if i < 3 else n}" for i, lv in enumerate(levels)}
        node = gpu_node(f"node{n}", 8)
        node["metadata"]["labels"] = labels
        nodes.append(node)
    group, pod = job(1, preferred=levels[-1])
    group["spec"]["minMember"] = 40
    pods = []
    for i in range(40):
        p = copy.deepcopy(pod)
        p["metadata"]["name"] = f"pending-job0-{i}"
        pods.append(p)
    objects = [topology(*levels), *nodes, group, *pods]
    for engine in ENGINES:
        cluster = load_objects(raw(*objects))
        snapshot = snapshot_of(cluster)
        workload, _ = Workload.everything(snapshot).select(
            PodSelection(scheduler_names=frozenset({"kai-scheduler"}))
        )
        decision = schedule(
            snapshot, SchedulerConf.default(), workload=workload, engine=engine, workers=1, seed=0
        )
        assert len(decision.placed) == 40
        assert all(abs(v) < 2**63 for v in decision.tiers.values())
        decision_to_proto(decision)  # encodes: every tier fits the wire
        if engine == "cpsat":
            assert decision.status == "OPTIMAL"
