"""KAI-Scheduler as a dialect: PodGroup (`scheduling.run.ai/v2alpha2`) gangs joined by the
`pod-group-name` annotation, their topology constraint against a `kai.scheduler/v1alpha1`
Topology, and the Queue read and noted. Cases translated from KAI's own tests and docs,
cited per case; every case runs on both engines (each decision verified in `schedule`).

The example cluster (`examples/dialects/kai.yaml`, KAI's docs/topology/README.md):

    zone A ─┬─ A1: a1-1 a1-2      zone B ─┬─ B1: b1-1 b1-2
            ├─ A2: a2-1                   ├─ B2: b2-1 b2-2
            ├─ A3: a3-1                   └─ B3: b3-1 b3-2
            └─ A4: a4-1                   (1 GPU per node)
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from solver import SchedulerConf, schedule
from solver.codec import Violations, cluster_to_proto, gang_from_proto
from solver.errors import ManifestError
from solver.kube import load_objects
from solver.model import PodSelection
from solver.schedule import snapshot_of
from solver.snapshot import Workload
from tests.builders import raw

ROOT = Path(__file__).parents[2]
EXAMPLE = [d for d in yaml.safe_load_all((ROOT / "examples/dialects/kai.yaml").read_text()) if d]
ENGINES = ["greedy", "cpsat"]
ZONE, RACK = "topology.kubernetes.io/zone", "topology.kubernetes.io/rack"


def with_constraint(**constraint: str) -> list[dict[str, Any]]:
    objects = copy.deepcopy(EXAMPLE)
    pg = next(o for o in objects if o["kind"] == "PodGroup")
    pg["spec"]["topologyConstraint"] = {"topology": "cluster-topology", **constraint}
    return objects


def run(objects: list[dict[str, Any]], engine: str) -> Any:
    cluster = load_objects(raw(*objects))
    snapshot = snapshot_of(cluster)
    workload, _ = Workload.everything(snapshot).select(
        PodSelection(scheduler_names=frozenset({"kai-scheduler"}))
    )
    decision = schedule(
        snapshot, SchedulerConf.default(), workload=workload, engine=engine, workers=1
    )
    return cluster, decision


def zone_of(node: str | None) -> str:
    return (node or "?")[0]


@pytest.mark.parametrize("engine", ENGINES)
def test_the_docs_example_takes_one_zone_the_tighter_one(engine: str) -> None:
    """KAI docs/topology/README.md "Example": zone required, rack preferred; no rack holds
    3 GPUs; zone A (5 free) is tighter than B (6): KAI picks A (bin-packing), and fills
    rack A1 (the most room) first: 2 racks."""
    _, d = run(EXAMPLE, engine)
    nodes = [d.placements[f"default/train-{i}"].node or "?" for i in range(3)]
    assert {zone_of(n) for n in nodes} == {"a"}, nodes
    racks = {n.rsplit("-", 1)[0] for n in nodes}
    assert len(racks) == 2 and "a1" in racks, nodes


@pytest.mark.parametrize("engine", ENGINES)
def test_a_required_zone_too_small_for_the_job_keeps_it_pending(engine: str) -> None:
    """The job grows to 7 pods: no zone has 7 GPUs (A: 5, B: 6), so it waits whole;
    without the constraint it would fit across zones."""
    objects = copy.deepcopy(EXAMPLE)
    pg = next(o for o in objects if o["kind"] == "PodGroup")
    pg["spec"]["minMember"] = 7
    pod = next(o for o in objects if o["kind"] == "Pod")
    for i in range(3, 7):
        extra = copy.deepcopy(pod)
        extra["metadata"]["name"] = f"train-{i}"
        objects.append(extra)
    _, d = run(objects, engine)
    assert not any(p.node for p in d.placements.values())
    del pg["spec"]["topologyConstraint"]
    _, d = run(objects, engine)
    assert all(p.node for p in d.placements.values())


# KAI pkg/scheduler/plugins/topology/job_filtering_test.go (72de64fc),
# TestTopologyPlugin_calculateRelevantDomainLevels: the cases with an error, in KAI's words.
LEVEL_ERRORS = [
    (
        "required placement not found in topology",
        {"requiredTopologyLevel": "nonexistent"},
        "topology constraint error: workload specified 'nonexistent' as the required topology "
        "constraint level, but the topology tree 'cluster-topology' does not contain a level "
        "with this name",
    ),
    (
        "preferred placement not found in topology",
        {"preferredTopologyLevel": "nonexistent"},
        "topology constraint error: workload specified 'nonexistent' as the preferred topology "
        "constraint level, but the topology tree 'cluster-topology' does not contain a level "
        "with this name",
    ),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("case", "constraint", "message"), LEVEL_ERRORS, ids=lambda v: v)
def test_a_level_its_topology_lacks_keeps_the_job_pending_with_kais_message(
    case: str, constraint: dict[str, str], message: str, engine: str
) -> None:
    _, d = run(with_constraint(**constraint), engine)
    assert not any(p.node for p in d.placements.values()), case
    assert d.podgroups["default/train"].reason.endswith(message)


@pytest.mark.parametrize("engine", ENGINES)
def test_only_a_preferred_level_takes_one_rack_when_one_holds_the_job(engine: str) -> None:
    """`only preferred placement specified`: the relevant levels reach the top, so the job
    is not confined, but one rack that holds it is preferred (B1, B2 or B3: 2 GPUs each for
    a 2-pod job), then one zone; with 3 pods no rack holds it and it still runs."""
    objects = with_constraint(preferredTopologyLevel=RACK)
    pg = next(o for o in objects if o["kind"] == "PodGroup")
    pg["spec"]["minMember"] = 2
    objects = [o for o in objects if o["metadata"]["name"] != "train-2"]
    cluster, d = run(objects, engine)
    nodes = [d.placements[f"default/train-{i}"].node or "?" for i in range(2)]
    assert len({n.rsplit("-", 1)[0] for n in nodes}) == 1, nodes
    assert not any("preferredTopologyLevel" in n for n in cluster.notes)
    _, d = run(with_constraint(preferredTopologyLevel=RACK), engine)
    nodes = [d.placements[f"default/train-{i}"].node or "?" for i in range(3)]
    assert all(n != "?" for n in nodes) and {zone_of(n) for n in nodes} in ({"a"}, {"b"}), nodes


def test_pods_join_their_podgroup_in_its_queue() -> None:
    cluster = load_objects(raw(*EXAMPLE))
    gang = cluster.gangs["default/train"]
    assert gang.min_member == 3 and gang.topology_key == ZONE and gang.queue == "team-a"
    assert {p.gang for p in cluster.pods} == {"default/train"}
    kai = cluster.queues["team-a"].kai
    assert kai is not None and kai.quota["nvidia.com/gpu"] == 4 and kai.limit["cpu"] == -1


def test_a_missing_podgroup_makes_its_pods_one_gang() -> None:
    """A dump with the pods but not their PodGroup: the pods naming it are one gang."""
    objects = [o for o in EXAMPLE if o["kind"] != "PodGroup"]
    cluster = load_objects(raw(*objects))
    assert cluster.gangs["default/train"].min_member == 3


def test_a_refused_job_stays_refused_over_grpc() -> None:
    """The codec carries Gang.refused (field 25): a KAI level its Topology lacks, and a
    Workload API parent, were dropped on the way and the job was placed."""
    cluster = load_objects(raw(*with_constraint(requiredTopologyLevel="nonexistent")))
    (msg,) = [g for g in cluster_to_proto(cluster).gangs if g.name == "train"]
    again = gang_from_proto(msg, "cluster.gangs[0]", Violations())
    assert again is not None and again.refused == cluster.gangs["default/train"].refused
    assert "nonexistent" in (again.refused or "")


RACKS = [
    {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": f"{rack}-{i}",
            "labels": {"topology/zone": "z1", "topology/rack": rack},
        },
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "1"}},
    }
    for rack in ("r1", "r2")
    for i in range(3)
]


def multilevel(sizes: dict[str, int], **top: str) -> list[dict[str, Any]]:
    """KAI docs/topology/multilevel.md "Independent Subgroup Constraints" (sample1): leaf
    sub-groups, each of its own minMember in one rack; pods join by label."""
    level = {"topology": "cluster-topology", "requiredTopologyLevel": "topology/rack"}
    pg: dict[str, Any] = {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "sample1"},
        "spec": {
            "queue": "test",
            "subGroups": [
                {"name": f"subgroup-{s}", "minMember": n, "topologyConstraint": level}
                for s, n in sizes.items()
            ],
        },
    }
    if top:
        pg["spec"]["topologyConstraint"] = {"topology": "cluster-topology", **top}
    pods = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"pod-{s}{i}",
                "annotations": {"pod-group-name": "sample1"},
                "labels": {"kai.scheduler/subgroup-name": f"subgroup-{s}"},
            },
            "spec": {
                "schedulerName": "kai-scheduler",
                "containers": [{"name": "w", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
            },
        }
        for s, n in sizes.items()
        for i in range(n)
    ]
    topology = {
        "apiVersion": "kai.scheduler/v1alpha1",
        "kind": "Topology",
        "metadata": {"name": "cluster-topology"},
        "spec": {"levels": [{"nodeLabel": "topology/zone"}, {"nodeLabel": "topology/rack"}]},
    }
    return [*RACKS, topology, pg, *pods]


@pytest.mark.parametrize("engine", ENGINES)
def test_leaf_levels_each_take_a_rack_of_their_own(engine: str) -> None:
    """sample1 with a and b of 2 pods each, each required in one rack, on two racks of 3
    GPUs: no rack holds all 4, and KAI puts each sub-group in a rack of its own
    (`allocateSubGroupSet`), each with its own minMember. gangplan held the whole PodGroup to
    one rack and left it pending."""
    cluster, d = run(multilevel({"a": 2, "b": 2}), engine)
    assert all(p.node for p in d.placements.values()), d.placements
    for leaf in ("a", "b"):
        racks = {
            (p.node or "?")[:2]
            for k, p in d.placements.items()
            if k.startswith(f"default/pod-{leaf}")
        }
        assert len(racks) == 1, (leaf, racks)
    assert {(p.node or "?")[:2] for p in d.placements.values()} == {"r1", "r2"}
    gang = cluster.gangs["default/sample1"]
    assert [(s.name, s.min_member) for s in gang.topology_sub_groups] == [
        ("subgroup-a", 2),
        ("subgroup-b", 2),
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_sub_group_that_no_rack_holds_keeps_the_podgroup_pending(engine: str) -> None:
    """b needs 4 GPUs in one rack of 3: the PodGroup (minMember 6) is not placed, and its
    reason proves it naming the sub-group."""
    _, d = run(multilevel({"a": 2, "b": 4}), engine)
    assert not any(p.node for p in d.placements.values())
    reason = d.podgroups["default/sample1"].reason
    assert reason.startswith(
        "gang default/sample1 needs 4 nvidia.com/gpu inside one topology/rack domain "
        "(sub-group subgroup-b); the largest offers 3 (z1.r1)"
    ), reason


@pytest.mark.parametrize("engine", ENGINES)
def test_leaf_sub_groups_are_placed_together_or_not_at_all(engine: str) -> None:
    """Without levels, each leaf is a gang of its own minMember and the leaves go together:
    b needs 4 GPUs more than the 6-GPU cluster leaves after a's 3, so nothing is placed."""
    objects = multilevel({"a": 3, "b": 4})
    pg = next(o for o in objects if o["kind"] == "PodGroup")
    for sub in pg["spec"]["subGroups"]:
        del sub["topologyConstraint"]
    _, d = run(objects, engine)
    assert not any(p.node for p in d.placements.values())


def test_a_constraint_above_the_leaves_keeps_it_and_nests_theirs() -> None:
    """The PodGroup requires a zone, its leaves a rack each: one gang in one zone, each
    leaf's pods in one rack of their own, named by zone and rack (KAI's `zone.rack` ids)."""
    cluster = load_objects(
        raw(*multilevel({"a": 1, "b": 2}, requiredTopologyLevel="topology/zone"))
    )
    assert {p.gang for p in cluster.pods} == {"default/sample1"}
    gang = cluster.gangs["default/sample1"]
    assert gang.topology_key == "topology/zone"
    assert [(s.name, s.values, s.levels) for s in gang.topology_sub_groups] == [
        (f"subgroup-{x}", (f"subgroup-{x}",), ("topology/zone", "topology/rack")) for x in "ab"
    ]


def test_leaf_gangs_are_one_group() -> None:
    objects = multilevel({"a": 2, "b": 3})
    pg = next(o for o in objects if o["kind"] == "PodGroup")
    for sub in pg["spec"]["subGroups"]:
        del sub["topologyConstraint"]
    cluster = load_objects(raw(*objects))
    a, b = "default/sample1.subgroup-a", "default/sample1.subgroup-b"
    assert set(cluster.gangs) == {a, b}
    assert cluster.gangs[a].groups == (a, b) and cluster.gangs[b].min_member == 3


@pytest.mark.parametrize("engine", ENGINES)
def test_a_node_pool_label_confines_the_job_to_its_pool(engine: str) -> None:
    """KAI's node pools (commonconstants.NodePoolNameLabel `runai/node-pool`): the example
    job labelled for pool `b`, whose nodes are zone B's, lands in zone B though A is
    tighter. The label was dropped in silence."""
    objects = copy.deepcopy(EXAMPLE)
    for o in objects:
        if o["kind"] == "Node" and o["metadata"]["name"].startswith("b"):
            o["metadata"]["labels"]["runai/node-pool"] = "b"
        if o["kind"] == "Pod":
            o["metadata"].setdefault("labels", {})["runai/node-pool"] = "b"
            o["metadata"]["labels"]["kai.scheduler/queue"] = "team-a"
    cluster, d = run(objects, engine)
    assert {zone_of(p.node) for p in d.placements.values()} == {"b"}
    assert not any("kai.scheduler/queue, not acted on" in n for n in cluster.notes)


def test_podgroup_fields_not_acted_on_are_noted() -> None:
    objects = copy.deepcopy(EXAMPLE)
    pg = next(o for o in objects if o["kind"] == "PodGroup")
    pg["spec"] |= {"markUnschedulable": True, "schedulingBackoff": 1, "backoffLimit": 3}
    notes = load_objects(raw(*objects)).notes
    assert any(
        "not acted on: spec.backoffLimit, spec.markUnschedulable, spec.schedulingBackoff" in n
        for n in notes
    )


def test_the_docs_spelling_subgroups_is_noted_with_the_fields_name() -> None:
    """KAI's multilevel page writes `subgroups`; the CRD's field is `subGroups` and the API
    server drops the other: the note says which to write."""
    objects = multilevel({"a": 1, "b": 1})
    pg = next(o for o in objects if o["kind"] == "PodGroup")
    pg["spec"]["subgroups"] = pg["spec"].pop("subGroups")
    cluster = load_objects(raw(*objects))
    assert any("spec.subgroups (the field is subGroups" in n for n in cluster.notes), cluster.notes


def test_unknown_sub_group_fields_are_noted() -> None:
    """KAI's min-subgroups design adds `minSubGroup` (not in its CRD yet): a sub-group's
    field gangplan does not read is named, not dropped."""
    objects = multilevel({"a": 1, "b": 1})
    pg = next(o for o in objects if o["kind"] == "PodGroup")
    pg["spec"]["subGroups"][1]["minSubGroup"] = 1
    cluster = load_objects(raw(*objects))
    assert any("not acted on: spec.subGroups[1].minSubGroup" in n for n in cluster.notes)


@pytest.mark.parametrize(
    ("groups", "field", "message"),
    [
        (
            [
                {"name": "x", "parent": "y"},
                {"name": "y", "parent": "x"},
                {"name": "c", "parent": "x"},
            ],
            "spec.subGroups[0].parent",
            "sub-group 'x' is its own ancestor",
        ),
        ([{"name": f"s{i}"} for i in range(257)], "spec.subGroups", "at most 256 sub-groups"),
    ],
    ids=["parent cycle", "too many"],
)
def test_hostile_sub_groups_are_one_line(
    groups: list[dict[str, Any]], field: str, message: str
) -> None:
    """A parent cycle looped forever (found in review); a sub-group list is bounded."""
    objects = multilevel({"a": 1})
    pg = next(o for o in objects if o["kind"] == "PodGroup")
    pg["spec"]["subGroups"] = groups
    with pytest.raises(ManifestError) as err:
        load_objects(raw(*objects))
    assert f"{field}: {message}" in str(err.value), str(err.value)
