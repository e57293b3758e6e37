"""Preemption in the cluster (`--preempt`): a high-priority gang evicts its way in through
`pods/eviction` (each victim first marked `DisruptionTarget`), its members get
`status.nominatedNodeName` and are bound only once the victims are gone; a
PodDisruptionBudget's `429` stops the plan and the next cycle plans around the pod it
kept; a gang that even evicting everything cannot place evicts nothing.

    n1 [low-1: 4 GPUs]  n2 [low-2: 4 GPUs]  n3 [low-3: 4 GPUs]     (4 GPUs a node)
    high: a gang of 2 pods x 4 GPUs, priority 1000 (the low pods: 0)
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import yaml

from clients.kubefake import load
from solver.config import SchedulerConf
from solver.kube import expand_workloads, read_sources
from tests.clients.scheduler.conftest import Harness, gang, node, pod, wait_until

RACK_EXAMPLE = Path(__file__).resolve().parents[3] / "examples/preemption/rack-preemption.yaml"

Obj = dict[str, Any]


def _low(name: str, node_name: str, **labels: str) -> Obj:
    p = pod(name, 4, scheduler="default-scheduler", node_name=node_name, labels=labels)
    p["spec"]["priority"] = 0
    return p


def _high(size: int = 2) -> list[Obj]:
    objs = gang("high", size, gpus=4)
    for o in objs[1:]:
        o["spec"]["priority"] = 1000
    return objs


def _budget(name: str, allowed: int, **labels: str) -> Obj:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": labels}},
        "status": {"disruptionsAllowed": allowed},
    }


def _evictions(cluster: Harness) -> list[tuple[str, int]]:
    return [(p, code) for p, code, _ in cluster.api.store.evictions]


def test_a_high_priority_gang_evicts_its_way_in_and_binds_once_the_victims_are_gone(
    cluster: Harness,
) -> None:
    cluster.api.store.termination_seconds = 1.0  # victims terminate for a second
    cluster.create(node("n1"), node("n2"), _low("low-1", "n1"), _low("low-2", "n2"))
    cluster.scheduler(preempt=True)
    cluster.create(_high())
    wait_until(lambda: len(_evictions(cluster)) == 2, what="two evictions")
    assert sorted(_evictions(cluster)) == [("default/low-1", 201), ("default/low-2", 201)]
    for name in ("low-1", "low-2"):  # marked first, as kube-scheduler marks its victims
        pods = cluster.pods()
        if name in pods:
            conditions = {c["type"]: c for c in pods[name]["status"].get("conditions") or []}
            assert conditions["DisruptionTarget"]["reason"] == "PreemptionByScheduler"
            assert "preempt" in conditions["DisruptionTarget"]["message"]
    wait_until(
        lambda: all(cluster.pods()[f"high-{i}"]["status"].get("nominatedNodeName") for i in (0, 1)),
        what="the members nominated",
    )
    bound = wait_until(
        lambda: (
            {n: v for n, v in cluster.bound().items() if n.startswith("high")}
            if len([n for n in cluster.bound() if n.startswith("high")]) == 2
            else None
        ),
        what="the gang bound",
    )
    assert sorted(bound.values()) == ["n1", "n2"]
    store = cluster.api.store
    gone = max(store.deleted_at["default/low-1"], store.deleted_at["default/low-2"])
    binds = [t for p, _, code, t in store.binds if p.startswith("default/high") and code == 201]
    assert min(binds) >= gone - 0.05  # terminating victims held their room until gone


def test_a_disruption_budget_stops_the_plan_and_the_next_one_plans_around_it(
    cluster: Harness,
) -> None:
    cluster.create(
        node("n1"),
        node("n2"),
        node("n3"),
        _low("low-1", "n1", app="db"),
        _low("low-2", "n2"),
        _low("low-3", "n3"),
        _budget("db", 0, app="db"),
    )
    service = cluster.scheduler(preempt=True)
    cluster.create(_high())
    wait_until(
        lambda: len([n for n in cluster.bound() if n.startswith("high")]) == 2,
        timeout=15,
        what="the gang bound around the protected pod",
    )
    assert "low-1" in cluster.pods()  # the budget kept it
    refused = [p for p, code in _evictions(cluster) if code == 429]
    assert refused == ["default/low-1"]  # asked once; the next plan left it out
    assert {p for p, code in _evictions(cluster) if code == 201} == {
        "default/low-2",
        "default/low-3",
    }
    assert set(cluster.bound().items()) >= {("high-0", "n2"), ("high-1", "n3")} or set(
        cluster.bound().items()
    ) >= {("high-0", "n3"), ("high-1", "n2")}
    assert service.metrics.evictions.labels(result="refused")._value.get() == 1


def test_nothing_is_evicted_for_a_gang_that_evicting_everything_cannot_place(
    cluster: Harness,
) -> None:
    cluster.create(node("n1"), node("n2"), _low("low-1", "n1"), _low("low-2", "n2"))
    service = cluster.scheduler(preempt=True)
    cluster.create(_high(3))  # 12 GPUs on 8
    wait_until(lambda: cluster.condition("high-0"), what="the gang's reason")
    time.sleep(0.5)
    assert _evictions(cluster) == []
    assert not any(p["status"].get("nominatedNodeName") for p in cluster.pods().values())
    assert service.metrics.evictions.labels(result="evicted")._value.get() == 0


def test_dry_run_says_whom_it_would_evict_and_writes_nothing(cluster: Harness) -> None:
    cluster.create(node("n1"), node("n2"), _low("low-1", "n1"), _low("low-2", "n2"))
    service = cluster.scheduler(preempt=True, dry_run=True)
    cluster.create(_high())
    entry = wait_until(lambda: service.cycle.shadow.get("default/high"), what="a decision")
    assert sorted(entry["evict"]) == ["default/low-1", "default/low-2"]
    assert sorted(entry["nominated"].values()) == ["n1", "n2"]
    assert _evictions(cluster) == [] and cluster.api.store.counts.get("PATCH", 0) == 0


def test_a_kueue_job_that_needs_one_rack_evicts_inside_the_cheaper_rack(
    cluster: Harness,
) -> None:
    # examples/preemption/rack-preemption.yaml, read from the cluster: the Job's pods (as
    # its controller makes them) must run inside one rack; the front end evicts rack r2's
    # four pods and binds the Job there, never freeing GPUs in both racks (Kueue #5243).
    expanded, _ = expand_workloads(read_sources([str(RACK_EXAMPLE)]))
    load(cluster.api.store, [raw.body for raw in expanded])
    names = {
        raw.body["spec"].get("schedulerName", "default-scheduler")
        for raw in expanded
        if raw.body.get("kind") == "Pod" and not raw.body["spec"].get("nodeName")
    }
    cluster.scheduler(preempt=True, scheduler_names=frozenset(names))
    bound = wait_until(
        lambda: (
            {n: v for n, v in cluster.bound().items() if n.startswith("train")}
            if len([n for n in cluster.bound() if n.startswith("train")]) == 4
            else None
        ),
        timeout=15,
        what="the Job bound",
    )
    assert sorted(bound.values()) == ["x3", "x3", "x4", "x4"]
    assert sorted(p for p, code in _evictions(cluster) if code == 201) == [
        f"batch/batch-{n}-{i}" for n in ("x3", "x4") for i in (0, 1)
    ]


def test_a_gang_whose_room_needs_moves_waits_and_says_why(cluster: Harness) -> None:
    """The conf lists KAI's `consolidation` action: the answer moves a running pod to make
    room, but the front end makes no moves, so the gang is not bound onto the node the move
    would vacate (it would overfill it); its PodScheduled condition says why."""
    conf = yaml.safe_dump(
        {**SchedulerConf.default().to_dict(), "actions": "enqueue, allocate, consolidation"}
    )
    running = [_low(f"run-{i}", f"n{i}") for i in (1, 2)]
    for p in running:
        p["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "2"
        p["spec"]["priority"] = 50
    cluster.create(node("n1"), node("n2"), *running)
    cluster.scheduler(scheduler_conf=conf)
    cluster.create(pod("wide", 3))
    condition = wait_until(
        lambda: (c := cluster.condition("wide")) and "consolidation" in c.get("message", "") and c,
        what="the reason",
    )
    assert "does not make yet" in condition["message"], condition
    assert "wide" not in cluster.bound() and not cluster.successful_binds()
