"""KAI's fair share where it meets the other features: a KAI PodGroup's required topology
level, priority preemption (`preempt=True`), GPU sharing (in `test_kai_queues.py`), and
the defragmentation planner's room for a gang. Every Decision is verified inside
`schedule`, whose independent rule (`verify/_kai.py`) holds the limits.

    cluster: zone A (a0, a1), zone B (b0, b1), 4 GPUs a node
    dept (no quota, no limit) ── team-a (GPU limit 8), team-b (GPU limit -1)
"""

from __future__ import annotations

from typing import Any

import pytest

from solver import SchedulerConf, schedule
from solver.defrag import DefragGoal, defragment
from solver.kube import load_objects
from solver.schedule import snapshot_of
from tests.builders import raw
from tests.features.kaishare.test_kai_queues import UNLIMITED

GPU = "nvidia.com/gpu"
ZONE = "topology.kubernetes.io/zone"
ENGINES = ["greedy", "cpsat"]


def queue(name: str, parent: str | None, limit: float) -> dict[str, Any]:
    spec: dict[str, Any] = {"resources": {
        "gpu": {"quota": 0, "limit": limit, "overQuotaWeight": 1},
        "cpu": dict(UNLIMITED), "memory": dict(UNLIMITED)}}  # fmt: skip
    if parent:
        spec["parentQueue"] = parent
    return {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": name},
            "spec": spec}  # fmt: skip


def cluster() -> list[dict[str, Any]]:
    return [
        *({"apiVersion": "v1", "kind": "Node",
           "metadata": {"name": n, "labels": {ZONE: n[0].upper()}},
           "status": {"allocatable": {"cpu": "32", "memory": "128Gi", GPU: "4", "pods": "110"}}}
          for n in ("a0", "a1", "b0", "b1")),
        *({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": n},
           "value": v} for n, v in (("train", 50), ("high", 90))),
        queue("dept", None, -1), queue("team-a", "dept", 8), queue("team-b", "dept", -1),
    ]  # fmt: skip


def job(name: str, queue: str, pods: int, gpus: int, cls: str = "train",
        node: str | None = None, zone: bool = False) -> list[dict[str, Any]]:  # fmt: skip
    spec: dict[str, Any] = {"minMember": pods, "queue": queue, "priorityClassName": cls}
    if zone:
        spec["topologyConstraint"] = {"requiredTopologyLevel": ZONE}
    out: list[dict[str, Any]] = [{"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup",
                                  "metadata": {"name": name, "namespace": "default"}, "spec": spec}]  # fmt: skip
    for i in range(pods):
        pod: dict[str, Any] = {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{name}-{i}", "namespace": "default",
                         "annotations": {"pod-group-name": name}},
            "spec": {"schedulerName": "kai-scheduler", "priorityClassName": cls,
                     "containers": [{"name": "c", "resources": {
                         "requests": {GPU: str(gpus), "cpu": "1"}, "limits": {GPU: str(gpus)}}}]},
        }  # fmt: skip
        if node:
            pod["spec"]["nodeName"] = node
            pod["status"] = {"phase": "Running"}
        out.append(pod)
    return out


def run(objs: list[dict[str, Any]], engine: str, preempt: bool = False) -> Any:
    snapshot = snapshot_of(load_objects(raw(*objs)))
    return schedule(snapshot, SchedulerConf.default(), engine=engine, workers=1, preempt=preempt)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_required_zone_and_the_queue_limit_both_hold(engine: str) -> None:
    """team-a (limit 8) asks for 3 pods × 4 GPUs in one zone: the zone could hold 2 of
    them but the gang needs 3 → waits; 2 pods × 4 GPUs in one zone run, inside zone A or
    B whole."""
    big = run([*cluster(), *job("big", "team-a", 3, 4, zone=True)], engine)
    assert not big.podgroups["default/big"].placed
    ok = run([*cluster(), *job("ok", "team-a", 2, 4, zone=True)], engine)
    zones = {p.node[0] for p in ok.placements.values() if p.node}
    assert ok.podgroups["default/ok"].placed and len(zones) == 1


@pytest.mark.parametrize("engine", ENGINES)
def test_priority_preemption_never_takes_a_queue_past_its_limit(engine: str) -> None:
    """team-a already runs 4 GPUs of a job as high as the newcomer (limit 8); a high-priority
    team-a job asking 8 more would need its limit exceeded: evicting team-b's pods makes
    node room but no quota, so nothing is evicted and it waits. One asking 4 runs within
    the limit, evicting lower-priority pods for the room."""
    objs = [*cluster(), *job("old-a", "team-a", 1, 4, "high", node="a0"),
            *(o for n in ("a1", "b0", "b1") for o in job(f"b-{n}", "team-b", 1, 4, node=n))]  # fmt: skip
    over = run([*objs, *job("hi", "team-a", 2, 4, "high")], engine, preempt=True)
    got = [p for k, p in over.placements.items() if k.startswith("default/hi")]
    assert not any(p.node or p.nominated for p in got) and not over.victims
    within = run([*objs, *job("hi", "team-a", 1, 4, "high")], engine, preempt=True)
    (hi,) = [p for k, p in within.placements.items() if k.startswith("default/hi")]
    assert hi.node or hi.nominated


def test_room_for_a_gang_keeps_its_queue_limit() -> None:
    """Defragmentation's room for a pending gang schedules the gang under the same rules:
    every node has 2 of 4 GPUs busy with team-b's pods; team-a's 2 × 4-GPU gang (limit 8) gets a
    plan that empties two nodes, its 3 × 4-GPU gang (over the limit) none."""
    busy = [o for n in ("a0", "a1", "b0", "b1") for o in job(f"s-{n}", "team-b", 1, 2, node=n)
            if o["kind"] == "Pod"]  # fmt: skip
    for pod in busy:  # single pods of team-b (running gangs do not move for a gang's room)
        pod["metadata"] = {**pod["metadata"], "annotations": {},
                           "labels": {"kai.scheduler/queue": "team-b"}}  # fmt: skip
    fits = snapshot_of(load_objects(raw(*cluster(), *busy, *job("ok", "team-a", 2, 4))))
    plan = defragment(fits, DefragGoal(gang="default/ok"), engine="cpsat", workers=1)
    assert plan.moves and len(plan.placement) == 2
    over = snapshot_of(load_objects(raw(*cluster(), *busy, *job("over", "team-a", 3, 4))))
    plan = defragment(over, DefragGoal(gang="default/over"), engine="cpsat", workers=1)
    assert not plan.moves and not plan.placement
