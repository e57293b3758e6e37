"""Volcano's own hierarchical DRF tests (pkg/scheduler/plugins/drf/hdrf_test.go, `TestHDRF`,
at ed72c7c8), translated: the same node, pods, PodGroups (no minMember, phase Inqueue),
queues (weight 1, the hierarchy and its weights in annotations) and plugin switches
(drf: enableHierarchy, queue order, job order; proportion: enqueue, queue order,
reclaimable only — its allocate and overused gates are off, so the order alone decides);
the allocate action only. Upstream compares each job's allocated resources.

rescaling test:                          blocking nodes test:

      root                                        root
     /    \\                             /     /      \\      \\
  sci 50   eng 50                   pg1 25 pg2 25  pg3 25   pg4 25
   |       /     \\                   |      |     /     \\       |
  pg1   dev 50  prod 50             1 cpu  1 cpu pg31 50 pg32 50 1G
  1c 1G   |       |                                 |       |
        pg21    pg22                              1 cpu    1G
        1 cpu   1G
  node n: 10 cpu, 10G                node n: 30 cpu, 30G
  10 tasks per job                   30 tasks per job
"""

from __future__ import annotations

from typing import Any

import pytest

from solver import SchedulerConf, schedule, verify
from solver.config import PluginConf, TierConf
from tests.builders import model, node, placed_per_job, pod, podgroup, queue

CONF = SchedulerConf(
    actions=("allocate",),
    tiers=(
        TierConf(
            plugins=[
                PluginConf.model_validate(
                    {
                        "name": "drf",
                        "enableHierarchy": True,
                        "enableQueueOrder": True,
                        "enableJobOrder": True,
                    }
                ),
                PluginConf.model_validate(
                    {
                        "name": "proportion",
                        "enableJobEnqueued": True,
                        "enableQueueOrder": True,
                        "enableReclaimable": True,
                        "enabledAllocatable": False,
                        "enabledOverused": False,
                    }
                ),
            ]
        ),
    ),
)


def hqueue(name: str, hierarchy: str, weights: str) -> dict[str, Any]:
    q = queue(name, weight=1)
    q["metadata"].setdefault("annotations", {}).update(
        {"volcano.sh/hierarchy": hierarchy, "volcano.sh/hierarchy-weights": weights}
    )
    return q


def job(name: str, queue_name: str, tasks: int, cpu: str, mem: str) -> list[dict[str, Any]]:
    """makePods + a PodGroup of no minMember in phase Inqueue."""
    pg = podgroup(name, None, "volcano")
    pg["spec"]["queue"] = queue_name
    pg["status"] = {"phase": "Inqueue"}
    out = [pg]
    for i in range(tasks):
        b = pod(f"{name}-p{i}").annotate("scheduling.k8s.io/group-name", name)
        out.append(b.requests(cpu=cpu, memory=mem).obj())
    return out


RESCALING = [
    node("n").cpu("10").memory("10G").pods(110).obj(),
    hqueue("root-sci", "root/sci", "100/50"),
    hqueue("root-eng-dev", "root/eng/dev", "100/50/50"),
    hqueue("root-eng-prod", "root/eng/prod", "100/50/50"),
    *job("pg1", "root-sci", 10, "1", "1G"),
    *job("pg21", "root-eng-dev", 10, "1", "0G"),
    *job("pg22", "root-eng-prod", 10, "0", "1G"),
]
BLOCKING = [
    node("n").cpu("30").memory("30G").pods(200).obj(),
    hqueue("root-pg1", "root/pg1", "100/25"),
    hqueue("root-pg2", "root/pg2", "100/25"),
    hqueue("root-pg3-pg31", "root/pg3/pg31", "100/25/50"),
    hqueue("root-pg3-pg32", "root/pg3/pg32", "100/25/50"),
    hqueue("root-pg4", "root/pg4", "100/25"),
    *job("pg1", "root-pg1", 30, "1", "0G"),
    *job("pg2", "root-pg2", 30, "1", "0G"),
    *job("pg31", "root-pg3-pg31", 30, "1", "0G"),
    *job("pg32", "root-pg3-pg32", 30, "0", "1G"),
    *job("pg4", "root-pg4", 30, "0", "1G"),
]

CASES = [
    # name, objects, expected tasks bound per job (upstream: its allocated resources)
    ("rescaling test", RESCALING, {"pg1": 5, "pg21": 5, "pg22": 5}),  # 5 cpu 5G, 5 cpu, 5G
    ("blocking nodes test", BLOCKING,
     {"pg1": 10, "pg2": 10, "pg31": 10, "pg32": 15, "pg4": 15}),  # 10 cpu ×3, 15G ×2
]  # fmt: skip


@pytest.mark.parametrize("engine", ["greedy", "auto", "cpsat"])
@pytest.mark.parametrize(("name", "objects", "expected"), CASES, ids=[c[0] for c in CASES])
def test_hdrf_upstream(
    name: str, objects: list[Any], expected: dict[str, int], engine: str
) -> None:
    cluster = model(*objects)
    decision = schedule(cluster, CONF, engine=engine, workers=1)
    assert verify(cluster, CONF, decision) == []
    assert placed_per_job(decision, sep="-p") == expected, name
