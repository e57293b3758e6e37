"""Reasons that do not depend on the engine: "fits on its own, the room went to X" is said
only when the gang alone was placed and others took room in the answer. Alone in the
cluster, a gang held back by its queue's capability is told the quota."""

from __future__ import annotations

import pytest

from solver import SchedulerConf, schedule
from solver.kube import load_objects
from tests.builders import model, node, pod, podgroup, queue, raw, volcano_batch_job, volcano_job

ENGINES = ["greedy", "cpsat", "auto"]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_gang_blocked_by_its_queue_alone_is_told_the_quota(engine: str) -> None:
    """A Volcano job of 3 x 1 cpu in a queue capped at 2 cpu, alone on a 16-cpu node. CP-SAT
    said "fits on the cluster on its own; the room went to other pending gang groups"; the
    allocate gate's reason is `test_the_allocate_gate_is_named_without_min_resources`."""
    job = volcano_batch_job("vj", "small", 3)
    cluster = load_objects(
        raw(node("n").cpu("16").obj(), queue("small", capability={"cpu": "2"}), job)
    )
    d = schedule(cluster, SchedulerConf.default(), engine=engine, workers=1, time_limit=10)
    reason = d.podgroups["default/vj"].reason
    # the job controller's minResources (3 cpu) meets the queue at enqueue, as in Volcano
    assert reason == (
        "not enqueued: queue small: cpu 3 requested + 0 in use > realCapability 2 (over by 1)"
    ), reason
    assert "fits on the cluster" not in reason and "greedy:" not in reason


@pytest.mark.parametrize("engine", ["greedy", "cpsat", "auto"])
def test_the_allocate_gate_is_named_without_min_resources(engine: str) -> None:
    """The same job as a PodGroup without minResources (enqueue permits it): the allocate
    gate stops it, and its reason names the queue's quota."""
    pods = [pod(f"vj-{i}").annotate("scheduling.k8s.io/group-name", "vj").requests(cpu="1").obj()
            for i in range(3)]  # fmt: skip
    group = podgroup("vj", 3, "volcano")
    group["spec"]["queue"] = "small"
    cluster = model(node("n").cpu("16").obj(), queue("small", capability={"cpu": "2"}), group,
                    *pods)  # fmt: skip
    d = schedule(cluster, SchedulerConf.default(), engine=engine, workers=1, time_limit=10)
    reason = d.podgroups["default/vj"].reason
    assert reason.startswith("queue small: gang default/vj needs 3 cpu; its limit (2) leaves 2"), (
        reason
    )
    assert "fits on the cluster" not in reason and "greedy:" not in reason


@pytest.mark.parametrize("engine", ENGINES)
def test_competition_is_still_named_when_a_rival_took_the_room(engine: str) -> None:
    """Two 3-cpu gangs, room for one: the one left out fits on its own."""
    cluster = model(
        node("n").cpu("4").obj(),
        queue("q"),
        *volcano_job("a", "q", 1, gpu=0, cpu=3, priority=10),
        *volcano_job("b", "q", 1, gpu=0, cpu=3),
    )
    d = schedule(cluster, SchedulerConf.default(), engine=engine, workers=1, time_limit=10)
    reason = d.podgroups["default/b"].reason
    assert reason.startswith(
        "gang default/b fits on the cluster on its own; the room went to default/a"
    )
