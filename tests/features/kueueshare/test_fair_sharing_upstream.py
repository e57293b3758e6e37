"""Kueue's fair sharing between ClusterQueues, translated from upstream's integration tests.

Source: kubernetes-sigs/kueue `test/integration/singlecluster/scheduler/fairsharing/
fair_sharing_test.go`, `When("Preemption is disabled")` and `When("using hierarchical
cohorts")`. Upstream runs a controller that admits as workloads finish; here every step
is one `schedule` call on the cluster as it stands (running pods = admitted workloads,
pending ones = the queue), with `fairSharing` in the conf, on both engines.

    all (cohort)                        root
    ├── a       cpu 3                   ├── first-left
    ├── b       cpu 1                   │   ├── second-left  ── cq second-left  (cpu 2)
    └── shared  cpu 4                   │   └── second-right ── cq second-right (cpu 2)
                                        └── first-right
                                            └── bank (cpu 10)
"""

from __future__ import annotations

from typing import Any

import pytest

from solver import SchedulerConf, schedule
from solver.features.kueueshare import kueue_nodes
from solver.kube import load_objects
from solver.schedule import snapshot_of
from tests.builders import raw
from tests.features.kueueshare.test_schedule_upstream import (
    KUEUE,
    cq,
    flavor,
    lq,
    running,
    workload,
)

ENGINES = ["greedy", "cpsat"]
N = None
FAIR = SchedulerConf.default().model_copy(update={"fair_sharing": True})
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "big"},
        "status": {"allocatable": {"cpu": "1000", "memory": "1Ti", "pods": "10000"}}}  # fmt: skip
FLAT = [
    NODE, flavor("default"),
    cq("a", "all", {"default": [("cpu", "3", N, N)]}),
    cq("b", "all", {"default": [("cpu", "1", N, N)]}),
    cq("shared", "all", {"default": [("cpu", "4", N, N)]}),
    lq("main", "a", "a"), lq("main", "b", "b"),
]  # fmt: skip


def step(base: list[dict[str, Any]], held: dict[str, int], waiting: dict[str, int], engine: str):
    """One call: `held[q]` running 1-CPU pods of queue q, `waiting[q]` pending 1-CPU
    workloads (q's own created first); the count admitted per queue and the snapshot."""
    objects = list(base)
    for q, n in held.items():
        objects += [running(f"run-{i}", q, "main", cpu="1") for i in range(n)]
    created = 0
    for q, n in waiting.items():
        for i in range(n):
            created += 1
            objects.append(workload(f"wl-{i}", q, "main", 1, created, cpu="1"))
    snapshot = snapshot_of(load_objects(raw(*objects)))
    decision = schedule(snapshot, FAIR, engine=engine, workers=1, seed=0)
    placed: dict[str, int] = {}
    for key, g in decision.podgroups.items():
        if g.placed:
            placed[key.split("/")[0]] = placed.get(key.split("/")[0], 0) + 1
    return placed, snapshot, decision


@pytest.mark.parametrize("engine", ENGINES)
def test_admits_workloads_respecting_fair_share(engine: str) -> None:
    # "Saturating cq-a": 8 of 10 admitted (the cohort's 8 CPUs), weighted share 625
    placed, snapshot, _ = step(FLAT, {}, {"a": 10}, engine)
    assert placed == {"a": 8}
    # "Creating newer workloads in cq-b": nothing free
    placed, snapshot, _ = step(FLAT, {"a": 8}, {"a": 2, "b": 5}, engine)
    assert placed == {}
    nodes = kueue_nodes(snapshot)
    assert nodes.drs("a").share == 625.0 and nodes.drs("b").share == 0.0
    # "Terminating 4 running workloads in cqA": one at a time, b, b, b, then a
    held_a, held_b, wait_a, wait_b = 8, 0, 2, 5
    for want in ("b", "b", "b", "a"):
        held_a -= 1  # a workload of cq-a finishes
        placed, _, _ = step(FLAT, {"a": held_a, "b": held_b}, {"a": wait_a, "b": wait_b}, engine)
        assert placed == {want: 1}, (held_a, held_b)
        held_a, wait_a = (held_a + 1, wait_a - 1) if want == "a" else (held_a, wait_a)
        held_b, wait_b = (held_b + 1, wait_b - 1) if want == "b" else (held_b, wait_b)
    assert (held_a, held_b, wait_a, wait_b) == (5, 3, 1, 2)
    # "Terminating 2 more running workloads in cqA": the last of a and one of b
    placed, snapshot, _ = step(FLAT, {"a": 3, "b": 3}, {"a": 1, "b": 2}, engine)
    assert placed == {"a": 1, "b": 1}
    final = step(FLAT, {"a": 4, "b": 4}, {"b": 1}, engine)[1]
    nodes = kueue_nodes(final)
    assert (nodes.drs("a").share, nodes.drs("b").share) == (125.0, 375.0)


@pytest.mark.parametrize("engine", ENGINES)
def test_should_not_reserve_quota_because_not_enough_resources(engine: str) -> None:
    objects = [*FLAT, workload("wl", "a", "main", 1, 1, cpu="10")]
    decision = schedule(snapshot_of(load_objects(raw(*objects))), FAIR, engine=engine, workers=1)
    assert decision.podgroups["a/wl"].reason.endswith(
        "couldn't assign flavors to pod set: insufficient quota for cpu in flavor default, "
        "previously considered podsets requests (0) + current podset request (10) > maximum "
        "capacity (8)"
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_hierarchical_cohorts_admit_workloads_respecting_fair_share(engine: str) -> None:
    cohorts = [
        {"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": "root"}},
        *({"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": n}, "spec": {"parentName": p}}
          for n, p in (("first-left", "root"), ("first-right", "root"),
                       ("second-left", "first-left"), ("second-right", "first-left"))),
        {"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": "bank"},
         "spec": {"parentName": "first-right", "resourceGroups": [{"coveredResources": ["cpu"],
                  "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": "10"}]}]}]}},
    ]  # fmt: skip
    base = [
        NODE, flavor("default"), *cohorts,
        # a ClusterQueue and a Cohort may not share a name in gangplan's one queue tree:
        # upstream's ClusterQueues `second-left`/`second-right` are `cq-left`/`cq-right`
        cq("cq-left", "second-left", {"default": [("cpu", "2", N, N)]}),
        cq("cq-right", "second-right", {"default": [("cpu", "2", N, N)]}),
        lq("main", "left", "cq-left"), lq("main", "right", "cq-right"),
    ]  # fmt: skip
    placed, _, _ = step(base, {}, {"left": 5, "right": 5}, engine)
    assert placed == {"left": 5, "right": 5}
    after = step(base, {"left": 5, "right": 5}, {}, engine)[1]
    nodes = kueue_nodes(after)
    assert nodes.drs("first-left").share == pytest.approx(6 * 1000 / 14)
    assert nodes.drs("second-left").share == pytest.approx(3 * 1000 / 14)
    assert nodes.drs("first-right").share == 0.0


@pytest.mark.parametrize("engine", ENGINES)
def test_fair_sharing_orders_by_share_where_classical_is_fifo(engine: str) -> None:
    """gangplan's own: a holds 6 (3 borrowed), b 1 (at nominal), one CPU free, a's workload
    older. Both would borrow, so the classical order is FIFO (a); fair sharing admits the
    one whose ClusterQueue's share stays lower: b (125 against a's 500)."""
    held, waiting = {"a": 6, "b": 1}, {"a": 1, "b": 1}
    assert step(FLAT, held, waiting, engine)[0] == {"b": 1}
    objects = list(FLAT)
    objects += [running(f"run-{i}", q, "main", cpu="1") for q, n in held.items() for i in range(n)]
    objects += [
        workload("wl-0", "a", "main", 1, 1, cpu="1"),
        workload("wl-0", "b", "main", 1, 2, cpu="1"),
    ]
    classical = schedule(snapshot_of(load_objects(raw(*objects))), SchedulerConf.default(),
                         engine=engine, workers=1, seed=0)  # fmt: skip
    assert [k for k, g in classical.podgroups.items() if g.placed] == ["a/wl-0"]
