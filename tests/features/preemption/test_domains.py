"""Preemption inside one domain, for every topology dialect (issue 41; Kueue #5243).

A 2-pod gang of 4-GPU pods that must run inside one rack, on a full cluster:

          rack r1                          rack r2
    r1-a [4 GPU]   r1-b [4 GPU]      r2-a [4 GPU]   r2-b [4 GPU]
    2 + 2 GPU      2 + 2 GPU         2 + 2 GPU      2 + 2 GPU     running pods, priority below

Evicting the cheapest pods anywhere frees r1-a and r2-a (two racks: the gang still cannot
run, Kueue #5243). Preemption must free one rack's worth inside one rack, the cheaper one,
or evict nothing — in every dialect: the Workload API, Godel, Kueue, Volcano HyperNode,
Koordinator and KAI-Scheduler.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from clients.cli import app
from solver import SchedulerConf, schedule
from solver.decision import Decision
from tests.builders import gather, model, network_topology, node, pod, podgroup, workload_podgroup
from tests.features.topology.hypernode.fixtures import FOUR, TWO_TIERS, hypernode, vc_group
from tests.features.topology.hypernode.fixtures import conf as hypernode_conf
from tests.features.topology.kueue.helpers import POOL, REQUIRED, SLICE_LEVEL, SLICE_SIZE
from tests.features.topology.kueue.helpers import topology as kueue_topology

RACK = "cloud.com/topology-rack"
BLOCK = "cloud.com/topology-block"
HOST = "kubernetes.io/hostname"
LAYERS = "kueue.x-k8s.io/podset-slice-required-topology-constraints"
NODES = ("r1-a", "r1-b", "r2-a", "r2-b")
Objects = list[dict[str, Any]]


def nodes() -> Objects:
    out = []
    for name in NODES:
        b = node(name).cpu("32").gpu(4).label(RACK, name[:2]).label(BLOCK, "b1").label(HOST, name)
        for k, v in POOL.items():
            b = b.label(k, v)
        out.append(b.obj())
    return out


def running(priorities: dict[str, int]) -> Objects:
    """Two 2-GPU pods on each node at its priority."""
    return [
        pod(f"{kind}-{n}", "batch").requests(cpu="1", gpu=2).priority(p).on(n).obj()
        for n, p in priorities.items()
        for kind in ("x", "y")
    ]


def members(name: str, **extra: Any) -> Objects:
    pods = []
    for i in range(2):
        b = pod(f"{name}-{i}", extra.get("namespace", "default"))
        b = b.requests(cpu="1", gpu=4).priority(1000)
        for k, v in extra.get("labels", {}).items():
            b = b.label(k, v)
        for k, v in extra.get("annotations", {}).items():
            b = b.annotate(k, v)
        body = b.obj()
        body["spec"].update(extra.get("spec", {}))
        pods.append(body)
    return pods


def workload_api() -> Objects:
    return [
        workload_podgroup("job", 2, topology=RACK, priority=1000),
        *members("job", spec={"schedulingGroup": {"podGroupName": "job"}}),
    ]


def godel() -> Objects:
    pg = podgroup("job", 2, dialect="godel")
    pg["spec"]["affinity"] = {"podGroupAffinity": {"required": [{"topologyKey": RACK}]}}
    return [pg, *members("job", annotations={"godel.bytedance.com/pod-group-name": "job"})]


def kueue() -> Objects:
    return [
        *kueue_topology((BLOCK, RACK, HOST)),
        podgroup("job", 2),
        *members(
            "job",
            labels={"scheduling.x-k8s.io/pod-group": "job"},
            annotations={REQUIRED: RACK},
        ),
    ]


def hypernodes() -> Objects:
    return [
        hypernode("r1", 1, ("r1-a", "r1-b")),
        hypernode("r2", 1, ("r2-a", "r2-b")),
        hypernode("b1", 2, children=("r1", "r2")),
        vc_group("job", 2, tier=1, namespace="default"),
        *members("job", annotations={"scheduling.k8s.io/group-name": "job"}),
    ]


def koordinator() -> Objects:
    return [
        network_topology(("RackLayer", None, [RACK]), ("NodeTopologyLayer", "RackLayer", [])),
        podgroup("job", 2, **gather(("RackLayer", "MustGather"))),
        *members("job", labels={"pod-group.scheduling.sigs.k8s.io": "job"}),
    ]


def kai() -> Objects:
    topology = {
        "apiVersion": "kai.scheduler/v1alpha1",
        "kind": "Topology",
        "metadata": {"name": "cluster-topology"},
        "spec": {"levels": [{"nodeLabel": BLOCK}, {"nodeLabel": RACK}]},
    }
    pg = {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "job", "namespace": "default"},
        "spec": {
            "minMember": 2,
            "topologyConstraint": {"topology": "cluster-topology", "requiredTopologyLevel": RACK},
        },
    }
    return [topology, pg, *members("job", annotations={"pod-group-name": "job"})]


def kai_sub_group() -> Objects:
    """The same rack, asked by a KAI sub-group (the PodGroup itself has no level)."""
    topology, pg, *pods = kai()
    pg["spec"] = {
        "minMember": 2,
        "subGroups": [
            {
                "name": "workers",
                "minMember": 2,
                "topologyConstraint": {
                    "topology": "cluster-topology",
                    "requiredTopologyLevel": RACK,
                },
            }
        ],
    }
    for p in pods:
        p["metadata"].setdefault("labels", {})["kai.scheduler/subgroup-name"] = "workers"
    return [topology, pg, *pods]


DIALECTS = {
    "workload-api": workload_api,
    "godel": godel,
    "kueue": kueue,
    "hypernode": hypernodes,
    "koordinator": koordinator,
    "kai": kai,
    "kai-sub-group": kai_sub_group,
}


def run(objects: Objects, engine: str) -> Decision:
    return schedule(
        model(*objects), SchedulerConf.default(), engine=engine, workers=1, seed=0, preempt=True
    )


def victims(d: Decision) -> list[str]:
    return sorted(v.pod.split("/")[1] for v in d.victims)


def nominated(d: Decision) -> set[str]:
    return {p.nominated or "" for k, p in d.placements.items() if k.startswith("default/job")}


@pytest.mark.parametrize("engine", ["greedy", "auto"])
@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_the_freed_room_lands_in_one_rack_the_cheaper_one(dialect: str, engine: str) -> None:
    # r2 holds only priority-1 pods; r1-b's are priority 2: rack r2 is cheaper. Unconstrained,
    # the cheapest nodes are r1-a and r2-a (two racks).
    low = running({"r1-a": 1, "r1-b": 2, "r2-a": 1, "r2-b": 1})
    d = run([*nodes(), *low, *DIALECTS[dialect]()], engine)
    assert nominated(d) == {"r2-a", "r2-b"}, d.podgroups["default/job"].reason
    assert victims(d) == ["x-r2-a", "x-r2-b", "y-r2-a", "y-r2-b"]


@pytest.mark.parametrize("engine", ["greedy", "auto"])
@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_no_rack_can_be_freed_so_nothing_is_evicted(dialect: str, engine: str) -> None:
    # r1-b and r2-b run pods at the gang's own priority: 8 GPUs can be freed, 4 per rack —
    # Kueue #5243's "freed on the wrong nodes" is not an answer; nothing is evicted.
    low = running({"r1-a": 1, "r1-b": 1000, "r2-a": 1, "r2-b": 1000})
    d = run([*nodes(), *low, *DIALECTS[dialect]()], engine)
    assert d.victims == ()
    assert nominated(d) == {""}
    reason = d.podgroups["default/job"].reason
    if dialect == "koordinator":  # Koordinator's own words
        assert "preemption not helpful: no candidate topology nodes" in reason
    else:
        assert "no domain holds its 2 pod(s) under its rule" in reason
        assert reason.endswith("holds 1")  # a rack frees one node's 4 GPUs: one pod


@pytest.mark.parametrize("engine", ["greedy", "auto"])
def test_kueue_slices_are_kept_whole_in_every_rack(engine: str) -> None:
    #   block b1:  rack r1: r1-0 [3 GPU]     rack r2: r2-0 [3 GPU]     (each: 3 x 1-GPU pods)
    # 4 pods of 1 GPU inside the block, in slices of 2 per rack. The cheapest node alone
    # (r1-0, priority 1) takes 3, leaving 1 for r2: an odd count in each rack. Slices take
    # 2 on each node, reprieving one pod on each.
    objects = [
        *racked_nodes([1, 1], 3),
        *(
            pod(f"low-{n}-{i}", "batch").requests(cpu="1", gpu=1).priority(p).on(n).obj()
            for n, p in (("r1-0", 1), ("r2-0", 2))
            for i in range(3)
        ),
        *kueue_topology((BLOCK, RACK, HOST)),
        podgroup("job", 4),
        *[
            pod(f"job-{i}")
            .requests(cpu="1", gpu=1)
            .priority(1000)
            .label("scheduling.x-k8s.io/pod-group", "job")
            .annotate(REQUIRED, BLOCK)
            .annotate(SLICE_LEVEL, RACK)
            .annotate(SLICE_SIZE, "2")
            .obj()
            for i in range(4)
        ],
    ]
    d = run(objects, engine)
    assert sorted(nominated(d)) == ["r1-0", "r2-0"]
    per_node = [p.nominated for k, p in d.placements.items() if k.startswith("default/job")]
    assert sorted(per_node) == ["r1-0", "r1-0", "r2-0", "r2-0"]
    assert len(d.victims) == 4


def test_kueue_slices_without_a_required_level_are_refused_in_words() -> None:
    objects = [
        *nodes(),
        *running({"r1-a": 1, "r1-b": 1, "r2-a": 1, "r2-b": 1}),
        *kueue_topology((BLOCK, RACK, HOST)),
        podgroup("job", 2),
        *members(
            "job",
            labels={"scheduling.x-k8s.io/pod-group": "job"},
            annotations={SLICE_LEVEL: RACK, SLICE_SIZE: "2"},
        ),
    ]
    d = run(objects, "greedy")
    assert d.victims == ()
    assert "preemption: not planned for Kueue pod set main: topology slices without" in (
        d.podgroups["default/job"].reason
    )


# ----------------------------------------------------------------------------- property


def racked_nodes(shape: list[int], gpus: int) -> Objects:
    """shape[r] nodes in rack r<r+1>, named r<r+1>-<i>."""
    out = []
    for r, count in enumerate(shape, 1):
        for i in range(count):
            name = f"r{r}-{i}"
            b = node(name).cpu("64").gpu(gpus).label(RACK, f"r{r}").label(BLOCK, "b1")
            b = b.label(HOST, name)
            for k, v in POOL.items():
                b = b.label(k, v)
            out.append(b.obj())
    return out


def hypernodes_of(shape: list[int]) -> Objects:
    racks = [
        hypernode(f"r{r}", 1, tuple(f"r{r}-{i}" for i in range(count)))
        for r, count in enumerate(shape, 1)
    ]
    top = hypernode("b1", 2, children=tuple(f"r{r}" for r in range(1, len(shape) + 1)))
    return [*racks, top]


@st.composite
def worlds(draw: st.DrawFn) -> tuple[str, Objects, int]:
    """A random racked cluster, full of running pods, and a gang in one dialect."""
    shape = draw(st.lists(st.integers(1, 3), min_size=2, max_size=4))
    gpus = draw(st.sampled_from([4, 8]))
    objects = racked_nodes(shape, gpus)
    k = 0
    for r, count in enumerate(shape, 1):
        for i in range(count):
            left = gpus
            while left > 0:
                size = min(left, draw(st.sampled_from([1, 2, 4])))
                priority = draw(st.sampled_from([1, 2, 3, 1000]))
                objects.append(
                    pod(f"p{k}", "batch")
                    .requests(cpu="1", gpu=size)
                    .priority(priority)
                    .on(f"r{r}-{i}")
                    .obj()
                )
                k += 1
                left -= size
    dialect = draw(st.sampled_from(sorted(DIALECTS)))
    size = draw(st.integers(1, 3))
    gpu = draw(st.sampled_from([1, 2, 4]))
    gang = DIALECTS[dialect]()
    if dialect == "hypernode":  # the racks of this cluster, not the fixed four nodes'
        gang = [*hypernodes_of(shape), *gang[3:]]
    pods = [o for o in gang if o["kind"] == "Pod"]
    keep = [o for o in gang if o["kind"] != "Pod"]
    for o in keep:  # the gang's size
        spec = o.get("spec", {})
        if "minMember" in spec:
            spec["minMember"] = size
        if "gang" in spec.get("schedulingPolicy", {}):
            spec["schedulingPolicy"]["gang"]["minCount"] = size
    template = pods[0]
    members_of = []
    for i in range(size):
        body = json.loads(json.dumps(template))
        body["metadata"]["name"] = f"job-{i}"
        body["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = str(gpu)
        members_of.append(body)
    return dialect, [*objects, *keep, *members_of], size


@settings(max_examples=60, deadline=None)
@given(world=worlds())
def test_every_plan_places_the_gang_in_one_rack_and_cpsat_is_never_costlier(
    world: tuple[str, Objects, int],
) -> None:
    _, objects, size = world
    greedy = run(objects, "greedy")  # schedule verifies every Decision it returns
    exact = run(objects, "auto")
    for d in (greedy, exact):
        assert "verify_fallback" not in d.stats
        chosen = [n for n in (p.nominated for p in d.placements.values()) if n]
        assert len({n.split("-")[0] for n in chosen}) <= 1
        assert bool(d.victims) == bool(chosen)
        if chosen:
            assert len(chosen) == size  # the whole gang, or nothing evicted
    if greedy.victims and exact.victims:
        assert (exact.tiers["preemption_cost"], len(exact.victims)) <= (
            greedy.tiers["preemption_cost"],
            len(greedy.victims),
        )
    for d in (greedy, exact):  # applied: with the victims gone, the gang is placed
        if d.victims:
            gone = {v.pod for v in d.victims}
            left = [
                o
                for o in objects
                if f"{o['metadata'].get('namespace')}/{o['metadata']['name']}" not in gone
            ]
            after = schedule(model(*left), SchedulerConf.default(), engine="auto", workers=1)
            placed = [p for k, p in after.placements.items() if k.startswith("default/job")]
            assert all(p.node for p in placed) and len(placed) == size


# ----------------------------------------------------------------------------- Kueue's own
# TestScheduleForTASPreemption (pkg/scheduler/scheduler_tas_test.go), a one-level topology
# (kubernetes.io/hostname) over a TAS flavor's pool; an admitted workload is a running pod
# at its priority on its assigned node, the waiting one a gang of its pod set.
#
#     x1 [5 cpu]   (y1 [5 cpu])


def kueue_case(
    nodes_cpu: dict[str, str],
    admitted: dict[str, tuple[str, int, str]],  # name -> (node, priority, cpu)
    waiting: tuple[int, str, str, int],  # (pods, cpu each, required|preferred, priority)
) -> Objects:
    objects: Objects = [*kueue_topology((HOST,))]
    for name, cpu in nodes_cpu.items():
        b = node(name).cpu(cpu).memory("5Gi").pods(10).label(HOST, name)
        for k, v in POOL.items():
            b = b.label(k, v)
        objects.append(b.obj())
    for name, (on, priority, cpu) in admitted.items():
        objects.append(pod(name, "batch").requests(cpu=cpu).priority(priority).on(on).obj())
    count, cpu, mode, priority = waiting
    key = REQUIRED if mode == "required" else "kueue.x-k8s.io/podset-preferred-topology"
    objects.append(podgroup("foo", count))
    for i in range(count):
        objects.append(
            pod(f"foo-{i}")
            .requests(cpu=cpu)
            .priority(priority)
            .label("scheduling.x-k8s.io/pod-group", "foo")
            .annotate(key, HOST)
            .obj()
        )
    return objects


KUEUE_CASES = {
    "only low priority workload is preempted": (
        {"x1": "5"},
        {"low-priority-admitted": ("x1", 1, "5")},
        (1, "2", "preferred", 3),
        ["low-priority-admitted"],
    ),
    "low priority workload is preempted, mid-priority workload survives": (
        {"x1": "5"},
        {"mid-priority-admitted": ("x1", 2, "2"), "low-priority-admitted": ("x1", 1, "2")},
        (1, "2", "preferred", 3),
        ["low-priority-admitted"],
    ),
    "low priority workload is preempted even though there is enough capacity, but fragmented": (
        {"x1": "5", "y1": "5"},
        {"mid-priority-admitted": ("x1", 2, "4"), "low-priority-admitted": ("y1", 1, "4")},
        (2, "1", "required", 3),
        ["low-priority-admitted"],
    ),
    # upstream's case also holds back a lower-priority workload behind the waiting one
    # (Kueue's queue order, not preemption): only the preemption half is translated.
    "workload with equal priority awaits for other workloads to complete": (
        {"x1": "5"},
        {"mid-priority-admitted": ("x1", 2, "4")},
        (2, "1", "required", 2),
        [],
    ),
}


@pytest.mark.parametrize("engine", ["greedy", "auto"])
@pytest.mark.parametrize("case", sorted(KUEUE_CASES))
def test_kueue_tas_preemption_cases(case: str, engine: str) -> None:
    nodes_cpu, admitted, waiting, expected = KUEUE_CASES[case]
    d = run(kueue_case(nodes_cpu, admitted, waiting), engine)
    assert victims(d) == expected
    if expected:
        assert len({p.nominated for p in d.placements.values()}) == 1


def test_the_rack_example_frees_the_cheaper_rack_on_the_command_line() -> None:
    example = Path(__file__).resolve().parents[3] / "examples/preemption/rack-preemption.yaml"
    for engine in ("greedy", "auto"):
        result = CliRunner().invoke(
            app, ["schedule", "-f", str(example), "--preempt", "--engine", engine, "-o", "json"]
        )
        assert result.exit_code == 0, result.stderr
        data = json.loads(result.stdout)
        assert {p["nominated"] for p in data["placements"].values()} == {"x3", "x4"}
        assert sorted(v["pod"] for v in data["victims"]) == [
            f"batch/batch-{n}-{i}" for n in ("x3", "x4") for i in (0, 1)
        ]
    table = CliRunner().invoke(app, ["schedule", "-f", str(example), "--preempt", "-o", "table"])
    assert "Victims" in table.stdout and "nominated 4  evicted 4" in table.stdout


def _sub_group_job(min_member: int, tier: int | None) -> Objects:
    """Four 2-cpu nodes in two tier-1 leaves, each running a low-priority 2-cpu pod; a job
    (tier 2) of two 2-cpu pods in one sub-group (subGroupSize 2), its own tier `tier`."""
    # the two cheapest nodes (priority 1) are in different leaves; leaf s1 is the cheaper
    priorities = {"s0-n1": 1, "s0-n2": 3, "s1-n3": 1, "s1-n4": 2}
    busy = [
        pod(f"low-{n}", "c1").requests(cpu="2", memory="1G").priority(p).on(n).obj()
        for n, p in priorities.items()
    ]
    pg = vc_group("pg1", min_member, "hard", 2)
    policy: dict[str, Any] = {
        "name": "p", "matchLabelKeys": ["pipeline"], "subGroupSize": 2, "minSubGroups": 1,
    }  # fmt: skip
    if tier is not None:
        policy["networkTopology"] = {"mode": "hard", "highestTierAllowed": tier}
    pg["spec"]["subGroupPolicy"] = [policy]
    members = [
        pod(f"p{i}", "c1")
        .annotate("scheduling.k8s.io/group-name", "pg1")
        .requests(cpu="2", memory="1G")
        .priority(1000)
        .label("pipeline", "a")
        .obj()
        for i in range(2)
    ]
    return [*FOUR, *TWO_TIERS, *busy, pg, *members]


@pytest.mark.parametrize("engine", ["greedy", "auto"])
def test_a_hypernode_sub_group_frees_one_leaf_of_its_own(engine: str) -> None:
    """The job needs both pods: its sub-group's own tier-1 leaf is a rule inside the job's
    tier-2 one (`nested_plan`), so the two evictions land in one leaf (verified)."""
    d = schedule(
        model(*_sub_group_job(2, 1)), hypernode_conf(), engine=engine, preempt=True, workers=1
    )
    nodes = sorted(p.nominated or "" for k, p in d.placements.items() if k.startswith("c1/p"))
    assert nodes == ["s1-n3", "s1-n4"], d.podgroups["c1/pg1"].reason
    assert sorted(v.pod for v in d.victims) == ["c1/low-s1-n3", "c1/low-s1-n4"]


def test_a_hypernode_sub_group_policy_of_an_elastic_job_is_refused_in_words() -> None:
    """minMember 1 of 2 pods: a sub-group is placed whole or not at all, which the planner
    cannot say rule by rule: not planned, said."""
    d = schedule(model(*_sub_group_job(1, None)), hypernode_conf(), engine="greedy", preempt=True)
    assert d.victims == ()
    assert "preemption: not planned for a HyperNode subGroupPolicy" in d.podgroups["c1/pg1"].reason


def kai_sub_group_in_block() -> Objects:
    """`kai_sub_group`, its PodGroup also requiring one block (the sub-group's rack inside)."""
    topology, pg, *pods = kai_sub_group()
    pg["spec"]["topologyConstraint"] = {
        "topology": "cluster-topology",
        "requiredTopologyLevel": BLOCK,
    }
    return [topology, pg, *pods]


@pytest.mark.parametrize("engine", ["greedy", "auto"])
def test_nested_kai_sub_groups_free_one_rack_inside_their_block(engine: str) -> None:
    """A sub-group's rack inside its PodGroup's block: the outer rule's domains are tried
    with the inner rule cut to each (`nested_plan`); rack r2 is freed, as above."""
    low = running({"r1-a": 1, "r1-b": 2, "r2-a": 1, "r2-b": 1})
    d = run([*nodes(), *low, *kai_sub_group_in_block()], engine)
    assert nominated(d) == {"r2-a", "r2-b"}, d.podgroups["default/job"].reason
    assert victims(d) == ["x-r2-a", "x-r2-b", "y-r2-a", "y-r2-b"]


@pytest.mark.parametrize("engine", ["greedy", "auto"])
def test_nested_kai_sub_groups_with_no_rack_to_free_evict_nothing(engine: str) -> None:
    low = running({"r1-a": 1, "r1-b": 1000, "r2-a": 1, "r2-b": 1000})
    d = run([*nodes(), *low, *kai_sub_group_in_block()], engine)
    assert d.victims == ()
    assert "no domain holds its 2 pod(s) under its rule" in d.podgroups["default/job"].reason


@pytest.mark.parametrize("engine", ["greedy", "auto"])
def test_two_kai_sub_groups_each_free_a_rack_of_their_own(engine: str) -> None:
    """Two sub-groups of 2 pods, each in a rack of its own, inside the PodGroup's block:
    both racks are freed, each sub-group nominated inside one (and `verify` agrees)."""
    topology, pg, *pods = kai_sub_group()
    rack = {"topology": "cluster-topology", "requiredTopologyLevel": RACK}
    pg["spec"] = {
        "minMember": 4,
        "topologyConstraint": {"topology": "cluster-topology", "requiredTopologyLevel": BLOCK},
        "subGroups": [
            {"name": "a", "minMember": 2, "topologyConstraint": rack},
            {"name": "b", "minMember": 2, "topologyConstraint": rack},
        ],
    }
    extra = members("job-b", annotations={"pod-group-name": "job"})
    for p, leaf in zip([*pods, *extra], "aabb", strict=True):
        p["metadata"]["labels"]["kai.scheduler/subgroup-name"] = leaf
        p["metadata"].setdefault("annotations", {})["pod-group-name"] = "job"
    low = running({"r1-a": 1, "r1-b": 2, "r2-a": 1, "r2-b": 1})
    d = run([*nodes(), *low, topology, pg, *pods, *extra], engine)
    by_leaf = {
        leaf: {p.nominated[:2] for k, p in d.placements.items() if p.nominated and k in keys}
        for leaf, keys in (
            ("a", {f"default/{p['metadata']['name']}" for p in pods}),
            ("b", {f"default/{p['metadata']['name']}" for p in extra}),
        )
    }
    assert by_leaf in ({"a": {"r1"}, "b": {"r2"}}, {"a": {"r2"}, "b": {"r1"}}), by_leaf
    assert len(d.victims) == 8


def _layered(racks: list[int], gpus: int, low: dict[str, int]) -> Objects:
    """Racked nodes with `gpus` 1-GPU pods of priority `low[node]` each, and a Kueue job of
    4 one-GPU pods inside the block, in rack slices of 4 made of host slices of 2."""
    layers = json.dumps([{"topology": RACK, "size": 4}, {"topology": HOST, "size": 2}])
    return [
        *racked_nodes(racks, gpus),
        *(
            pod(f"low-{n}-{i}", "batch").requests(cpu="1", gpu=1).priority(p).on(n).obj()
            for n, p in low.items()
            for i in range(gpus)
        ),
        *kueue_topology((BLOCK, RACK, HOST)),
        podgroup("job", 4),
        *[
            pod(f"job-{i}").requests(cpu="1", gpu=1).priority(1000)
            .label("scheduling.x-k8s.io/pod-group", "job")
            .annotate(REQUIRED, BLOCK).annotate(LAYERS, layers).obj()
            for i in range(4)
        ],
    ]  # fmt: skip


def _per_node(d: Decision) -> list[str]:
    return sorted(p.nominated or "" for k, p in d.placements.items() if k.startswith("default/job"))


@pytest.mark.parametrize("engine", ["greedy", "auto"])
def test_kueue_multi_layer_slices_free_one_rack_in_whole_host_slices(engine: str) -> None:
    #   block b1:  rack r1: r1-0 [2 GPU: p1 p1]  r1-1 [2 GPU: p2 p2]
    #              rack r2: r2-0 [2 GPU: p1 p1]  r2-1 [2 GPU: p3 p3]
    # Unconstrained, the cheapest room is r1-0 and r2-0 (two racks); the layers need one
    # whole rack, and r1 (p1, p1, p2, p2) is cheaper than r2 (p1, p1, p3, p3). Refused in
    # words before the layers were a rule of their own.
    d = run(_layered([2, 2], 2, {"r1-0": 1, "r1-1": 2, "r2-0": 1, "r2-1": 3}), engine)
    assert _per_node(d) == ["r1-0", "r1-0", "r1-1", "r1-1"], d.podgroups["default/job"].reason
    assert victims(d) == ["low-r1-0-0", "low-r1-0-1", "low-r1-1-0", "low-r1-1-1"]
    assert not d.stats.get("verify_fallback")


@pytest.mark.parametrize("engine", ["greedy", "auto"])
def test_kueue_host_slices_inside_rack_slices_split_two_and_two(engine: str) -> None:
    #   block b1:  rack r1: r1-0 [3 GPU: p1 p1 p1]  r1-1 [3 GPU: p2 p2 p2]
    # The three cheap pods of r1-0 and one of r1-1 would be 3 + 1; the host layer asks 2 + 2.
    d = run(_layered([2], 3, {"r1-0": 1, "r1-1": 2}), engine)
    assert _per_node(d) == ["r1-0", "r1-0", "r1-1", "r1-1"], d.podgroups["default/job"].reason
    assert len(d.victims) == 4 and not d.stats.get("verify_fallback")
