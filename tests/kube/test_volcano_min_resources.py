"""A Volcano Job's PodGroup `minResources`, as the job controller computes it
(`calcPGMinResources`; volcano-sh/volcano at `ed72c7c8`, TestCalcPGMinResources in
pkg/controllers/job/job_controller_util_test.go, translated): tasks master (2 replicas,
50m each) and worker (2 replicas, 100m each); a task without minAvailable gets its
replicas (the webhook's patch). `pods` is left out: it is never a quota here."""

from __future__ import annotations

from typing import Any

import pytest

from solver import load_conf, schedule
from solver.kube import build_model
from solver.kube.workloads import expand_workloads
from tests.builders import node, raw


def task(name: str, cpu: str, minimum: int | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": name,
        "replicas": 2,
        "template": {
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
        },
    }
    if minimum is not None:
        body["minAvailable"] = minimum
    return body


def job(min_available: int, master: int | None, worker: int | None) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ns"},
        "spec": {
            "minAvailable": min_available,
            "tasks": [task("master", "50m", master), task("worker", "100m", worker)],
        },
    }


CASES = [  # job minAvailable, master's, worker's minAvailable, expected cpu
    (2, 1, None, "100m"),  # jobMinAvailable < sum(taskMinAvailable): the first 2 pods
    (2, None, 1, "100m"),
    (3, None, None, "200m"),
    (3, 1, 1, "200m"),  # jobMinAvailable > sum: each task's minimum, then filled up
    (3, 1, None, "250m"),  # jobMinAvailable = sum
    (2, 1, 1, "150m"),
]


@pytest.mark.parametrize(("minimum", "master", "worker", "cpu"), CASES)
def test_calc_pg_min_resources(
    minimum: int, master: int | None, worker: int | None, cpu: str
) -> None:
    objects, _ = expand_workloads(raw(job(minimum, master, worker)))
    group = next(o.body for o in objects if o.kind == "PodGroup")
    assert group["spec"]["minResources"] == {"cpu": cpu}


def test_the_job_enters_its_queue_by_what_it_asks_for() -> None:
    # The queue holds 200m: the job (min 3: 250m) is not enqueued, as in Volcano, where
    # before it entered with nothing asked.
    q = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
         "metadata": {"name": "default"}, "spec": {"capability": {"cpu": "200m"}}}  # fmt: skip
    objects, _ = expand_workloads(raw(job(3, 1, None), q, node("n").cpu("4").obj()))
    d = schedule(build_model(objects), load_conf(None), engine="greedy")
    outcome = d.podgroups["ns/j"]
    assert not outcome.enqueued and "cpu 250m requested" in outcome.reason
