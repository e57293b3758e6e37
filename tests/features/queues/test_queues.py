"""Hierarchical queues (Volcano capacity plugin): realCapability, usage, enqueue, allocate, order.

root (∞)
├── eng        capability gpu 24, guarantee gpu 12
│   ├── backend    capability gpu 20, guarantee 8
│   └── frontend   capability gpu 8, guarantee 4
└── research   capability gpu 8
"""

from __future__ import annotations

from typing import Any

import pytest

from solver import SchedulerConf, schedule, solve, verify
from solver.config import PluginConf, TierConf
from solver.quantity import UNLIMITED as INF
from tests.builders import model, node, pod, queue, queue_tree, volcano_job

GPU = "nvidia.com/gpu"
TREE = [
    queue("eng", capability={GPU: 24, "cpu": 100}, deserved={GPU: 16}, guarantee={GPU: 12}),
    queue("backend", "eng", capability={GPU: 20}, deserved={GPU: 10}, guarantee={GPU: 8}),
    queue("frontend", "eng", capability={GPU: 8}, deserved={GPU: 4}, guarantee={GPU: 4}),
    queue("research", capability={GPU: 8}),
]
NODES = [node(f"n{i}").cpu("64").gpu(8).obj() for i in range(6)]


def conf(hierarchy: bool = True, actions: str = "enqueue, allocate") -> SchedulerConf:
    plugins = [
        PluginConf(name="predicates"),
        PluginConf(name="gang"),
        PluginConf(name="binpack"),
        PluginConf.model_validate({"name": "capacity", "enableHierarchy": hierarchy}),
    ]
    return SchedulerConf(
        actions=tuple(a.strip() for a in actions.split(",")), tiers=(TierConf(plugins=plugins),)
    )


def test_real_capability_inherits_and_carves_guarantees() -> None:
    tree = queue_tree(model(*TREE, *NODES), conf())
    assert tree is not None and tree.broken is None
    q = tree.queues
    assert q["root"].implicit and q["root"].real(GPU) == INF
    assert q["eng"].real(GPU) == 24 and q["eng"].real("cpu") == 100_000
    # backend: min(24 − (8 + 4) + 8, 20) = 20; frontend: min(24 − 12 + 4, 8) = 8
    assert q["backend"].real(GPU) == 20 and q["frontend"].real(GPU) == 8
    # cpu unset on the children: inherited from eng (100 cores)
    assert q["backend"].capability["cpu"] == 100_000 and q["backend"].real("cpu") == 100_000
    assert q["research"].real(GPU) == 8 and q["research"].real("cpu") == INF
    assert q["eng"].ancestors == ["root"] and q["backend"].ancestors == ["root", "eng"]
    assert [c for c in q["root"].children] == ["eng", "research"]


def test_scalar_capability_copied_down_when_missing() -> None:
    tree = queue_tree(
        model(queue("p", capability={GPU: 6}), queue("c", "p", capability={"cpu": 4})), conf()
    )
    assert tree is not None
    assert tree.queues["c"].capability[GPU] == 6 and tree.queues["c"].real(GPU) == 6


def test_flat_mode_ignores_parents_and_caps_by_cluster() -> None:
    tree = queue_tree(model(*TREE, *NODES), conf(hierarchy=False))
    assert tree is not None
    assert tree.queues["backend"].parent == "root"
    assert tree.queues["research"].real("cpu") == 6 * 64_000  # the cluster's total


def test_usage_aggregates_to_every_ancestor() -> None:
    running = volcano_job("done", "backend", 3, gpu=2, bound_on="n0")
    tree = queue_tree(model(*TREE, *NODES, *running), conf())
    assert tree is not None
    assert [
        tree.queues[n].allocated.get(GPU, 0) for n in ("backend", "eng", "root", "frontend")
    ] == [6, 6, 6, 0]


def test_enqueue_blocked_by_an_ancestor_with_room_in_the_leaf() -> None:
    objs = [*TREE, *NODES, *volcano_job("a", "backend", 18), *volcano_job("w", "frontend", 8)]
    d = schedule(model(*objs), conf(), engine="greedy")
    assert d.podgroups["default/a"].enqueued and d.podgroups["default/a"].placed
    w = d.podgroups["default/w"]
    assert not w.enqueued and not w.placed
    assert (
        w.reason
        == "not enqueued: queue eng: nvidia.com/gpu 8 requested + 18 in use > realCapability 24 (over by 2)"
    )
    assert all(d.placements[f"default/w-{i}"].node is None for i in range(8))


def test_enqueue_only_with_the_action() -> None:
    objs = [*TREE, *NODES, *volcano_job("a", "backend", 18), *volcano_job("w", "frontend", 8)]
    d = schedule(model(*objs), conf(actions="allocate"), engine="greedy")
    # Without enqueue, the allocate gate still stops frontend's pods at eng's limit.
    assert d.podgroups["default/w"].enqueued and not d.podgroups["default/w"].placed
    assert "queue eng: insufficient nvidia.com/gpu quota" in d.podgroups["default/w"].reason


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_allocate_respects_every_level(engine: str) -> None:
    # Without minResources (so enqueue permits), two backend jobs and one frontend job want
    # 12 + 8 + 8 GPUs; eng holds 24: only two of the three gangs can go.
    objs = [*TREE, *NODES]
    for name, q, n in (("b1", "backend", 12), ("b2", "backend", 8), ("f1", "frontend", 8)):
        job = volcano_job(name, q, n)
        del job[0]["spec"]["minResources"]
        objs += job
    cluster = model(*objs)
    d = solve(cluster, conf(), engine=engine, workers=1)
    assert verify(cluster, conf(), d) == []
    assert d.tiers["placed_groups"] == 2
    used = sum(1 for p in d.placements.values() if p.node)
    assert used <= 24


def test_cpsat_shares_headroom_across_jobs_exactly() -> None:
    # research holds 8 GPUs: jobs of 5 and 3 both fit only together; greedy by name takes
    # a (6) first and then neither b (3) nor c (5) fits; CP-SAT places b and c.
    objs = [*TREE, *NODES]
    for name, n in (("a", 6), ("b", 3), ("c", 5)):
        job = volcano_job(name, "research", n)
        del job[0]["spec"]["minResources"]
        objs += job
    cluster = model(*objs)
    greedy = schedule(cluster, conf(), engine="greedy")
    exact = schedule(cluster, conf(), engine="cpsat", workers=1)
    assert greedy.tiers["placed_groups"] == 1 and exact.tiers["placed_groups"] == 2
    assert {k.split("-")[0] for k, p in exact.placements.items() if p.node} == {
        "default/b",
        "default/c",
    }


def test_job_in_a_non_leaf_queue_is_reported() -> None:
    d = schedule(model(*TREE, *NODES, *volcano_job("x", "eng", 2)), conf(), engine="greedy")
    assert (
        d.podgroups["default/x"].reason
        == "not enqueued: queue eng is not a leaf queue; only leaf queues run jobs"
    )


def test_job_in_a_missing_queue_and_closed_queue() -> None:
    # with Queue objects in the input, one it lacks does not exist (without any, it is a
    # dump that left them out: tests/kube/test_dumps.py)
    cluster = model(*NODES, queue("other"), *volcano_job("x", "ghost", 1))
    d = schedule(cluster, conf(), engine="greedy")
    assert d.podgroups["default/x"].reason == "not enqueued: queue ghost does not exist"
    closed = queue("shut", state="Closed")
    d = schedule(model(*NODES, closed, *volcano_job("y", "shut", 1)), conf(), engine="greedy")
    assert d.podgroups["default/y"].reason == "not enqueued: queue shut is Closed"


def test_default_queue_is_implicit_and_unlimited() -> None:
    pg_pods = volcano_job("v", "default", 2)
    d = schedule(model(*NODES, *pg_pods), conf(), engine="greedy")
    assert d.podgroups["default/v"].placed


def test_queue_order_share_at_deepest_common_ancestor() -> None:
    # backend already uses 10 of deserved 10 (share 1.0); frontend nothing (share 0): the
    # frontend job goes first and takes the only free node that both want.
    objs: list[dict[str, Any]] = [
        *TREE,
        node("busy").cpu("64").gpu(10).obj(),
        node("free").cpu("64").gpu(8).obj(),
    ]
    objs += volcano_job("old", "backend", 10, bound_on="busy")
    for name, q in (("a-back", "backend"), ("z-front", "frontend")):
        job = volcano_job(name, q, 8)
        del job[0]["spec"]["minResources"]
        objs += job
    d = schedule(model(*objs), conf(), engine="greedy")
    assert d.podgroups["default/z-front"].placed and not d.podgroups["default/a-back"].placed


def test_queue_priority_beats_share() -> None:
    objs: list[dict[str, Any]] = [
        queue("hi", priority=10),
        queue("lo"),
        node("only").cpu("64").gpu(8).obj(),
    ]
    for name, q in (("a", "lo"), ("b", "hi")):
        job = volcano_job(name, q, 8)
        del job[0]["spec"]["minResources"]
        objs += job
    d = schedule(model(*objs), conf(), engine="greedy")
    assert d.podgroups["default/b"].placed and not d.podgroups["default/a"].placed


def test_broken_tree_rejects_everything() -> None:
    objs = [queue("x", "nowhere"), *NODES, *volcano_job("j", "x", 1)]
    d = schedule(model(*objs), conf(), engine="greedy")
    assert "parent queue nowhere does not exist" in d.podgroups["default/j"].reason


def test_pods_annotation_puts_plain_pods_in_a_queue() -> None:
    p = pod("dep-0").requests(gpu=4).annotate("scheduling.volcano.sh/queue-name", "research").obj()
    p2 = pod("dep-1").requests(gpu=6).annotate("scheduling.volcano.sh/queue-name", "research").obj()
    d = schedule(model(*TREE, *NODES, p, p2), conf(), engine="greedy")
    assert sum(1 for x in d.placements.values() if x.node) == 1  # 4 + 6 > research's 8
