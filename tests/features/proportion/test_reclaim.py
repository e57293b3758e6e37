"""Volcano's reclaim action with `proportion` (pkg/scheduler/actions/reclaim/reclaim_test.go,
TestReclaim at ed72c7c8), translated: the same pods, PodGroups, queues and node; the same
victims. The upstream cases run the reclaim action alone; gangplan places first (nothing
fits) and then reclaims.

  n1 ── q1's pods (preemptable or not)   q2 / q3: the preemptor's queue
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from solver import SchedulerConf, schedule, verify
from solver.config import PluginConf, TierConf
from tests.builders import model, node, pod, podgroup, queue

CONF = SchedulerConf(
    actions=("reclaim",),
    tiers=(TierConf(plugins=[PluginConf(name=n) for n in ("gang", "proportion")]),),
)
PRIORITY = {"low-priority": 100, "mid-priority": 500, "high-priority": 1000}


def group(name: str, queue_name: str, min_member: int, phase: str, prio: str) -> dict[str, Any]:
    """util.BuildPodGroupWithPrio."""
    pg = podgroup(name, min_member, "volcano", namespace="c1")
    pg["spec"].update(queue=queue_name, priorityClassName=prio)
    pg["status"] = {"phase": phase}
    return pg


def running(name: str, pg: str, preemptable: bool | None = None, cpu: str = "1") -> dict[str, Any]:
    b = pod(name, "c1").annotate("scheduling.k8s.io/group-name", pg).requests(cpu=cpu, memory="1G")
    if preemptable is not None:
        b.label("volcano.sh/preemptable", "true" if preemptable else "false")
    return b.on("n1").obj()


def pending(name: str, pg: str, cpu: str = "1", never: bool = False) -> dict[str, Any]:
    b = pod(name, "c1").annotate("scheduling.k8s.io/group-name", pg).requests(cpu=cpu, memory="1G")
    body = b.obj()
    if never:
        body["spec"]["preemptionPolicy"] = "Never"
    return body


def priority_classes() -> list[dict[str, Any]]:
    return [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
         "metadata": {"name": n}, "value": v}
        for n, v in PRIORITY.items()
    ]  # fmt: skip


def n1(cpu: str, memory: str, pods: int = 10) -> dict[str, Any]:
    return node("n1").cpu(cpu).memory(memory).pods(pods).obj()


CASES = [
    ("Two Queue with one Queue overusing resource, should reclaim",
     [group("pg1", "q1", 1, "Inqueue", "low-priority"),
      group("pg2", "q2", 1, "Inqueue", "high-priority"),
      running("preemptee1", "pg1", False), running("preemptee2", "pg1", True),
      running("preemptee3", "pg1", False), pending("preemptor1", "pg2"),
      n1("3", "3Gi"), queue("q1", weight=1), queue("q2", weight=1)],
     ["c1/preemptee2"]),
    ("sort reclaimees when reclaiming from overusing queue",
     [group("pg1", "q1", 1, "Inqueue", "mid-priority"),
      group("pg2", "q2", 1, "Inqueue", "low-priority"),
      group("pg3", "q3", 1, "Inqueue", "high-priority"),
      running("preemptee1-1", "pg1", True), running("preemptee1-2", "pg1", True),
      running("preemptee2-1", "pg2", True), running("preemptee2-2", "pg2", False),
      pending("preemptor1", "pg3"),
      n1("4", "4Gi"), queue("q1", weight=1), queue("q2", weight=1), queue("q3", weight=1)],
     ["c1/preemptee2-1"]),
    ("sort reclaimees when reclaiming from overusing queues with different queue priority",
     [group("pg1", "q1", 1, "Inqueue", "mid-priority"),
      group("pg2", "q2", 1, "Inqueue", "mid-priority"),
      group("pg3", "q3", 1, "Inqueue", "mid-priority"),
      running("preemptee1-1", "pg1", True), running("preemptee1-2", "pg1", False),
      running("preemptee2-1", "pg2", True), running("preemptee2-2", "pg2", False),
      pending("preemptor1", "pg3"),
      n1("4", "4Gi"), queue("q1", priority=5), queue("q2", priority=10),
      queue("q3", priority=1)],
     ["c1/preemptee1-1"]),
    ("can not reclaim resources when task preemption policy is never",
     [group("pg1", "q1", 0, "Inqueue", "low-priority"),
      group("pg2", "q2", 0, "Inqueue", "high-priority"),
      running("preemptee1", "pg1", True), pending("preemptor1", "pg2", never=True),
      n1("1", "1Gi", pods=1), queue("q1", weight=5), queue("q2", weight=10)],
     []),
    ("can not reclaim resources when queue is not open(proportion plugin)",
     [group("pg1", "q1", 1, "Running", "low-priority"),
      group("pg2", "q2", 1, "Inqueue", "high-priority"),
      running("preemptee1", "pg1", False), running("preemptee2", "pg1", True),
      running("preemptee3", "pg1", False), pending("preemptor1", "pg2"),
      n1("3", "3Gi"), queue("q1", weight=1), queue("q2", weight=1, state="Closed")],
     []),
    ("Node available resources should be included in reclaimed resources",
     [group("pg1", "q1", 0, "Running", "mid-priority"),
      group("pg2", "q2", 0, "Running", "mid-priority"),
      group("pg3", "q3", 1, "Inqueue", "mid-priority"),
      running("preemptee1-1", "pg1", True), running("preemptee2-1", "pg2", True),
      pending("preemptor1", "pg3", cpu="2"),
      n1("10", "2Gi"), queue("q1", priority=1), queue("q2", priority=2), queue("q3", weight=3)],
     ["c1/preemptee1-1"]),
]  # fmt: skip


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
@pytest.mark.parametrize(("name", "objects", "evicted"), CASES, ids=[c[0] for c in CASES])
def test_reclaim(name: str, objects: list[dict[str, Any]], evicted: list[str], engine: str) -> None:
    cluster = model(*priority_classes(), *objects)
    decision = schedule(cluster, CONF, engine=engine, workers=1)
    assert verify(cluster, CONF, decision) == []
    assert sorted(v.pod for v in decision.victims) == evicted, name
    for v in decision.victims:
        assert v.cause == "reclaim"
    if evicted:
        assert decision.placements["c1/preemptor1"].nominated == "n1"  # waits for its victims


def test_verify_refuses_a_victim_of_a_queue_within_its_share() -> None:
    # The first case's plan, checked against the same cluster where q1 is guaranteed its
    # 3 cpus and 3Gi: q1 then deserves all it holds, so nothing of it may be reclaimed; and
    # a victim of the reclaiming queue itself is never a reclaim.
    _, objects, _ = CASES[0]
    cluster = model(*priority_classes(), *objects)
    decision = schedule(cluster, CONF, engine="greedy")
    kept = queue("q1", weight=1, guarantee={"cpu": "3", "memory": "3Gi"})
    heavy = [kept if o.get("kind") == "Queue" and o["metadata"]["name"] == "q1" else o
             for o in objects]  # fmt: skip
    problems = verify(model(*priority_classes(), *heavy), CONF, decision)
    assert "queue q1: 1 pod(s) reclaimed although it was within its deserved share" in problems
    own = replace(decision, victims=tuple(replace(v, queue="q1") for v in decision.victims))
    assert "c1/preemptee2: reclaimed for queue q1 from its own queue" in verify(cluster, CONF, own)
