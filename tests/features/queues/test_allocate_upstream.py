"""Volcano's own allocate action tests (pkg/scheduler/actions/allocate/allocate_test.go,
`TestAllocate`, at ed72c7c8), translated: the same nodes, pods, PodGroups (phase
Inqueue), queues and tier (gang: job order, ready, pipelined, starving; drf: preemptable,
job order; proportion: queue order, reclaimable, allocatable; predicates; nodeorder);
the allocate action only. The same binds.

"master's min member can not be allocated" is the PodGroup's `minTaskMember`: two masters
are required and the one master node takes one, so nothing is bound (`features/gang`).

"two Jobs on one node" is Volcano's allocate loop: PodGroups of no minMember, so each
job is ready at once and takes one task a turn (`features/queues/loop.py`):

    n1  2 cpu            queue c1: pg1-p-1, pg1-p-2 (1 cpu each)
                         queue c2: pg2-p-1, pg2-p-2 (1 cpu each)
    binds: pg1-p-1 and pg2-p-1, one each
"""

from __future__ import annotations

from typing import Any

import pytest

from solver import SchedulerConf, schedule, verify
from solver.config import PluginConf, TierConf
from tests.builders import model, node, pod, podgroup, queue

TASK_SPEC = "volcano.sh/task-spec"
CONF = SchedulerConf(
    actions=("allocate",),
    tiers=(
        TierConf(
            plugins=[
                PluginConf.model_validate(p)
                for p in (
                    {"name": "gang", "enableJobOrder": True, "enableJobReady": True,
                     "enableJobPipelined": True, "enableJobStarving": True},
                    {"name": "drf", "enablePreemptable": True, "enableJobOrder": True},
                    {"name": "proportion", "enableQueueOrder": True, "enableReclaimable": True,
                     "enabledAllocatable": True, "enabledOverused": False,
                     "enableJobEnqueued": False},
                    {"name": "predicates"},
                    {"name": "nodeorder"},
                )
            ]
        ),
    ),
)  # fmt: skip


def pg(name: str, ns: str, q: str, min_member: int, tasks: dict[str, int] | None = None) -> Any:
    """util.BuildPodGroup: phase Inqueue."""
    out = podgroup(name, min_member, "volcano", namespace=ns)
    out["spec"]["queue"] = q
    if tasks is not None:
        out["spec"]["minTaskMember"] = tasks
    out["status"] = {"phase": "Inqueue"}
    return out


def p(ns: str, name: str, cpu: str, mem: str, group: str, role: str = "", on: str = "") -> Any:
    """util.BuildPod: pending; a role is the label `volcano.sh/task-spec` and the node
    selector `nodeRole`."""
    b = pod(name, ns).annotate("scheduling.k8s.io/group-name", group).requests(cpu=cpu, memory=mem)
    if role:
        b = b.label(TASK_SPEC, role).selector(nodeRole=on)
    return b.obj()


def n(name: str, cpu: str, mem: str, role: str = "") -> Any:
    b = node(name).cpu(cpu).memory(mem).pods(10)
    return (b.label("nodeRole", role) if role else b).obj()


CASES = [
    ("prepredicate failed: node selector does not match",
     [pg("pg1", "c1", "c1", 1),
      p("c1", "p1", "1", "1G", "pg1", "master", "master"),
      p("c1", "p2", "1", "1G", "pg1", "worker", "worker"),
      n("n1", "2", "4Gi", "worker"), queue("c1", weight=1)],
     {"c1/p2": "n1"}),
    ("prepredicate failed and tasks are not used up, continue on until min member meet",
     [pg("pg1", "c1", "c1", 2, {"master": 1, "worker": 1}),
      p("c1", "p0", "1", "1G", "pg1", "master", "master"),
      p("c1", "p1", "1", "1G", "pg1", "master", "master"),
      p("c1", "p2", "1", "1G", "pg1", "worker", "worker"),
      p("c1", "p3", "1", "1G", "pg1", "worker", "worker"),
      n("n1", "1", "2Gi", "master"), n("n2", "1", "2Gi", "worker"), queue("c1", weight=1)],
     {"c1/p0": "n1", "c1/p2": "n2"}),
    ("master's min member can not be allocated, break from allocating",
     [pg("pg1", "c1", "c1", 2, {"master": 2, "worker": 0}),
      *(p("c1", f"p{i}", "1", "1G", "pg1", "master", "master") for i in range(2)),
      *(p("c1", f"p{i}", "1", "1G", "pg1", "worker", "worker") for i in range(2, 4)),
      n("n1", "1", "2Gi", "master"), n("n2", "2", "2Gi", "worker"), queue("c1", weight=1)],
     {}),
    ("one Job with two Pods on one node",
     [pg("pg1", "c1", "c1", 0),
      p("c1", "p1", "1", "1G", "pg1"), p("c1", "p2", "1", "1G", "pg1"),
      n("n1", "2", "4Gi"), queue("c1", weight=1)],
     {"c1/p1": "n1", "c1/p2": "n1"}),
    ("two Jobs on one node",
     [pg("pg1", "c1", "c1", 0), pg("pg2", "c2", "c2", 0),
      p("c1", "pg1-p-1", "1", "1G", "pg1"), p("c1", "pg1-p-2", "1", "1G", "pg1"),
      p("c2", "pg2-p-1", "1", "1G", "pg2"), p("c2", "pg2-p-2", "1", "1G", "pg2"),
      n("n1", "2", "4G"), queue("c1", weight=1), queue("c2", weight=1)],
     {"c2/pg2-p-1": "n1", "c1/pg1-p-1": "n1"}),
    ("high priority queue should not block others",
     [pg("pg1", "c1", "c1", 0), pg("pg2", "c1", "c2", 0),
      p("c1", "p1", "3", "1G", "pg1"), p("c1", "p2", "1", "1G", "pg2"),
      n("n1", "2", "4G"), queue("c1", weight=1), queue("c2", weight=1)],
     {"c1/p2": "n1"}),
]  # fmt: skip


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
@pytest.mark.parametrize(("name", "objects", "expected"), CASES, ids=[c[0] for c in CASES])
def test_allocate_upstream(
    name: str, objects: list[Any], expected: dict[str, str], engine: str
) -> None:
    cluster = model(*objects)
    decision = schedule(cluster, CONF, engine=engine, workers=1)
    assert verify(cluster, CONF, decision) == []
    assert decision.placed == expected, name
