"""The Kubernetes Workload API (`scheduling.k8s.io` PodGroup) as a gang dialect.

The cases follow the integration scenarios KEP-5732 lists for topology-aware workload
scheduling with the gang and basic policies ("Resource Availability", "Scoring &
Placement", "Multiple Gangs", "minCount less than the total pod count", "Edge Cases") and
KEP-5710's disruption modes; expected answers worked out by hand from the KEP text:

            rack-a                        rack-b
    a1 [4 cpu]   a2 [4 cpu]       b1 [8 cpu]   b2 [8 cpu]
"""

from __future__ import annotations

from typing import Any

import pytest

from solver import schedule, verify
from solver.config import SchedulerConf
from solver.decision import Decision
from solver.errors import ManifestError
from solver.kube import build_model
from tests.builders import model, node, pod, raw, workload_podgroup

RACK = "topology.kubernetes.io/rack"
ENGINES = ["greedy", "cpsat"]


def racks() -> list[dict[str, Any]]:
    return [
        node("a1").cpu(4).label(RACK, "rack-a").obj(),
        node("a2").cpu(4).label(RACK, "rack-a").obj(),
        node("b1").cpu(8).label(RACK, "rack-b").obj(),
        node("b2").cpu(8).label(RACK, "rack-b").obj(),
    ]


def members(group: str, count: int, cpu: int, start: int = 0) -> list[dict[str, Any]]:
    return [
        pod(f"{group}-{i}").requests(cpu=cpu).scheduling_group(group).obj()
        for i in range(start, start + count)
    ]


def run(*objects: dict[str, Any], engine: str, preempt: bool = False) -> Decision:
    cluster = model(*objects)
    decision = schedule(cluster, engine=engine, workers=1, seed=0, preempt=preempt)
    assert verify(cluster, SchedulerConf.default(), decision) == []
    return decision


def racks_used(decision: Decision) -> set[str]:
    return {node_name[0] for node_name in decision.placed.values()}


def test_the_podgroup_is_read_as_a_gang() -> None:
    cluster = model(
        *racks(),
        workload_podgroup("train", 3, topology=RACK, disruption="all", priority=50),
        *members("train", 4, 1),
    )
    gang = cluster.gangs["default/train"]
    assert (gang.dialect, gang.min_member, gang.topology_key) == ("scheduling.k8s.io", 3, RACK)
    assert gang.disruption_mode == "All" and gang.priority == 50
    assert len(gang.members) == 4
    # the group's priority is its pods' priority (admission fills spec.priority from the class)
    assert {p.priority for p in cluster.pods} == {50}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("count", "cpu", "min_count", "placed", "rack"),
    [
        # Resource Availability: 4 x 2 cpu fit either rack; the greedy tries the tightest
        # rack first (KEP-5732 scores placements by NodeResourcesFit's tightest fit)
        (4, 2, 4, 4, None),
        (6, 2, 6, 6, "b"),  # 12 cpu: only rack-b holds it
        (10, 2, 10, 0, None),  # 20 cpu: the cluster has 24, no rack more than 16: pending
        # minCount below the pod count: rack-b holds 4 of the 5 three-cpu pods (2 per
        # node), rack-a only 2; minCount 3 is met in rack-b and the fifth pod waits
        (5, 3, 3, 4, "b"),
    ],
)
def test_one_rack_or_none(
    engine: str, count: int, cpu: int, min_count: int, placed: int, rack: str | None
) -> None:
    d = run(
        *racks(),
        workload_podgroup("train", min_count, topology=RACK),
        *members("train", count, cpu),
        engine=engine,
    )
    assert len(d.placed) == placed
    assert d.podgroups["default/train"].placed == (placed >= min_count)
    if placed:
        assert len(racks_used(d)) == 1
    if rack:
        assert racks_used(d) == {rack}
    if not placed:
        assert (
            "PodGroup topology topology.kubernetes.io/rack" in d.podgroups["default/train"].reason
        )


def test_the_greedy_takes_the_tightest_rack() -> None:
    d = run(
        *racks(), workload_podgroup("train", 4, topology=RACK), *members("train", 4, 2),
        engine="greedy",
    )  # fmt: skip
    assert racks_used(d) == {"a"}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_running_member_pins_the_rack(engine: str) -> None:
    running = pod("train-0").requests(cpu=1).scheduling_group("train").on("a1").obj()
    d = run(
        *racks(),
        workload_podgroup("train", 3, topology=RACK),
        running,
        *members("train", 2, 2, start=1),
        engine=engine,
    )
    assert racks_used(d) == {"a"}  # rack-b has more room, but the group started in rack-a


@pytest.mark.parametrize("engine", ENGINES)
def test_nodes_without_the_label_are_not_a_domain(engine: str) -> None:
    unlabelled = node("x1").cpu(64).obj()
    d = run(
        unlabelled,
        *racks(),
        workload_podgroup("train", 6, topology=RACK),
        *members("train", 6, 2),
        engine=engine,
    )
    assert racks_used(d) == {"b"}


@pytest.mark.parametrize("engine", ENGINES)
def test_two_groups_land_in_different_racks(engine: str) -> None:
    # Multiple Gangs: each 8 cpu; one per rack (rack-a holds exactly one of them)
    d = run(
        *racks(),
        workload_podgroup("one", 4, topology=RACK),
        workload_podgroup("two", 4, topology=RACK),
        *members("one", 4, 2),
        *members("two", 4, 2),
        engine=engine,
    )
    assert len(d.placed) == 8
    for group in ("one", "two"):
        used = {n[0] for k, n in d.placed.items() if k.startswith(f"default/{group}-")}
        assert len(used) == 1


@pytest.mark.parametrize("engine", ENGINES)
def test_a_gang_without_topology_is_all_or_nothing(engine: str) -> None:
    d = run(
        *racks(), workload_podgroup("big", 3), *members("big", 3, 8), engine=engine
    )  # only b1 and b2 hold an 8-cpu pod
    assert d.placed == {}
    assert not d.podgroups["default/big"].placed


@pytest.mark.parametrize("engine", ENGINES)
def test_basic_policy_places_what_fits(engine: str) -> None:
    d = run(*racks(), workload_podgroup("web", None), *members("web", 3, 8), engine=engine)
    assert len(d.placed) == 2


# ----------------------------------------------------------------------------- preemption
#
#   node-1 [4 GPU]: old-0..old-3, 1 GPU each, PodGroup "old" (priority 1, minCount 4)
#   node-2 [4 GPU]: four pods of priority 2000, not evictable by the newcomer
#   newcomer "hi": one pod asking 2 GPU, PodGroup priority 1000


def _preemption_cluster(disruption: str | None) -> list[dict[str, Any]]:
    gpu_nodes = [node(n).cpu(32).gpu(4).obj() for n in ("node-1", "node-2")]
    old = [
        pod(f"old-{i}").requests(cpu=1, gpu=1).scheduling_group("old").on("node-1").obj()
        for i in range(4)
    ]
    busy = [
        pod(f"busy-{i}").requests(cpu=1, gpu=1).priority(2000).on("node-2").obj() for i in range(4)
    ]
    return [
        *gpu_nodes,
        workload_podgroup("old", 4, disruption=disruption, priority=1),
        *old,
        *busy,
        workload_podgroup("hi", 1, priority=1000),
        pod("hi-0").requests(cpu=1, gpu=2).scheduling_group("hi").obj(),
    ]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("disruption", "evicted"), [("single", 2), ("all", 4), (None, 2)])
def test_disruption_mode_decides_how_many_go(
    engine: str, disruption: str | None, evicted: int
) -> None:
    d = run(*_preemption_cluster(disruption), engine=engine, preempt=True)
    assert len(d.victims) == evicted
    assert all(v.pod.startswith("default/old-") for v in d.victims)
    assert d.placements["default/hi-0"].nominated == "node-1"


# ----------------------------------------------------------------------------- input


def test_v1alpha2_disruption_mode_strings() -> None:
    group = workload_podgroup("g", 1, version="v1alpha2")
    group["spec"]["disruptionMode"] = "PodGroup"
    assert model(group, *members("g", 1, 1)).gangs["default/g"].disruption_mode == "All"
    group["spec"]["disruptionMode"] = "Pod"
    assert model(group, *members("g", 1, 1)).gangs["default/g"].disruption_mode == "Single"


def test_a_missing_podgroup_is_a_noted_gang_of_all_its_pods() -> None:
    cluster = model(*racks(), *members("lost", 3, 1))
    assert cluster.gangs["default/lost"].min_member == 3
    assert any("spec.schedulingGroup.podGroupName" in n for n in cluster.notes)


def test_a_workload_object_is_read_and_noted() -> None:
    workload = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "train", "namespace": "default"},
        "spec": {
            "podGroupTemplates": [{"name": "w", "schedulingPolicy": {"gang": {"minCount": 2}}}]
        },
    }
    cluster = model(*racks(), workload)
    assert any("Workload 'default/train' read" in n for n in cluster.notes)


def _with_spec(**spec: Any) -> dict[str, Any]:
    group = workload_podgroup("g", 2)
    group["spec"].update(spec)
    return group


@pytest.mark.parametrize(
    ("group", "field"),
    [
        (
            _with_spec(schedulingPolicy={"basic": {}, "gang": {"minCount": 2}}),
            "spec.schedulingPolicy",
        ),
        (_with_spec(schedulingPolicy={}), "spec.schedulingPolicy"),
        (
            _with_spec(schedulingPolicy={"gang": {"minCount": 0}}),
            "spec.schedulingPolicy.gang.minCount",
        ),
        (
            _with_spec(schedulingPolicy={"gang": {"minCount": "2"}}),
            "spec.schedulingPolicy.gang.minCount",
        ),
        (
            _with_spec(schedulingConstraints={"topology": [{"key": "a"}, {"key": "b"}]}),
            "spec.schedulingConstraints.topology",
        ),
        (
            _with_spec(schedulingConstraints={"topology": [{}]}),
            "spec.schedulingConstraints.topology[0].key",
        ),
        (_with_spec(disruptionMode="Sometimes"), "spec.disruptionMode"),
        (_with_spec(disruptionMode={"single": {}, "all": {}}), "spec.disruptionMode"),
        (_with_spec(priority=2_000_000_000), "spec.priority"),
        (_with_spec(preemptionPolicy="Always"), "spec.preemptionPolicy"),
        ({**workload_podgroup("g", 2), "spec": None}, "spec"),
    ],
)
def test_bad_podgroups_name_their_field(group: dict[str, Any], field: str) -> None:
    with pytest.raises(ManifestError) as err:
        build_model(raw(group))
    assert f"): {field}: " in str(err.value), err.value


def test_a_podgroup_under_a_composite_is_refused_not_placed_alone() -> None:
    group = workload_podgroup("child", 1)
    group["spec"]["parentCompositePodGroupName"] = "parent"
    d = run(*racks(), group, *members("child", 1, 1), engine="greedy")
    assert d.placed == {}
    assert (
        "CompositePodGroup 'parent' (alpha) is not enforced" in d.podgroups["default/child"].reason
    )
