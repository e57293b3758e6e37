"""KAI's reclaim, translated from upstream's integration tests.

Source: NVIDIA/KAI-Scheduler `pkg/scheduler/actions/integration_tests/reclaim/
reclaim_test.go` (`getReclaimTestsMetadata`), one case per test Name, on both engines,
with upstream's test builder's queues (see `test_kai_allocate.py`) under the `default`
department; every job is one pod of priority 50 (train: preemptible). The conf lists the
`reclaim` action (KAI always runs it).

    default
    ├── queue0
    └── queue1          node0, node1: 2 GPUs each (one node of 2 GPUs where noted)
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from typing import Any

import pytest

from solver import SchedulerConf, schedule, verify
from solver.decision import Victim
from solver.kube import load_objects
from solver.schedule import snapshot_of
from tests.builders import raw
from tests.features.kaishare.test_kai_allocate import TRAIN, Q, kai_queue

CONF = SchedulerConf.default().model_copy(update={"actions": ("enqueue", "allocate", "reclaim")})


@dataclass
class Case:
    name: str
    nodes: int
    queues: list[Q]
    running: list[tuple[str, str, int, str]]  # (job, queue, GPUs, node)
    pending: tuple[str, str, int]
    evicted: set[str]
    placed: bool


def objects(case: Case) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "train"},
         "value": TRAIN},
        *({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node{i}"},
           "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "nvidia.com/gpu": "2", "pods": "110"}}}
          for i in range(case.nodes)),
    ]  # fmt: skip
    for i, q in enumerate([Q("default", -1, weight=1, parent=""), *case.queues]):
        out.append(kai_queue(q, i))
    jobs = [(*r, None) for r in case.running] + [(*case.pending, None, None)]
    for i, (name, queue, gpus, node, _) in enumerate(jobs):
        out.append({
            "apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default",
                         "creationTimestamp": f"2025-01-01T01:{i:02d}:00Z"},
            "spec": {"minMember": 1, "queue": queue, "priorityClassName": "train"},
        })  # fmt: skip
        pod: dict[str, Any] = {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{name}-0", "namespace": "default",
                         "annotations": {"pod-group-name": name}},
            "spec": {"schedulerName": "kai-scheduler", "priorityClassName": "train",
                     "containers": [{"name": "c", "resources": {
                         "requests": {"nvidia.com/gpu": str(gpus)},
                         "limits": {"nvidia.com/gpu": str(gpus)}}}]},
        }  # fmt: skip
        if node is not None:
            pod["spec"]["nodeName"] = node
            pod["status"] = {"phase": "Running"}
        out.append(pod)
    return out


EQUAL = [Q("queue0", 2, weight=2), Q("queue1", 2, weight=2)]
CASES = [
    Case(
        "1 train job running for queue0, 1 train job pending for queue1 - reclaim", 1,
        [Q("queue0", 1, weight=1), Q("queue1", 1, weight=1)],
        [("running_job0", "queue0", 2, "node0")], ("pending_job0", "queue1", 1),
        {"running_job0"}, True,
    ),
    Case(
        "(This is used by the demo) 2 jobs running for queue0 on 3 GPUs, 1 job running for "
        "queue1 on 1 GPU, 1 pending job for queue1 - reclaim", 2, EQUAL,
        [("running_job0", "queue0", 1, "node0"), ("running_job1", "queue1", 2, "node1"),
         ("running_job2", "queue1", 1, "node0")], ("pending_job0", "queue0", 1),
        {"running_job2"}, True,
    ),
    Case(
        "2 jobs running for queue0 on 3 GPUs, 1 job running for queue1 on 1 GPU, 1 pending "
        "job for queue1 - reclaim", 2, EQUAL,
        [("running_job0", "queue0", 1, "node1"), ("running_job1", "queue0", 2, "node0"),
         ("running_job2", "queue1", 1, "node1")], ("pending_job0", "queue1", 1),
        {"running_job1"}, True,
    ),
    Case(
        "2 jobs running for queue0 on 3 GPUs, 1 job running for queue1 on 1 GPU, 1 pending "
        "job for queue1, deserved of queue1 is 1 -  don't reclaim", 2,
        [Q("queue0", 2, weight=2), Q("queue1", 1, weight=1)],
        [("running_job0", "queue0", 1, "node1"), ("running_job1", "queue0", 2, "node0"),
         ("running_job2", "queue1", 1, "node1")], ("pending_job0", "queue1", 1),
        set(), False,
    ),
]  # fmt: skip


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
@pytest.mark.parametrize("case", CASES, ids=[c.name[:60] for c in CASES])
def test_upstream_reclaim(case: Case, engine: str) -> None:
    snapshot = snapshot_of(load_objects(raw(*objects(case))))
    d = schedule(snapshot, CONF, engine=engine, workers=1)  # verified
    evicted = {v.pod.split("/")[1].removesuffix("-0") for v in d.victims}
    assert evicted == case.evicted
    assert all(v.cause == "reclaim" for v in d.victims)
    pending = f"default/{case.pending[0]}-0"
    got = d.placements[pending]
    assert bool(got.node or got.nominated) == case.placed


def test_the_verifier_catches_a_reclaim_from_a_queue_within_its_quota() -> None:
    """The independent check: queue1 holds 1 GPU, its quota; taking it for queue0 is not
    KAI's reclaim (neither strategy allows it), nor is taking from the reclaimer's own queue."""
    case = CASES[3]
    snapshot = snapshot_of(load_objects(raw(*objects(case))))
    d = schedule(snapshot, CONF, engine="greedy")
    bad = replace(d, victims=(
        Victim(pod="default/running_job2-0", node="node1", message="m", cause="reclaim", queue="queue0"),
    ))  # fmt: skip
    assert any("held no more than its quota" in p for p in verify(snapshot, CONF, bad))
    own = replace(d, victims=(
        Victim(pod="default/running_job2-0", node="node1", message="m", cause="reclaim", queue="queue1"),
    ))  # fmt: skip
    assert any("from its own queue" in p for p in verify(snapshot, CONF, own))


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_a_job_made_non_preemptible_is_never_a_victim(engine: str) -> None:
    """The first case again with the running train job's PodGroup `preemptibility:
    non-preemptible` (KAI's victims are preemptible jobs only, `FilterNonPreemptible`): no
    reclaim, the pending job waits."""
    objs = objects(CASES[0])
    group = next(
        o for o in objs if o["kind"] == "PodGroup" and o["metadata"]["name"] == "running_job0"
    )
    group["spec"]["preemptibility"] = "non-preemptible"
    d = schedule(snapshot_of(load_objects(raw(*objs))), CONF, engine=engine, workers=1)
    assert not d.victims
    got = d.placements["default/pending_job0-0"]
    assert not (got.node or got.nominated)


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_reclaim_single_task_from_elastic_job(engine: str) -> None:
    """`pkg/scheduler/actions/reclaim/reclaim_elastic_test.go`, "Reclaim single task from
    elastic job": queue0's running-job (minAvailable 1) runs 2 one-GPU tasks on node0
    (2 GPUs); queue1's pending one-GPU job reclaims one task, running-job-1 (the reverse
    task order), and running-job-0 keeps running (KAI's elastic tasks go one by one)."""
    case = Case("elastic", 1, [Q("queue0", 1, weight=1), Q("queue1", 1, weight=1)],
                [("running-job", "queue0", 1, "node0")], ("pending-job", "queue1", 1), set(), True)  # fmt: skip
    objs = objects(case)
    group = next(o for o in objs if o.get("metadata", {}).get("name") == "running-job")
    first = next(o for o in objs if o.get("metadata", {}).get("name") == "running-job-0")
    second = copy.deepcopy(first)
    second["metadata"]["name"] = "running-job-1"
    objs.append(second)
    group["spec"]["minMember"] = 1
    d = schedule(snapshot_of(load_objects(raw(*objs))), CONF, engine=engine, workers=1)
    assert [v.pod for v in d.victims] == ["default/running-job-1"]
    assert d.placements["default/pending-job-0"].nominated == "node0"


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_preemption_on_runs_kais_reclaim_without_the_action(engine: str) -> None:
    """KAI always runs its reclaim beside its preempt action: with KAI's Queues, a call
    with preemption on (`--preempt`, the front end's default) reclaims without the conf
    listing `reclaim` (the first upstream case again)."""
    snapshot = snapshot_of(load_objects(raw(*objects(CASES[0]))))
    d = schedule(snapshot, SchedulerConf.default(), engine=engine, workers=1, preempt=True)
    assert [v.pod for v in d.victims] == ["default/running_job0-0"]
    assert {v.cause for v in d.victims} == {"reclaim"}
