"""Kueue's admission between ClusterQueues of a cohort, translated from upstream's tests and
run end to end (manifests -> `schedule` on both engines, every Decision verified).

Source: kubernetes-sigs/kueue `pkg/scheduler/scheduler_test.go` (`TestSchedule`), each case
named as upstream names it, on upstream's ClusterQueues (`eng-alpha`, `eng-beta` in cohort
`eng`; `lend-a`, `lend-b` in cohort `lend`). Upstream runs one scheduling cycle; gangplan
runs Kueue's cycles until nothing changes (one call decides the whole batch), so where a
workload upstream leaves "no longer fits" for the next cycle, the case gives what that
next cycle admits, and says so. ResourceFlavors without node labels: every node is of
every flavor, one node large enough for everything (placement never decides here).

                 eng                      lend
           ┌──────┴──────┐          ┌──────┴──────┐
       eng-alpha      eng-beta    lend-a        lend-b
    on-demand 50+50  on-demand 50+10   default 3 (lend 2)  default 2 (lend 2)
    spot 100+0       spot 0+100
                     model-a gpu 20+0
"""

from __future__ import annotations

from typing import Any

import pytest

from solver import SchedulerConf, schedule
from solver.kube import load_objects
from solver.schedule import snapshot_of
from tests.builders import raw

Objects = list[dict[str, Any]]
ENGINES = ["greedy", "cpsat"]
KUEUE = "kueue.x-k8s.io/v1beta2"


def flavor(name: str) -> dict[str, Any]:
    return {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": name}}


def cq(name: str, cohort: str | None, *groups: dict[str, list], strategy: str = "BestEffortFIFO"):
    """A ClusterQueue; each group maps a flavor to [(resource, nominal, borrow, lend)]."""
    spec: dict[str, Any] = {"queueingStrategy": strategy, "resourceGroups": []}
    if cohort:
        spec["cohortName"] = cohort
    for group in groups:
        covered = [r for r, *_ in next(iter(group.values()))]
        spec["resourceGroups"].append({
            "coveredResources": covered,
            "flavors": [
                {"name": f, "resources": [
                    {"name": r, "nominalQuota": n,
                     **({"borrowingLimit": b} if b is not None else {}),
                     **({"lendingLimit": lend} if lend is not None else {})}
                    for r, n, b, lend in quotas
                ]}
                for f, quotas in group.items()
            ],
        })  # fmt: skip
    return {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def lq(name: str, namespace: str, cluster_queue: str) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE, "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": cluster_queue},
    }  # fmt: skip


def workload(
    name: str, namespace: str, queue: str, count: int, created: int, **requests: str
) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE, "kind": "Workload",
        "metadata": {"name": name, "namespace": namespace,
                     "creationTimestamp": f"2026-01-01T00:00:{created:02d}Z"},
        "spec": {"queueName": queue, "podSets": [{"name": "main", "count": count, "template": {
            "spec": {"containers": [{"name": "c", "image": "x",
                                     "resources": {"requests": requests}}]}}}]},
    }  # fmt: skip


def running(name: str, namespace: str, queue: str, **requests: str) -> dict[str, Any]:
    """A pod of an admitted workload (upstream's `ReserveQuotaAt`), bound to the node."""
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace,
                     "labels": {"kueue.x-k8s.io/queue-name": queue}},
        "spec": {"nodeName": "big", "containers": [{"name": "c", "image": "x",
                                                    "resources": {"requests": requests}}]},
        "status": {"phase": "Running"},
    }  # fmt: skip


N = None
BASE: Objects = [
    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "big"},
     "status": {"allocatable": {"cpu": "10000", "memory": "10Ti", "example.com/gpu": "1000",
                                "pods": "100000"}}},
    *(flavor(f) for f in ("default", "on-demand", "spot", "model-a")),
    cq("eng-alpha", "eng", {"on-demand": [("cpu", "50", "50", N)], "spot": [("cpu", "100", "0", N)]}),
    cq("eng-beta", "eng", {"on-demand": [("cpu", "50", "10", N)], "spot": [("cpu", "0", "100", N)]},
       {"model-a": [("example.com/gpu", "20", "0", N)]}),
    cq("lend-a", "lend", {"default": [("cpu", "3", N, "2")]}),
    cq("lend-b", "lend", {"default": [("cpu", "2", N, "2")]}),
    lq("main", "eng-alpha", "eng-alpha"), lq("main", "eng-beta", "eng-beta"),
    lq("lend-a-queue", "lend", "lend-a"), lq("lend-b-queue", "lend", "lend-b"),
]  # fmt: skip


def run(objects: Objects, engine: str, conf: SchedulerConf | None = None) -> dict[str, Any]:
    decision = schedule(
        snapshot_of(load_objects(raw(*BASE, *objects))), conf or SchedulerConf.default(),
        engine=engine, workers=1, seed=0,
    )  # fmt: skip
    return {
        "placed": sorted(k for k, g in decision.podgroups.items() if g.placed),
        "reasons": {k: g.reason for k, g in decision.podgroups.items() if not g.placed},
        "queues": {q.queue: dict(q.placed) for q in decision.queues},
    }


@pytest.mark.parametrize("engine", ENGINES)
def test_admit_in_same_cohort_with_no_borrowing(engine: str) -> None:
    got = run([workload("new", "eng-alpha", "main", 40, 1, cpu="1"),
               workload("new", "eng-beta", "main", 40, 2, cpu="1")], engine)  # fmt: skip
    assert got["placed"] == ["eng-alpha/new", "eng-beta/new"]
    assert got["queues"]["eng-alpha"] == {"on-demand/cpu": 40000}
    assert got["queues"]["eng-beta"] == {"on-demand/cpu": 40000}


@pytest.mark.parametrize("engine", ENGINES)
def test_can_borrow_if_cohort_was_assigned_and_will_not_result_in_overadmission(
    engine: str,
) -> None:
    got = run([workload("new", "eng-alpha", "main", 45, 1, cpu="1"),
               workload("new", "eng-beta", "main", 55, 2, cpu="1")], engine)  # fmt: skip
    assert got["placed"] == ["eng-alpha/new", "eng-beta/new"]
    assert got["queues"]["eng-beta"] == {"on-demand/cpu": 55000}


@pytest.mark.parametrize("engine", ENGINES)
def test_cannot_borrow_if_cohort_was_assigned_and_would_result_in_overadmission(
    engine: str,
) -> None:
    """Upstream's cycle admits eng-alpha (within its nominal quota, so first) and leaves
    eng-beta's 56 CPUs "no longer fits" (on-demand holds 55 after alpha's 45); the next
    cycle finds on-demand short by 1 and spot free (its borrowing limit 100): spot."""
    got = run([workload("new", "eng-alpha", "main", 45, 1, cpu="1"),
               workload("new", "eng-beta", "main", 56, 2, cpu="1")], engine)  # fmt: skip
    assert got["placed"] == ["eng-alpha/new", "eng-beta/new"]
    assert got["queues"]["eng-alpha"] == {"on-demand/cpu": 45000}
    assert got["queues"]["eng-beta"] == {"spot/cpu": 56000}


@pytest.mark.parametrize("engine", ENGINES)
def test_workload_exceeds_lending_limit_when_borrow_in_cohort(engine: str) -> None:
    got = run([running("a", "lend", "lend-b-queue", cpu="2"),
               workload("b", "lend", "lend-b-queue", 1, 1, cpu="3")], engine)  # fmt: skip
    assert got["placed"] == []
    assert got["reasons"]["lend/b"].endswith(
        "couldn't assign flavors to pod set: insufficient unused quota for cpu in flavor "
        "default, 1 more needed"
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_hierarchical_cohort_respects_lending_limit_when_borrowing(engine: str) -> None:
    """ROOT > CHILD > {cq-lender (10, lends 3), cq-borrower (5, borrows ≤ 10, uses 5)}:
    4 more CPUs for the borrower, only 3 lendable."""
    objects = [
        {"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": "root"}},
        {"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": "child"},
         "spec": {"parentName": "root"}},
        cq("cq-lender", "child", {"on-demand": [("cpu", "10", N, "3")]}),
        cq("cq-borrower", "child", {"on-demand": [("cpu", "5", "10", N)]}),
        lq("lq-borrower", "eng-alpha", "cq-borrower"),
        running("wl-existing", "eng-alpha", "lq-borrower", cpu="5"),
        workload("wl-pending", "eng-alpha", "lq-borrower", 1, 1, cpu="4"),
    ]  # fmt: skip
    got = run(objects, engine)
    assert got["placed"] == []
    assert (
        "insufficient unused quota for cpu in flavor on-demand, 1 more needed"
        in (got["reasons"]["eng-alpha/wl-pending"])
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_cannot_borrow_resource_not_listed_in_cluster_queue(engine: str) -> None:
    got = run([workload("new", "eng-alpha", "main", 1, 1, **{"example.com/gpu": "1"})], engine)
    assert got["placed"] == []
    assert (
        "resource example.com/gpu unavailable in ClusterQueue eng-alpha"
        in (got["reasons"]["eng-alpha/new"])
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_strict_fifo_head_blocks_the_queue(engine: str) -> None:
    """gangplan's own: under StrictFIFO a head that does not fit keeps the workloads behind
    it waiting (upstream's `sales` queue semantics); BestEffortFIFO lets them pass."""
    for strategy, placed in (("StrictFIFO", []), ("BestEffortFIFO", ["s/small"])):
        objects = [
            cq("sales", N, {"default": [("cpu", "50", N, N)]}, strategy=strategy),
            lq("main", "s", "sales"),
            workload("big", "s", "main", 60, 1, cpu="1"),
            workload("small", "s", "main", 1, 2, cpu="1"),
        ]
        got = run(objects, engine)
        assert got["placed"] == placed, strategy
        if strategy == "StrictFIFO":
            assert got["reasons"]["s/small"].endswith("StrictFIFO: waits behind s/big in "
                                                      "ClusterQueue sales")  # fmt: skip
