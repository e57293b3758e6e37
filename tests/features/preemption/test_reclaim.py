"""Volcano's hierarchy-aware reclaim (capacity plugin, reference/volcano.md §3.5).

root
├── a   (deserved gpu 8)
│   ├── a1  deserved 4   <- job A (pending) reclaims
│   └── a2  deserved 0   job B running: 4 GPUs, over its deserved
└── c   deserved 0       job C running: 4 GPUs, over its deserved

one node with 8 GPUs, full (B + C). A needs 4: B goes (it shares parent `a` with a1).
"""

from __future__ import annotations

from typing import Any

from solver import SchedulerConf, schedule, solve, verify
from solver.config import PluginConf, TierConf
from tests.builders import model, node, queue, volcano_job

GPU = "nvidia.com/gpu"


def conf(level: int = 0, gang_rule: bool = False) -> SchedulerConf:
    """The capacity plugin's reclaim alone: the gang plugin's victim rule is off unless
    `gang_rule` (as in upstream's capacity tests; see `test_the_gang_rule_keeps_jobs_whole`)."""
    plugins = [
        PluginConf(name="predicates"),
        PluginConf.model_validate({"name": "gang", "enableReclaimable": gang_rule}),
        PluginConf(name="binpack"),
        PluginConf.model_validate(
            {
                "name": "capacity",
                "enableHierarchy": True,
                "arguments": {"ancestorReclaimLevel": level},
            }
        ),
    ]
    return SchedulerConf(
        actions=("enqueue", "allocate", "reclaim"), tiers=(TierConf(plugins=plugins),)
    )


def world(a2_guarantee: int = 0, a1_deserved: dict[str, int] | None = None) -> list[dict[str, Any]]:
    a2 = (
        queue("a2", "a", deserved={GPU: a2_guarantee}, guarantee={GPU: a2_guarantee})
        if a2_guarantee
        else queue("a2", "a")
    )
    objs: list[dict[str, Any]] = [
        node("n").cpu("64").gpu(8).obj(),
        queue("a", deserved={GPU: 8, "cpu": 64}),
        queue("a1", "a", deserved=a1_deserved or {GPU: 4, "cpu": 32}),
        a2,
        queue("c"),
    ]
    for name, q in (("b", "a2"), ("cj", "c")):
        job = volcano_job(name, q, 2, gpu=2, bound_on="n", priority=100)
        del job[0]["spec"]["minResources"]
        objs += job
    job = volcano_job("aj", "a1", 2, gpu=2, priority=1)
    del job[0]["spec"]["minResources"]
    return objs + job


def test_victims_in_the_sibling_queue_go_first() -> None:
    cluster = model(*world())
    d = solve(cluster, conf(), engine="greedy")
    assert sorted(v.pod for v in d.victims) == ["default/b-0", "default/b-1"]
    assert all("reclaiming for queue a1" in v.message for v in d.victims)
    assert {p.nominated for k, p in d.placements.items() if k.startswith("default/aj")} == {"n"}
    # reclaim may evict higher-priority pods of other queues: the verifier must agree
    assert verify(cluster, conf(), d) == []


def test_the_gang_rule_keeps_jobs_whole() -> None:
    # With the gang plugin's reclaim rule (a conf's default), B and C each run exactly their
    # minMember (2 pods): neither may lose a pod, so nothing is reclaimed and A waits.
    cluster = model(*world())
    d = solve(cluster, conf(gang_rule=True), engine="greedy")
    assert d.victims == () and not d.podgroups["default/aj"].placed
    assert "does not make room" in d.podgroups["default/aj"].reason
    assert verify(cluster, conf(gang_rule=True), d) == []


def test_guarantee_is_kept() -> None:
    # a2 guarantees its 4 GPUs: B cannot go, so C (the farther queue) is reclaimed instead.
    d = schedule(model(*world(a2_guarantee=4)), conf(), engine="greedy")
    assert sorted(v.pod for v in d.victims) == ["default/cj-0", "default/cj-1"]


def test_no_reclaim_beyond_the_reclaimers_deserved() -> None:
    d = schedule(model(*world(a1_deserved={GPU: 2, "cpu": 1})), conf(), engine="greedy")
    assert d.victims == ()
    assert (
        "reclaim: queue a1 is already at or over its deserved share"
        in d.podgroups["default/aj"].reason
    )


def test_without_the_reclaim_action_nothing_is_reclaimed() -> None:
    c = conf().model_copy(update={"actions": ("enqueue", "allocate")})
    assert schedule(model(*world()), c, engine="greedy").victims == ()


def test_ancestor_reclaim_level_lets_the_parent_share_count() -> None:
    # a1 deserves less than the job needs; with ancestorReclaimLevel 1 its parent a
    # (deserved 8 GPUs, 4 in use) decides, and a's share allows it.
    assert (
        schedule(model(*world(a1_deserved={GPU: 2, "cpu": 1})), conf(0), engine="greedy").victims
        == ()
    )
    d = schedule(model(*world(a1_deserved={GPU: 2, "cpu": 1})), conf(1), engine="greedy")
    assert d.victims
