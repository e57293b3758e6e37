"""Property: for random queue trees and job sets, no Decision exceeds any queue's
realCapability at any level (checked by `verify`), with either engine."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver import SchedulerConf, solve, verify
from solver.model import ClusterModel, job_queue
from solver.quantity import UNLIMITED as INF
from tests.builders import model, node, queue, queue_tree, volcano_job

GPU = "nvidia.com/gpu"
CONF = SchedulerConf.default()


@st.composite
def queue_worlds(draw: st.DrawFn) -> ClusterModel:
    objects: list[dict[str, Any]] = [
        node(f"n{i}").cpu("32").gpu(draw(st.sampled_from([4, 8]))).obj()
        for i in range(draw(st.integers(1, 4)))
    ]
    names = [f"q{i}" for i in range(draw(st.integers(1, 5)))]
    parents: dict[str, str | None] = {}
    for i, name in enumerate(names):
        parent = draw(st.sampled_from([None, *names[:i]]))
        parents[name] = parent
        cap = draw(st.sampled_from([None, 2, 4, 6, 10]))
        objects.append(queue(name, parent, capability={GPU: cap} if cap else None))
    leaves = [n for n in names if n not in parents.values()]
    for j in range(draw(st.integers(1, 5))):
        size = draw(st.integers(1, 4))
        job = volcano_job(
            f"j{j}",
            draw(st.sampled_from(leaves)),
            size,
            gpu=draw(st.integers(1, 2)),
            min_member=draw(st.integers(1, size)),
            priority=draw(st.integers(0, 1)),
        )
        if draw(st.booleans()):
            del job[0]["spec"]["minResources"]
        objects += job
    return model(*objects)


def _within_every_level(cluster: ClusterModel, placed: dict[str, str]) -> None:
    tree = queue_tree(cluster, CONF)
    assert tree is not None
    extra: dict[str, int] = {}
    for key in placed:
        pod = cluster.pod_by_key[key]
        gang = cluster.gangs[pod.gang]
        leaf = job_queue(gang, [cluster.pod_by_key[k] for k in gang.members])
        assert leaf is not None
        for name in tree.path(leaf):
            extra[name] = extra.get(name, 0) + pod.requests.get(GPU, 0)
    for name, used in extra.items():
        limit = tree.queues[name].real(GPU)
        assert limit >= INF or used + tree.queues[name].allocated.get(GPU, 0) <= limit, name


@given(queue_worlds(), st.sampled_from(["greedy", "cpsat"]))
@settings(max_examples=40)
def test_no_decision_exceeds_any_queue_level(cluster: ClusterModel, engine: str) -> None:
    d = solve(cluster, CONF, engine=engine, workers=1, time_limit=20)
    assert verify(cluster, CONF, d) == []
    _within_every_level(cluster, d.placed)


@pytest.mark.slow
@given(queue_worlds(), st.sampled_from(["greedy", "cpsat"]))
@settings(max_examples=400)
def test_no_decision_exceeds_any_queue_level_long(cluster: ClusterModel, engine: str) -> None:
    d = solve(cluster, CONF, engine=engine, workers=1, time_limit=20)
    assert verify(cluster, CONF, d) == []
    _within_every_level(cluster, d.placed)
