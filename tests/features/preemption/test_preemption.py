"""Job-level preemption (Koordinator §4): eligibility, cost, reprieve, all-or-nothing, topology.

node-1 [4 GPU]   node-2 [4 GPU]     running low-priority pods, a high-priority gang arrives
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver import SchedulerConf, load_manifests, schedule, verify
from solver.config import load_conf
from solver.decision import Decision
from solver.model import ClusterModel
from tests.builders import BLOCK, SPINE, gather, model, node, pod, podgroup, spine_block_topology

JOB = "scheduling.koordinator.sh/questioned-object-key"


def gpu_nodes(*names: str, gpus: int = 4) -> list[dict[str, Any]]:
    return [node(n).cpu("32").gpu(gpus).obj() for n in names]


def running(
    name: str, node_name: str, gpu: int, priority: int, job: str | None = None, **labels: str
) -> dict[str, Any]:
    b = pod(name, "batch").requests(cpu="1", gpu=gpu).priority(priority).on(node_name)
    if job:
        b.label(JOB, job)
    for k, v in labels.items():
        b.label(k.replace("__", "/").replace("_", "-"), v)
    return b.obj()


def hungry(
    size: int, gpu: int = 1, priority: int = 1000, name: str = "hi", **extra: Any
) -> list[dict[str, Any]]:
    pods = []
    for i in range(size):
        b = pod(f"{name}-{i}").group(name).requests(cpu="1", gpu=gpu).priority(priority)
        body = b.obj()
        body["spec"].update(extra)
        pods.append(body)
    return [podgroup(name, size), *pods]


def run(*objects: dict[str, Any], engine: str = "greedy") -> Decision:
    d = schedule(model(*objects), engine=engine, workers=1, preempt=True)
    return d


def victims(d: Decision) -> list[str]:
    return sorted(v.pod.split("/")[1] for v in d.victims)


def test_off_without_the_flag_or_action() -> None:
    objs = [*gpu_nodes("node-1"), running("low", "node-1", 4, 1), *hungry(2)]
    assert schedule(model(*objs), engine="greedy").victims == ()
    conf = SchedulerConf.default().model_copy(
        update={"actions": ("enqueue", "allocate", "preempt")}
    )
    assert len(schedule(model(*objs), conf, engine="greedy").victims) == 1


def test_nominates_every_member_and_writes_the_disruption_target() -> None:
    d = run(*gpu_nodes("node-1"), running("low", "node-1", 4, 1), *hungry(2))
    assert victims(d) == ["low"]
    assert {p.nominated for p in d.placements.values()} == {"node-1"}
    assert all(p.node is None for p in d.placements.values())
    assert d.victims[0].message == (
        "default-scheduler: preempting to accommodate higher priority pods, "
        "preemptor: default/hi, triggerpod: default/hi-0"
    )
    patches = d.to_dict()["patches"]
    assert {"pod": "default/hi-0", "status": {"nominatedNodeName": "node-1"}} in patches
    assert any(p["pod"] == "batch/low" and p["delete"] for p in patches)


@pytest.mark.parametrize(
    "label",
    [
        {"scheduling.koordinator.sh/disable-preemptible": "true"},
        {"quota.scheduling.koordinator.sh/preemptible": "false"},
        {"volcano.sh/preemptable": "false"},
    ],
    ids=["disable-preemptible", "quota-preemptible", "volcano-preemptable"],
)
def test_protected_pods_are_never_victims(label: dict[str, str]) -> None:
    protected = pod("keep", "batch").requests(gpu=4).priority(1).on("node-1")
    for k, v in label.items():
        protected.label(k, v)
    d = run(*gpu_nodes("node-1"), protected.obj(), *hungry(2))
    assert d.victims == ()
    assert "no potential victims" in d.podgroups["default/hi"].reason


def test_only_lower_priority_pods_are_victims() -> None:
    d = run(*gpu_nodes("node-1"), running("peer", "node-1", 4, 1000), *hungry(2))
    assert d.victims == ()


def test_preemption_policy_never() -> None:
    d = run(
        *gpu_nodes("node-1"), running("low", "node-1", 4, 1), *hungry(2, preemptionPolicy="Never")
    )
    assert d.victims == ()
    assert "not eligible due to preemptionPolicy=Never." in d.podgroups["default/hi"].reason


def test_terminating_victim_on_the_nominated_node_blocks_a_new_preemption() -> None:
    going = running("going", "node-1", 2, 1)
    going["metadata"]["deletionTimestamp"] = "2026-11-22T00:00:00Z"
    going["status"]["conditions"] = [
        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
    ]
    members = hungry(2, gpu=2)
    for p in members[1:]:
        p["status"] = {"nominatedNodeName": "node-1"}
    d = run(*gpu_nodes("node-1"), going, running("low", "node-1", 2, 1), *members)
    assert d.victims == ()
    assert (
        "not eligible due to terminating pod on the nominated node."
        in d.podgroups["default/hi"].reason
    )


#   node-1: job a (3 pods, priority 10)   node-2: job b (priority 10) + job c (priority 20)
#   needing 3 GPUs: node-1 evicts one job (cost rank 0), node-2 two jobs (0 + 1): fewer jobs win
def test_cost_counts_jobs_not_pods() -> None:
    objs = [
        *gpu_nodes("node-1", "node-2", gpus=3),
        *[running(f"a-{i}", "node-1", 1, 10, job="a") for i in range(3)],
        running("b-0", "node-2", 2, 10, job="b"),
        running("c-0", "node-2", 1, 20, job="c"),
        *hungry(3),
    ]
    d = run(*objs)
    assert victims(d) == ["a-0", "a-1", "a-2"]
    assert d.tiers["preemption_cost"] == 0 and d.tiers["evicted_pods"] == 3


def test_reprieve_keeps_the_higher_priority_victims() -> None:
    objs = [
        *gpu_nodes("node-1"),
        running("v-high", "node-1", 2, 15, job="x"),
        running("v-low", "node-1", 2, 10, job="y"),
        *hungry(2),
    ]
    d = run(*objs)
    assert victims(d) == ["v-low"]


def test_all_or_nothing_when_eviction_cannot_make_room() -> None:
    objs = [
        *gpu_nodes("node-1"),
        running("low", "node-1", 2, 1),
        running("peer", "node-1", 2, 1000),
        *hungry(3),
    ]
    d = run(*objs)
    assert d.victims == ()
    assert all(p.nominated is None for p in d.placements.values())
    assert (
        "after evicting every eligible lower-priority pod, 2 of 3 required pod(s) fit"
        in d.podgroups["default/hi"].reason
    )


def test_a_victim_gang_cut_below_min_member_goes_whole() -> None:
    victim_gang = [podgroup("vg", 2, namespace="batch")]
    for i, n in enumerate(("node-1", "node-2")):
        victim_gang.append(
            pod(f"vg-{i}", "batch").group("vg").requests(gpu=4).priority(1).on(n).obj()
        )
    d = run(*gpu_nodes("node-1", "node-2"), *victim_gang, *hungry(4))
    assert victims(d) == ["vg-0", "vg-1"]  # only node-1 was needed; vg cannot run on one pod


# Koordinator §5: spines s1{b1{node-1,node-8}, b2{node-2,node-7}}, s2{b3{node-3,node-6}, b4{node-4,node-5}},
# one 16-cpu slot per node, 4 pods MustGather SpineLayer.
FAKE = {
    "s1": {"b1": ["node-1", "node-8"], "b2": ["node-2", "node-7"]},
    "s2": {"b3": ["node-3", "node-6"], "b4": ["node-4", "node-5"]},
}


def tree() -> list[dict[str, Any]]:
    return [spine_block_topology()] + [
        node(n).cpu("16").label(SPINE, s).label(BLOCK, b).obj()
        for s, blocks in FAKE.items()
        for b, names in blocks.items()
        for n in names
    ]


def spine_job() -> list[dict[str, Any]]:
    pods = [
        pod(f"pod-{i}").group("job").requests(cpu="16").priority(1000).obj() for i in range(1, 5)
    ]
    return [podgroup("job", 4, **gather(("SpineLayer", "MustGather"))), *pods]


def test_must_gather_spine_preemption_succeeds() -> None:
    low = [
        pod("existing-pod-1", "batch").requests(cpu="16").priority(1).on("node-1").obj(),
        pod("existing-pod-4", "batch").requests(cpu="16").priority(1).on("node-4").obj(),
    ]
    d = schedule(model(*tree(), *low, *spine_job()), engine="greedy", preempt=True)
    assert victims(d) == ["existing-pod-1"]
    assert {p.nominated for p in d.placements.values()} == {"node-1", "node-8", "node-2", "node-7"}


def test_must_gather_spine_preemption_not_helpful() -> None:
    objs = [
        pod("eq-1", "batch").requests(cpu="16").priority(1000).on("node-1").obj(),
        pod("eq-4", "batch").requests(cpu="16").priority(1000).on("node-4").obj(),
        pod("low-2", "batch").requests(cpu="16").priority(1).on("node-2").obj(),
    ]
    d = schedule(model(*tree(), *objs, *spine_job()), engine="greedy", preempt=True)
    assert d.victims == ()
    assert "preemption not helpful" in d.podgroups["default/job"].reason


# Koordinator `PlanNodes` scores every dry-run node `nodeScore = -cost` and the gather solver
# compares the domains' summed score after ExistingPodNum and the OfferSlot chain
# (koordinator.md §4.4; upstream network_topology_solver_test.go
# TestTopologyNodeLessFunc_ScoreFallback). The cluster is workflow_test
# TestPodGroupManager_NetworkTopology "schedule failure, preempt success" with the two
# victims at different priorities: after the dry run both spines offer 4 slots, so the cost
# decides — s2 (its victim is at the lowest victim priority: rank 0) beats s1 (rank 1),
# where the name alone picked s1.
@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_dry_run_cost_breaks_ties_between_topology_candidates(engine: str) -> None:
    low = [
        pod("existing-pod-1", "batch").requests(cpu="16").priority(2).on("node-1").obj(),
        pod("existing-pod-4", "batch").requests(cpu="16").priority(1).on("node-4").obj(),
    ]
    d = schedule(model(*tree(), *low, *spine_job()), engine=engine, preempt=True, workers=1)
    assert victims(d) == ["existing-pod-4"]
    assert d.tiers["preemption_cost"] == 0
    assert {k.split("/")[1]: p.nominated for k, p in d.placements.items()} == {
        "pod-1": "node-3", "pod-2": "node-6", "pod-3": "node-4", "pod-4": "node-5",
    }  # fmt: skip


# The same score orders the children inside the chosen domain (`distributeOfferSlot` sorts
# them with topologyNodeLessFunc(lowerOfferSlot=false): slots ↓, then score ↓, then name).
# 3 pods MustGather SpineLayer, s2 full of equal-priority pods: only s1 can hold them, and no
# block can. b1 (victim at rank 1 on node-1) and b2 (victim at rank 0 on node-2) offer 2
# slots each: b2 is filled first, then the cheaper node of b1 (node-8, no victim), so only
# the rank-0 victim goes; by name alone b1 came first and both victims went.
@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_dry_run_cost_orders_the_children_of_the_chosen_domain(engine: str) -> None:
    objs = [
        pod("v-b1", "batch").requests(cpu="16").priority(2).on("node-1").obj(),
        pod("v-b2", "batch").requests(cpu="16").priority(1).on("node-2").obj(),
        *[
            pod(f"peer-{n}", "batch").requests(cpu="16").priority(1000).on(n).obj()
            for n in ("node-3", "node-6", "node-4", "node-5")
        ],
    ]
    pods = [
        pod(f"pod-{i}").group("job").requests(cpu="16").priority(1000).obj() for i in range(1, 4)
    ]
    job = [podgroup("job", 3, **gather(("SpineLayer", "MustGather"))), *pods]
    d = schedule(model(*tree(), *objs, *job), engine=engine, preempt=True, workers=1)
    assert victims(d) == ["v-b2"]
    assert {k.split("/")[1]: p.nominated for k, p in d.placements.items()} == {
        "pod-1": "node-2", "pod-2": "node-7", "pod-3": "node-8",
    }  # fmt: skip


def test_example_runs() -> None:
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "examples" / "preemption" / "job-preemption.yaml"
    greedy = schedule(load_manifests(str(path)), engine="greedy", preempt=True)
    # Koordinator's greedy fills node-1 (cost 1 = batch-a 0 + batch-b 1): 3 pods evicted.
    assert victims(greedy) == ["batch-a-0", "batch-a-1", "batch-b-0"]
    assert greedy.tiers["preemption_cost"] == 1
    # CP-SAT finds the same cost with fewer victims: batch-b's two pods, 2 members per node.
    exact = schedule(load_manifests(str(path)), engine="auto", preempt=True, workers=1)
    assert victims(exact) == ["batch-b-0", "batch-b-1"]
    assert exact.tiers["preemption_cost"] == 1 and exact.tiers["evicted_pods"] == 2
    assert (
        sorted(p.nominated or "" for p in exact.placements.values())
        == ["node-1"] * 2 + ["node-2"] * 2
    )
    assert load_conf(None).actions == ("enqueue", "allocate")


# ----------------------------------------------------------------------------- property


@st.composite
def preemption_worlds(draw: st.DrawFn) -> ClusterModel:
    names = [f"n{i}" for i in range(draw(st.integers(1, 4)))]
    objects: list[dict[str, Any]] = [node(n).cpu("16").gpu(4).obj() for n in names]
    for j in range(draw(st.integers(1, 5))):
        size = draw(st.integers(1, 3))
        prio = draw(st.integers(0, 3))
        job_pods = []
        for i in range(size):
            b = (
                pod(f"j{j}-{i}", "batch")
                .requests(cpu="1", gpu=draw(st.integers(1, 2)))
                .priority(prio)
                .on(draw(st.sampled_from(names)))
            )
            b.label(JOB, f"j{j}")
            if draw(st.integers(0, 6)) == 0:
                b.label("volcano.sh/preemptable", "false")
            job_pods.append(b.obj())
        objects += job_pods
    size = draw(st.integers(1, 4))
    objects += hungry(size, gpu=draw(st.integers(1, 3)), priority=draw(st.integers(2, 10)))
    return model(*objects)


def _check(cluster: ClusterModel) -> None:
    conf = SchedulerConf.default()
    greedy = schedule(cluster, conf, engine="greedy", preempt=True)
    exact = schedule(cluster, conf, engine="cpsat", preempt=True, workers=1, time_limit=10)
    for d in (greedy, exact):
        assert verify(cluster, conf, d) == []  # victims gone, nominated pods fit
        top = max(
            (cluster.pod_by_key[k].priority for k, p in d.placements.items() if p.nominated),
            default=None,
        )
        for v in d.victims:
            assert top is not None and cluster.pod_by_key[v.pod].priority < top
    if greedy.victims and exact.victims:
        assert exact.tiers["preemption_cost"] <= greedy.tiers["preemption_cost"]
    assert bool(greedy.victims) == bool(exact.victims) or exact.tiers.get("placed_pods", 0) > 0


@given(preemption_worlds())
@settings(max_examples=40)
def test_preemption_decisions_verify_and_cpsat_is_never_costlier(cluster: ClusterModel) -> None:
    _check(cluster)


@pytest.mark.slow
@given(preemption_worlds())
@settings(max_examples=400)
def test_preemption_decisions_verify_long(cluster: ClusterModel) -> None:
    _check(cluster)


def test_cpsat_nominates_only_on_nodes_its_model_has_for_a_type() -> None:
    """Found by the preemption-change property (tests/test_changes.py): the CP-SAT plan read
    a type's count on every node before skipping the nodes its model left out for that type
    (KeyError, the call failed). n0 empty, n1 three 1-GPU pods (priority 0, 10 and 200), n2
    one 2-GPU pod (priority 10); a gang of a 4-GPU and a 3-GPU pod at priority 100."""
    cluster = model(
        *[node(f"n{i}").cpu("32").gpu(4).obj() for i in range(3)],
        pod("r1-0").requests(gpu=1).priority(0).on("n1").obj(),
        pod("r1-1").requests(gpu=1).priority(10).on("n1").obj(),
        pod("r1-2").requests(gpu=1).priority(200).on("n1").obj(),
        pod("r2-0").requests(gpu=2).priority(10).on("n2").obj(),
        podgroup("g", 2),
        pod("g-0").requests(gpu=4).priority(100).group("g").obj(),
        pod("g-1").requests(gpu=3).priority(100).group("g").obj(),
    )
    for engine in ("auto", "cpsat"):
        d = schedule(cluster, SchedulerConf.default(), engine=engine, workers=1, preempt=True)
        nominated = {k: p.nominated for k, p in d.placements.items() if p.nominated}
        assert sorted(nominated.values()) == ["n0", "n2"] or d.placed, (engine, d.placements)
        assert not d.stats.get("verify_fallback")
