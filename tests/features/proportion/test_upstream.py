"""Volcano's own `proportion` plugin tests (pkg/scheduler/plugins/proportion/proportion_test.go
at ed72c7c8), translated: same nodes, pods, PodGroups, queues and switches; the same binds.

TestEnqueueAndAllocable:               TestAllocate:

  n1 2 cpu 2G   n2 2 cpu 2G              n1 2 cpu 4Gi   n2 2 cpu 4Gi
  ├ pod1 q1 1c 2G (running)              ├ p1 q1 2c 4Gi (running)
  └──────────── pod2 q2 2c 1G (running)  q1 priority 5, q2 priority 1, q3 priority 10
  q1 weight 1 capability 2c 2G           p2 (q2) and p3 (q3) pending, room for one
  q2 weight 1 capability 3c 3G
"""

from __future__ import annotations

from typing import Any

import pytest

from solver import SchedulerConf, schedule, verify
from solver.config import PluginConf, TierConf
from tests.builders import model, node, pod, podgroup, queue, volcano_job

ENGINES = ["greedy", "cpsat"]


def conf(actions: str = "enqueue, allocate", **switches: bool) -> SchedulerConf:
    return SchedulerConf(
        actions=tuple(a.strip() for a in actions.split(",")),
        tiers=(TierConf(plugins=[PluginConf.model_validate({"name": "proportion", **switches})]),),
    )


ALL = {}  # every function of the plugin on (upstream's `allEnable`)
ENQUEUEABLE = {"enabledAllocatable": False, "enabledOverused": False}
ALLOCATABLE = {"enabledOverused": False, "enableJobEnqueued": False}


def job(
    name: str, queue_name: str, phase: str, cpu: str, memory: str, on: str | None = None
) -> list[dict[str, Any]]:
    """util.BuildPodGroup + util.BuildPod: one pod, minMember 1, minResources = its request."""
    pg = podgroup(f"pg{name}", 1, "volcano", namespace="ns1")
    pg["spec"].update(queue=queue_name, minResources={"cpu": cpu, "memory": memory})
    pg["status"] = {"phase": phase}
    b = pod(f"pod{name}", "ns1").annotate("scheduling.k8s.io/group-name", f"pg{name}")
    b.requests(cpu=cpu, memory=memory)
    if on:
        b.on(on)
    return [pg, b.obj()]


NODES = [node(n).cpu("2").memory("2G").pods(10).obj() for n in ("n1", "n2")]
Q1 = queue("q1", capability={"cpu": "2", "memory": "2G"}, weight=1)
Q2 = queue("q2", capability={"cpu": "3", "memory": "3G"}, weight=1)
Q3_CLOSED = queue("q3", capability={"cpu": "3", "memory": "3G"}, weight=1, state="Closed")
P1 = job("1", "q1", "Running", "1", "2G", on="n1")
P2 = job("2", "q2", "Running", "2", "1G", on="n2")
P3 = job("3", "q1", "Pending", "1", "0G")
P4 = job("4", "q2", "Pending", "0", "1G")
P5 = job("5", "q1", "Pending", "1", "1G")
P6 = job("6", "q3", "Pending", "1", "1G")

CASES = [
    # name, objects, switches, actions, expected binds
    ("case0: memory exceed derserved, job only request cpu can be enqueued and allocated",
     [*P1, *P2, *P3, Q1, Q2], ALL, "enqueue, allocate", {"ns1/pod3": "n1"}),
    ("case1: cpu exceed derserved, job only request memory can be enqueued and allocated",
     [*P1, *P2, *P4, Q1, Q2], ALL, "enqueue, allocate", {"ns1/pod4": "n2"}),
    ("case2: exceed capacity, can not enqueue",
     [*P1, *P2, *P5, Q1, Q2], ENQUEUEABLE, "enqueue, allocate", {}),
    ("case3: exceed deserved, can not allocate",
     [*P1, *P2, *P5, Q1, Q2], ALLOCATABLE, "enqueue, allocate", {}),
    ("case4: queue with  non-open state, can not enqueue",
     [*P6, Q3_CLOSED], ENQUEUEABLE, "enqueue, allocate", {}),
]  # fmt: skip


def binds(
    objects: list[dict[str, Any]], c: SchedulerConf, engine: str, nodes: list[Any] = NODES
) -> dict[str, str]:
    cluster = model(*nodes, *objects)
    decision = schedule(cluster, c, engine=engine)
    assert verify(cluster, c, decision) == []
    return {k: p.node for k, p in decision.placements.items() if p.node}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("name", "objects", "switches", "actions", "expected"), CASES)
def test_enqueue_and_allocable(
    name: str,
    objects: list[dict[str, Any]],
    switches: dict[str, bool],
    actions: str,
    expected: dict[str, str],
    engine: str,
) -> None:
    assert binds(objects, conf(actions, **switches), engine) == expected, name


def test_reasons_name_the_gate_that_refused() -> None:
    """case2 refused at enqueue (realCapability), case3 at allocate (deserved), case4 by state."""
    cluster = model(*NODES, *P1, *P2, *P5, Q1, Q2)
    enq = schedule(cluster, conf(**ENQUEUEABLE), engine="greedy").podgroups["ns1/pg5"]
    assert not enq.enqueued
    assert enq.reason == (
        "not enqueued: queue q1: memory 1000000000 requested + 1953125Ki in use > "
        "realCapability 1953125Ki (over by 1000000000)"
    )
    alloc = schedule(cluster, conf(**ALLOCATABLE), engine="greedy").podgroups["ns1/pg5"]
    assert alloc.enqueued and not alloc.placed
    assert "queue q1: deserved share (proportion) used up for memory" in alloc.reason
    closed = schedule(model(*NODES, *P6, Q3_CLOSED), conf(**ENQUEUEABLE), engine="greedy")
    assert closed.podgroups["ns1/pg6"].reason == "not enqueued: queue q3 is Closed"


# TestAllocate: "case0: Pods are assigned according to the order of Queue Priority in which
# PGs are placed" (only proportion's queue order on; actions allocate, reclaim).
ALLOC_NODES = [node(n).cpu("2").memory("4Gi").pods(10).obj() for n in ("n1", "n2")]


def _prio_queue(name: str, priority: int) -> dict[str, Any]:
    return queue(name, capability={"cpu": "2", "memory": "4Gi"}, priority=priority, weight=1)


@pytest.mark.parametrize("engine", ENGINES)
def test_allocate_in_queue_priority_order(engine: str) -> None:
    objs = [
        *job("1", "q1", "Running", "2", "4Gi", on="n1"),
        *job("2", "q2", "Inqueue", "2", "4Gi"),
        *job("3", "q3", "Inqueue", "2", "4Gi"),
        _prio_queue("q1", 5),
        _prio_queue("q2", 1),
        _prio_queue("q3", 10),
    ]
    only_order = {"enabledAllocatable": False, "enabledOverused": False, "enableJobEnqueued": False}
    got = binds(objs, conf("allocate, reclaim", **only_order), engine, ALLOC_NODES)
    assert got == {"ns1/pod3": "n2"}


def test_overused_alone_stops_a_queue_at_its_share() -> None:
    # enabledAllocatable off, enabledOverused on: q holds 8 GPUs = its deserved share (its
    # capability caps it at 8), so it is overused and its new job waits; with both off the
    # job goes (24 GPUs, 16 free). Pods ask GPUs only, so every resource is at its share.
    nodes = [node(f"g{i}").cpu("8").gpu(8).obj() for i in range(3)]
    capped = queue("q", capability={"nvidia.com/gpu": "8"}, weight=1)
    held = volcano_job("held", "q", 8, cpu=0, bound_on="g0")
    more = volcano_job("more", "q", 4, cpu=0)
    del more[0]["spec"]["minResources"]
    cluster = model(*nodes, capped, *held, *more)
    off = {"enabledAllocatable": False}
    d = schedule(cluster, conf(**off), engine="greedy")
    assert verify(cluster, conf(**off), d) == []
    assert not d.podgroups["default/more"].placed
    both = {"enabledAllocatable": False, "enabledOverused": False}
    assert schedule(cluster, conf(**both), engine="greedy").podgroups["default/more"].placed
