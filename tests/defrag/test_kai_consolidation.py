"""KAI-Scheduler's consolidation, translated from its own tests (NVIDIA/KAI-Scheduler:
`pkg/scheduler/actions/integration_tests/consolidation/consolidation_test.go`,
`getConsolidateTestsMetadata`), run as `gangplan defrag --gang` — the same question planned
offline: which running pods to move so that the pending job runs.

KAI moves only preemptible jobs: `PriorityTrainNumber` (50) is, `PriorityBuildNumber` (100)
is not (`pkg/scheduler/constants/priorities.go`) — here `protect_priority=100`. Upstream's
expected moves are one of several of the same size where the nodes are symmetric; a case
then asserts the count and where the pending job lands (the node(s) emptied), and says so.
"""

from __future__ import annotations

from typing import Any

from solver.defrag import DefragGoal, defragment
from solver.kube import load_objects
from solver.schedule import snapshot_of
from tests.builders import raw
from tests.defrag.test_defrag import assert_valid
from tests.kube.test_kai_allocate import ZONE, gpu_node, job, running, topology

TRAIN, BUILD = 50, 100  # KAI's PriorityTrainNumber, PriorityBuildNumber
GANG = "default/pending-job0"


def with_priority(pod: dict[str, Any], priority: int) -> dict[str, Any]:
    pod["spec"]["priority"] = priority
    return pod


def consolidate(objects: list[dict[str, Any]], *where: str) -> Any:
    snapshot = snapshot_of(load_objects(raw(*objects)))
    goal = DefragGoal(gang=GANG, protect_priority=BUILD, topology_keys=where)
    plan = defragment(snapshot, goal, engine="cpsat", workers=1, seed=0, time_limit=10)
    assert_valid(snapshot, plan, ZONE)  # the job's own level is a where-label
    return plan


def two_nodes(priority: int) -> list[dict[str, Any]]:
    return [
        gpu_node("node0", 2),
        gpu_node("node1", 2),
        with_priority(running("running-job0", "node0"), priority),
        with_priority(running("running-job1", "node1"), priority),
        *job(1, gpus=2),
    ]


def test_1_train_job_on_each_node_and_a_pending_2_gpu_job_consolidate() -> None:
    """Upstream: running_job1 moves to node0, pending_job0 runs on node1 (one of two
    symmetric answers: here one train pod moves and the job runs on the node it left)."""
    plan = consolidate(two_nodes(TRAIN))
    assert plan.pods_moved == 1 and plan.status == "OPTIMAL"
    (move,) = plan.moves
    assert plan.placement == {"default/pending-job0-0": move.source}


def test_1_build_job_on_each_node_and_a_pending_2_gpu_job_dont_consolidate() -> None:
    plan = consolidate(two_nodes(BUILD))
    assert plan.moves == () and plan.placement == {}
    assert any("make room for gang default/pending-job0" in n for n in plan.notes)


def test_topology_consolidation_with_required_simple() -> None:
    """Six 3-GPU nodes over two zones, a 1-GPU train pod on each; a job of two 3-GPU pods
    required in one zone. Upstream moves the pods of zone2-rack2 and zone2-rack3 onto
    zone1-rack1 (2 moves) and runs the job in zone2; the zones are symmetric, so: 2 moves,
    the job on the two nodes emptied, both in one zone. The zone is a where-label by the
    job's own constraint; the rack, a level of KAI's Topology the snapshot does not keep,
    is given as `topology_keys` (`--topology-key`): without it a pod would not leave its
    rack label behind."""
    nodes = [
        gpu_node(f"zone{z}-rack{r}", 3, zone=f"zone{z}", rack=f"rack{r}")
        for z in (1, 2)
        for r in (1, 2, 3)
    ]
    pods = [
        with_priority(running(f"running-job-zone{z}-rack{r}", f"zone{z}-rack{r}"), TRAIN)
        for z in (1, 2)
        for r in (1, 2, 3)
    ]
    plan = consolidate(
        [topology(ZONE, "k8s.io/rack"), *nodes, *pods, *job(2, gpus=3, required=ZONE)]
    )
    assert plan.pods_moved == 2 and plan.status == "OPTIMAL"
    assert sorted(plan.placement.values()) == sorted(m.source for m in plan.moves)
    assert len({node.split("-")[0] for node in plan.placement.values()}) == 1
