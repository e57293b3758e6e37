"""KAI's queues in allocation, translated from upstream's integration tests.

Source: NVIDIA/KAI-Scheduler `pkg/scheduler/actions/integration_tests/allocate/
allocate_test.go` (`getAllocateTestsMetadata`), one case per test Name, on both engines.
Upstream's test builder (`pkg/scheduler/test_utils/test_utils_builder.go`) is followed:
a queue's GPU limit is -1 unless set, its GPU over-quota weight 0 unless set, CPU and
memory quota and limit -1; queues are created a minute apart in list order; a queue
without a department is a child of `default` (quota and limit -1); train jobs have
priority 50 (preemptible), build jobs 100 (non-preemptible). Each job is one pod.

    department-a / default
    ├── queue0
    └── queue1
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from solver import SchedulerConf, schedule
from solver.errors import ManifestError
from solver.kube import load_objects
from solver.schedule import snapshot_of
from tests.builders import raw

ENGINES = ["greedy", "cpsat"]
TRAIN, BUILD = 50, 100


@dataclass
class Q:
    name: str
    deserved: float
    limit: float = -1
    weight: float = 0
    parent: str = "default"
    priority: int | None = None


@dataclass
class Case:
    name: str
    gpus: int  # one node
    queues: list[Q]
    jobs: list[tuple[str, str, int, int]]  # (name, queue, GPUs, priority)
    running: set[str]
    departments: list[Q] = field(default_factory=lambda: [Q("default", -1, weight=1, parent="")])


def kai_queue(q: Q, minute: int) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "resources": {
            "gpu": {"quota": q.deserved, "limit": q.limit, "overQuotaWeight": q.weight},
            "cpu": {"quota": -1, "limit": -1, "overQuotaWeight": 1},
            "memory": {"quota": -1, "limit": -1, "overQuotaWeight": 1},
        }
    }
    if q.parent:
        spec["parentQueue"] = q.parent
    if q.priority is not None:
        spec["priority"] = q.priority
    return {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": q.name, "creationTimestamp": f"2025-01-01T00:{minute:02d}:00Z"},
        "spec": spec,
    }


def objects(case: Case) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "node0"},
            "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "nvidia.com/gpu": str(case.gpus), "pods": "110"}},
        },
        *({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
           "metadata": {"name": n}, "value": v} for n, v in (("train", TRAIN), ("build", BUILD))),
    ]  # fmt: skip
    for i, q in enumerate([*case.departments, *case.queues]):
        out.append(kai_queue(q, i))
    for i, (name, queue, gpus, priority) in enumerate(case.jobs):
        cls = "build" if priority == BUILD else "train"
        out.append({
            "apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default",
                         "creationTimestamp": f"2025-01-01T01:{i:02d}:00Z"},
            "spec": {"minMember": 1, "queue": queue, "priorityClassName": cls},
        })  # fmt: skip
        out.append({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{name}-0", "namespace": "default",
                         "annotations": {"pod-group-name": name}},
            "spec": {"schedulerName": "kai-scheduler", "containers": [{"name": "c", "resources": {
                "requests": {"nvidia.com/gpu": str(gpus)}, "limits": {"nvidia.com/gpu": str(gpus)}}}]},
        })  # fmt: skip
    return out


CASES = [
    Case(
        "allocate job but does not allow to project to go over allowance", 4,
        [Q("queue0", 2, limit=2, weight=2, parent="department-a")],
        [("pending_job0", "queue0", 2, TRAIN), ("pending_job1", "queue0", 2, TRAIN)],
        {"pending_job0"}, departments=[Q("department-a", 2, weight=2, parent="")],
    ),
    Case(
        "allocate job but does not allow to department to go over allowance", 4,
        [Q("queue0", 2, parent="department-a")],
        [("pending_job0", "queue0", 2, TRAIN), ("pending_job1", "queue0", 2, TRAIN)],
        {"pending_job0"}, departments=[Q("department-a", 2, limit=2, weight=2, parent="")],
    ),
    Case(
        "allocate pending jobs, allow over quota for train jobs (with interactive jobs)", 2,
        [Q("queue0", 1), Q("queue1", 1)],
        [("pending_job0", "queue0", 1, BUILD), ("pending_job1", "queue0", 1, TRAIN)],
        {"pending_job0", "pending_job1"},
    ),
    Case(
        "don't allocate over quota build jobs", 4,
        [Q("queue0", 1), Q("queue1", 1)],
        [("pending_job0", "queue0", 2, BUILD)],
        set(),
    ),
    Case(
        "allocate according to creation time when share is equal", 1,
        [Q("queue0", 1), Q("queue1", 1)],
        [("pending_job0", "queue0", 1, BUILD), ("pending_job1", "queue1", 1, BUILD)],
        {"pending_job0"},
    ),
    Case(
        "allocate according to priority", 1,
        [Q("queue0", 1), Q("queue1", 1, priority=101)],
        [("pending_job0", "queue0", 1, BUILD), ("pending_job1", "queue1", 1, BUILD)],
        {"pending_job1"},
    ),
    Case(
        "1 build job pending for each queue with different share - allocate the second", 1,
        [Q("queue0", 1), Q("queue1", 2)],
        [("pending_job0", "queue0", 1, BUILD), ("pending_job1", "queue1", 1, BUILD)],
        {"pending_job1"},
    ),
]  # fmt: skip


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_upstream_allocate(case: Case, engine: str) -> None:
    snapshot = snapshot_of(load_objects(raw(*objects(case))))
    d = schedule(snapshot, SchedulerConf.default(), engine=engine, workers=1)  # verified
    placed = {gid.split("/")[1] for gid, g in d.podgroups.items() if g.placed}
    assert placed == case.running


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("priority", "preemptibility", "runs"),
    [(BUILD, "preemptible", True), (TRAIN, "non-preemptible", False), (BUILD, None, False)],
)
def test_an_explicit_preemptibility_decides_over_the_priority(
    engine: str, priority: int, preemptibility: str | None, runs: bool
) -> None:
    """KAI's `CalculatePreemptibility` (pkg/common/podgroup/preemptible.go): the PodGroup's
    `spec.preemptibility` wins over the priority threshold. "don't allocate over quota
    build jobs" again (2 GPUs, quota 1): a build job made preemptible runs over quota; a
    train job made non-preemptible is held at quota."""
    case = Case("over quota", 4, [Q("queue0", 1), Q("queue1", 1)],
                [("pending_job0", "queue0", 2, priority)], set())  # fmt: skip
    objs = objects(case)
    if preemptibility is not None:
        group = next(o for o in objs if o["kind"] == "PodGroup")
        group["spec"]["preemptibility"] = preemptibility
    snapshot = snapshot_of(load_objects(raw(*objs)))
    d = schedule(snapshot, SchedulerConf.default(), engine=engine, workers=1)  # verified
    assert d.podgroups["default/pending_job0"].placed == runs


def test_an_unknown_preemptibility_is_one_line_naming_it() -> None:
    case = Case("bad", 4, [Q("queue0", 1)], [("j", "queue0", 1, TRAIN)], set())
    objs = objects(case)
    next(o for o in objs if o["kind"] == "PodGroup")["spec"]["preemptibility"] = "sometimes"
    with pytest.raises(ManifestError) as err:
        load_objects(raw(*objs))
    assert err.value.field == "spec.preemptibility"


RESORTED = [
    Case(
        "6 pending train jobs - allocate the 1st 2 of each queue (verify the share is being "
        "updated during the allocation)", 4,
        [Q("queue0", 1), Q("queue1", 1)],
        [(f"pending_job{i}", f"queue{i // 3}", 1, TRAIN) for i in range(6)],
        {"pending_job0", "pending_job1", "pending_job3", "pending_job4"},
    ),
    Case(
        "Over provisioning with over quota, many queues to few GPUs - verify queue share is "
        "updated during the same allocation round", 2,
        [Q(f"queue{i}", 1) for i in range(4)],
        [(f"pending_job{i}", f"queue{i % 4}", 1, TRAIN) for i in range(6)],
        {"pending_job0", "pending_job1"},
    ),
]  # fmt: skip


@pytest.mark.parametrize("case", RESORTED, ids=[c.name for c in RESORTED])
def test_the_queue_order_is_resorted_after_every_job(case: Case) -> None:
    """KAI re-sorts its queues after each allocation (`JobsOrderByQueues` marks the popped
    path for reorder): queue0's first job raises its share, so queue1's goes next. The
    greedy follows that order (CP-SAT places the same count and is held to the limits)."""
    snapshot = snapshot_of(load_objects(raw(*objects(case))))
    d = schedule(snapshot, SchedulerConf.default(), engine="greedy", workers=1)  # verified
    placed = {gid.split("/")[1] for gid, g in d.podgroups.items() if g.placed}
    assert placed == case.running
