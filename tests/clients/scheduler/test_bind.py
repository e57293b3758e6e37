"""Gangs bind whole, through `pods/binding`, and what goes wrong between decision and bind
never binds a pod twice or a gang in part for good.

    node a (4 GPU)   node b (4 GPU)
    [ . . . . ]      [ . . . . ]
"""

from __future__ import annotations

import time
from pathlib import Path

import gangplan
from solver.kube import read_sources
from tests.clients.scheduler.conftest import Harness, gang, node, pod, wait_until

ROOT = Path(__file__).resolve().parents[3]


def test_a_gang_binds_all_or_nothing(cluster: Harness) -> None:
    cluster.create(node("a"), node("b"), gang("fits", 6), gang("big", 9))
    cluster.scheduler()
    bound = wait_until(lambda: len(cluster.bound()) == 6 and cluster.bound(), what="6 bound")
    assert sorted(bound) == [f"fits-{i}" for i in range(6)]
    # the 9-pod gang never gets a member: all or nothing, with the reason on every pod
    assert not any(name.startswith("big") for name in cluster.bound())
    condition = wait_until(lambda: cluster.condition("big-0"), what="the condition")
    assert condition["status"] == "False" and condition["reason"] == "Unschedulable"
    assert "big" in condition["message"] and "nvidia.com/gpu" in condition["message"]
    # the certificate first (solver/why): 9 GPUs needed where the nodes have 8 at most
    assert condition["message"].startswith("gang default/big needs 9 × 1 nvidia.com/gpu"), (
        condition["message"]
    )
    wait_until(lambda: len(cluster.events("FailedScheduling")) >= 9, what="9 events")
    failed = cluster.events("FailedScheduling")
    assert {e["involvedObject"]["name"] for e in failed} == {f"big-{i}" for i in range(9)}
    assert len(cluster.events("Scheduled")) == 6
    assert sorted(cluster.successful_binds()) == sorted(f"default/fits-{i}" for i in range(6))


def test_a_pod_without_a_gang_is_a_gang_of_one(cluster: Harness) -> None:
    cluster.create(node("a"), pod("solo", 2), pod("other", 1, scheduler="default-scheduler"))
    cluster.scheduler()
    wait_until(lambda: "solo" in cluster.bound(), what="solo bound")
    # a pod of another scheduler is left alone
    assert "other" not in cluster.bound()


def test_a_bind_conflict_midway_binds_nothing_twice_and_the_gang_completes(
    cluster: Harness,
) -> None:
    cluster.create(node("a"), node("b"), gang("g", 8))
    cluster.api.store.faults.fail["POST g-3/binding"] = [409, 1]
    service = cluster.scheduler()
    wait_until(lambda: len(cluster.bound()) == 8, what="the whole gang bound")
    binds = cluster.successful_binds()
    assert len(binds) == len(set(binds)) == 8  # nothing bound twice
    conflicts = service.metrics.bind_errors.labels(reason="conflict")._value.get()
    assert conflicts == 1


def test_a_node_deleted_between_decision_and_bind_stops_the_gang(cluster: Harness) -> None:
    cluster.create(node("a"), node("b"), gang("g", 8))
    service = cluster.scheduler(dry_run=True)  # decides, writes nothing
    cycle = service.cycle
    response = wait_until(lambda: cycle.decide(), what="a decision")
    placed, _ = cycle._gangs(response.decision)
    assert len(placed["default/g"]) == 8
    cluster.api.store.delete("", "nodes", "", "b")
    wait_until(lambda: "b" not in cycle.mirror.node_names(), what="the mirror sees it")
    cycle._bind(placed)
    cycle.binder.drain()
    assert cluster.bound() == {}
    assert service.metrics.bind_errors.labels(reason="precheck")._value.get() == 1


def test_a_pending_pod_deleted_mid_cycle_stops_its_gang(cluster: Harness) -> None:
    cluster.create(node("a"), node("b"), gang("g", 4), gang("h", 4))
    service = cluster.scheduler(dry_run=True)
    cycle = service.cycle
    response = wait_until(lambda: cycle.decide(), what="a decision")
    placed, _ = cycle._gangs(response.decision)
    # one deletion the mirror has seen (precheck), one it has not (the bind's 404)
    cluster.api.store.delete("", "pods", "default", "g-2")
    wait_until(lambda: cycle.mirror.pod(("default", "g-2")) is None, what="seen")
    with cycle.mirror.lock:
        hidden = cycle.mirror.objects_of("Pod").pop(("default", "h-0"))
    cluster.api.store.delete("", "pods", "default", "h-0")
    cycle.mirror.objects_of("Pod")[("default", "h-0")] = hidden
    cycle.binder.pool._max_workers = 1  # in order: h-0 fails first, the rest never start
    cycle._bind(
        {
            "default/g": placed["default/g"],
            "default/h": sorted(placed["default/h"], key=lambda a: a.pod),
        }
    )
    cycle.binder.drain()
    assert not any(n.startswith("g-") for n in cluster.bound())
    assert not any(n.startswith("h-") for n in cluster.bound())
    # h's members are pending again (not assumed), for the next cycle
    assert not cycle.mirror.assumed


def test_pods_of_other_schedulers_and_terminating_pods_hold_their_capacity(
    cluster: Harness,
) -> None:
    cluster.create(
        node("a"),
        pod("theirs", 2, scheduler="default-scheduler", node_name="a"),
        pod("leaving", 1, scheduler="default-scheduler", node_name="a", terminating=True),
        gang("two", 2),
    )
    cluster.scheduler()
    # 4 GPUs: 2 theirs, 1 held by the terminating pod, so 1 free: the pod of one fits, the
    # gang of two does not (it would if the terminating pod's GPU counted as free)
    cluster.create(pod("one", 1))
    wait_until(lambda: "one" in cluster.bound(), what="one bound")
    wait_until(lambda: cluster.condition("two-0"), what="the reason")
    assert "two-0" not in cluster.bound()


def test_gpu_sharing_annotations_are_written_before_the_bind(cluster: Harness) -> None:
    """The bundled GPU-sharing example: each bound pod carries its device assignment in its
    dialect's annotation (Koordinator device-allocated, ...), as the device plugin reads it."""
    objects = [raw.body for raw in read_sources([str(ROOT / "examples/gpu-sharing/shares.yaml")])]
    cluster.create(objects)
    pending = {
        o["metadata"]["name"]
        for o in objects
        if o["kind"] == "Pod" and not o["spec"].get("nodeName")
    }
    cluster.scheduler(scheduler_names=frozenset({"default-scheduler"}))
    wait_until(lambda: pending & set(cluster.bound()), what="a shared pod bound")
    wait_until(lambda: len(cluster.bound()) >= len(pending), timeout=5, what="all bound")
    expected = gangplan.schedule(gangplan.load(str(ROOT / "examples/gpu-sharing/shares.yaml")))
    for name in pending & set(cluster.bound()):
        want = expected.placements[f"default/{name}"].annotations
        got = cluster.pods()[name]["metadata"].get("annotations") or {}
        assert want and all(got.get(k) == v for k, v in want.items()), name


def test_a_gang_that_waits_is_not_decided_again_until_something_changes(
    cluster: Harness,
) -> None:
    cluster.create(node("a"), gang("big", 5))
    service = cluster.scheduler()
    wait_until(lambda: cluster.condition("big-0"), what="the reason")
    cycle = service.cycle
    assert cycle is not None

    def decisions() -> float:
        metric = service.metrics.cycle_seconds
        return sum(
            s.value
            for m in metric.collect()
            for s in m.samples
            if s.name.endswith("_count") and s.labels["phase"] == "decide"
        )

    before = decisions()
    time.sleep(2.5)  # idle wake-ups every second: same generation, same pods
    assert decisions() == before
    cluster.create(node("b"))  # room: decided again, and bound
    wait_until(lambda: len(cluster.bound()) == 5, what="bound once there is room")
    assert decisions() > before


def test_pods_that_come_before_their_pod_group_wait_for_it(cluster: Harness) -> None:
    # the pods' and the PodGroups' watches are separate streams: a gang's pods can be seen
    # first, and must not be bound as a gang of the pods seen so far (minMember 3, 2 pods)
    objs = gang("g", 3)
    group, pods = objs[0], objs[1:]
    cluster.create(node("n1"), *pods[:2])
    cluster.scheduler()
    condition = wait_until(lambda: cluster.condition("g-0"), what="the pod says why it waits")
    assert condition["message"] == "pod group default/g not found: waiting for it"
    assert cluster.bound() == {}
    cluster.create(pods[2])
    time.sleep(0.5)
    assert cluster.bound() == {}  # all three, but no PodGroup: they still wait
    cluster.create(group)
    wait_until(lambda: len(cluster.bound()) == 3, what="the gang bound once its PodGroup came")
