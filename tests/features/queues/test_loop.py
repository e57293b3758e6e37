"""Volcano's allocate loop as the greedy's step order (`features/queues/loop.py`).

    one node n0: 8 GPUs, 64 cpus
    queue q (or q1, q2 of equal weight): elastic jobs of one-GPU pods (minAvailable 1)

Volcano pops a job, allocates it until it is ready, pushes it back while it has tasks left,
and sorts the queues and jobs again; with `gang` a ready job goes after one that is not,
with `drf` the lower dominant share goes first: two elastic jobs share the GPUs pod by pod.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from solver import SchedulerConf, load_conf, schedule, verify
from solver.config import PluginConf, TierConf
from tests.builders import model, node, placed_per_job, pod, podgroup, queue

DEFAULT = load_conf(Path(__file__).resolve().parents[3] / "examples/fairshare/volcano-default.conf")


def job(name: str, q: str, pods: int, min_member: int = 1, created: str = "") -> list[Any]:
    pg = podgroup(name, min_member, "volcano")
    pg["spec"]["queue"] = q
    if created:
        pg["metadata"]["creationTimestamp"] = created
    out: list[Any] = [pg]
    for i in range(pods):
        b = pod(f"{name}-{i}").annotate("scheduling.k8s.io/group-name", name)
        out.append(b.requests(cpu=1, gpu=1).obj())
    return out


NODE = node("n0").cpu("64").gpu(8).obj()
EARLY, LATE = "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"


@pytest.mark.parametrize("engine", ["greedy", "auto"])
def test_two_elastic_jobs_of_one_queue_share_pod_by_pod(engine: str) -> None:
    cluster = model(
        NODE, queue("q"), *job("a", "q", 8, created=EARLY), *job("b", "q", 8, created=LATE)
    )
    decision = schedule(cluster, DEFAULT, engine=engine, workers=1)
    assert verify(cluster, DEFAULT, decision) == []
    if engine == "greedy":  # Volcano's answer: a, b (not ready), then the lower share
        assert placed_per_job(decision) == {"a": 4, "b": 4}


def test_without_gang_and_drf_the_first_job_takes_its_turns_first() -> None:
    plain = SchedulerConf(
        actions=("enqueue", "allocate"),
        tiers=(TierConf(plugins=[PluginConf(name="predicates"), PluginConf(name="proportion")]),),
    )
    cluster = model(
        NODE, queue("q"), *job("a", "q", 8, created=EARLY), *job("b", "q", 8, created=LATE)
    )
    decision = schedule(cluster, plain, engine="greedy")
    assert placed_per_job(decision) == {"a": 8}  # a job order of creation only: a stays first


def test_elastic_jobs_of_two_queues_alternate_by_queue_share() -> None:
    # proportion: each queue deserves 4; capacity alone (no deserved): shares by the loop
    objects = [NODE, queue("q1"), queue("q2"), *job("a", "q1", 8), *job("b", "q2", 8)]
    cluster = model(*objects)
    decision = schedule(cluster, DEFAULT, engine="greedy")
    assert verify(cluster, DEFAULT, decision) == []
    assert placed_per_job(decision) == {"a": 4, "b": 4}


def test_a_gang_takes_its_minimum_at_once() -> None:
    # b needs 6 at once: a (created first) takes one, b its 6, a the last
    objects = [NODE, queue("q"), *job("a", "q", 8, created=EARLY),
               *job("b", "q", 8, min_member=6, created=LATE)]  # fmt: skip
    cluster = model(*objects)
    decision = schedule(cluster, DEFAULT, engine="greedy")
    assert verify(cluster, DEFAULT, decision) == []
    assert placed_per_job(decision) == {"a": 2, "b": 6}
