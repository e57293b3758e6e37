"""A Volcano Job task's `partitionPolicy`, as the job controller and the admission webhook
turn it into pods and a PodGroup (volcano-sh/volcano at `ed72c7c8`): each case cites the
upstream test it follows.

    HyperNodes (tier 2 over two tier-1 leaves):

              s2 (tier 2)
             /           \\
       s0 (tier 1)     s1 (tier 1)
       s0-n1 s0-n2     s1-n3 s1-n4        2 cpu each; a task pod asks 2 cpu
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from solver import load_conf, load_manifests, schedule
from solver.errors import ManifestError
from solver.kube.workloads import expand_workloads
from tests.builders import pod, raw
from tests.features.topology.hypernode.fixtures import FOUR, TWO_TIERS, run

ENGINES = ["greedy", "cpsat"]
PARTITION = "volcano.sh/partition-id"
P = "partitionPolicy"


def job(replicas: int, policy: dict[str, Any] | None, **task: Any) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "w", "resources": {"requests": {"cpu": "2"}}}]}}
    spec: dict[str, Any] = {"name": "worker", "replicas": replicas, "template": template, **task}
    if policy is not None:
        spec["partitionPolicy"] = policy
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "c1"},
        "spec": {"schedulerName": "volcano", "tasks": [spec]},
    }


def expand(body: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]], list[str]]:
    objects, notes = expand_workloads(raw(body))
    bodies = [o.body for o in objects]
    group = next(o for o in bodies if o["kind"] == "PodGroup")
    return group, [o for o in bodies if o["kind"] == "Pod"], notes


@pytest.mark.parametrize(
    ("size", "replicas", "index", "want"),
    [(2, 4, 0, "0"), (2, 4, 1, "0"), (2, 4, 2, "1"), (5, 15, 10, "2"), (1, 1, 0, "0")],
)
def test_each_pod_is_labelled_with_its_partition(
    size: int, replicas: int, index: int, want: str
) -> None:
    """`TestCreatePodWithPartitionPolicy`, `TestCreateJobPod_PartitionPolicy`,
    `TestPartitionPolicyEdgeCases` (size 1): partition id = index ÷ partitionSize."""
    policy = {"totalPartitions": replicas // size, "partitionSize": size}
    _, pods, _ = expand(job(replicas, policy))
    labels = pods[index]["metadata"]["labels"]
    assert labels[PARTITION] == want
    assert labels["volcano.sh/task-spec"] == "worker"


def test_no_partition_label_without_a_policy() -> None:
    """`TestPartitionPolicyWithoutPolicy`."""
    group, pods, _ = expand(job(2, None))
    assert all(PARTITION not in p["metadata"]["labels"] for p in pods)
    assert "subGroupPolicy" not in group["spec"]


@pytest.mark.parametrize(
    ("replicas", "total", "minimum", "size", "min_member"),
    [(6, 2, 1, 3, 3), (9, 3, 3, 3, 9), (6, 2, 0, 3, 6)],
)
def test_the_podgroup_gets_the_tasks_sub_group_policy(
    replicas: int, total: int, minimum: int, size: int, min_member: int
) -> None:
    """`TestGetSubGroupPolicy` (its three cases): subGroupSize = partitionSize,
    minSubGroups = minPartitions, the task's pods by task-spec, one sub-group per
    partition id, the partition's networkTopology; the task's minAvailable defaults to
    minPartitions × partitionSize when minPartitions > 0, else to its replicas
    (`mutate_job.go`)."""
    topology = {"mode": "hard", "highestTierAllowed": 1}
    policy = {
        "totalPartitions": total,
        "minPartitions": minimum,
        "partitionSize": size,
        "networkTopology": topology,
    }
    group, _, notes = expand(job(replicas, policy))
    assert group["spec"]["subGroupPolicy"] == [
        {
            "name": "worker",
            "subGroupSize": size,
            "minSubGroups": minimum,
            "labelSelector": {"matchLabels": {"volcano.sh/task-spec": "worker"}},
            "matchLabelKeys": [PARTITION],
            "networkTopology": topology,
        }
    ]
    assert group["spec"]["minTaskMember"] == {"worker": min_member}
    assert group["spec"]["minMember"] == min_member
    assert not any("partitionPolicy" in n for n in notes)


@pytest.mark.parametrize(
    ("replicas", "policy", "task", "field", "message"),
    [
        (4, {"totalPartitions": 0, "partitionSize": 2}, {}, P + ".totalPartitions", "TotalP"),
        (4, {"totalPartitions": 2, "partitionSize": 0}, {}, P + ".partitionSize", "PartitionS"),
        (5, {"totalPartitions": 2, "partitionSize": 2}, {}, "partitionPolicy", "'Replicas'"),
        (
            4,
            {"totalPartitions": 2, "partitionSize": 2, "minPartitions": 1},
            {"minAvailable": 3},
            "partitionPolicy",
            "'MinAvailable'",
        ),
        (
            4,
            {
                "totalPartitions": 2,
                "partitionSize": 2,
                "networkTopology": {"highestTierAllowed": 1, "highestTierName": "rack"},
            },
            {},
            "partitionPolicy.networkTopology",
            "simultaneously",
        ),
        (4, {"totalPartitions": "2", "partitionSize": 2}, {}, P + ".totalPartitions", "integer"),
    ],
)
def test_a_policy_the_webhook_rejects_is_one_line_naming_its_field(
    replicas: int, policy: dict[str, Any], task: dict[str, Any], field: str, message: str
) -> None:
    """`validatePartitionPolicy` (`admit_job.go`), first failing rule."""
    with pytest.raises(ManifestError) as err:
        expand(job(replicas, policy, **task))
    text = str(err.value)
    assert f"spec.tasks[0].{field}" in text and message in text and "\n" not in text


def test_unknown_partition_fields_are_noted() -> None:
    policy = {"totalPartitions": 1, "partitionSize": 2, "spread": True}
    _, _, notes = expand(job(2, policy))
    assert any("partitionPolicy: ignored spread" in n for n in notes)


def _partitioned(replicas: int, minimum: int) -> list[dict[str, Any]]:
    """The Job's PodGroup and pods, as the controller makes them."""
    return _made(
        job(
            replicas,
            {
                "totalPartitions": replicas // 2,
                "partitionSize": 2,
                "minPartitions": minimum,
                "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
            },
        )
    )


def _made(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [o.body for o in expand_workloads(raw(body))[0]]


@pytest.mark.parametrize("engine", ENGINES)
def test_each_partition_is_placed_inside_one_leaf(engine: str) -> None:
    """Four pods in two partitions of two, hard tier 1: each partition takes one leaf."""
    placed = run([*FOUR, *TWO_TIERS, *_partitioned(4, 2)], engine).placed
    assert len(placed) == 4
    for part in ((0, 1), (2, 3)):
        assert len({placed[f"c1/train-worker-{i}"][:2] for i in part}) == 1


@pytest.mark.parametrize("engine", ENGINES)
def test_min_partitions_lets_the_job_run_with_the_partitions_that_fit(engine: str) -> None:
    """One node of s1 busy: partition 1 cannot take a leaf of its own and does not split
    over two; minPartitions 1 makes minAvailable 2, so partition 0 runs alone, inside s0."""
    busy = pod("busy", "c1").requests(cpu="2", memory="1Gi").on("s1-n4").obj()
    placed = run([*FOUR, *TWO_TIERS, busy, *_partitioned(4, 1)], engine).placed
    assert len(placed) == 2
    assert {n[:2] for n in placed.values()} == {"s0"}
    assert run([*FOUR, *TWO_TIERS, busy, *_partitioned(4, 2)], engine).placed == {}


EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "topology"


@pytest.mark.parametrize("engine", ENGINES)
def test_volcanos_own_partition_example_places_as_its_guide_shows(engine: str) -> None:
    """docs/user-guide/how_to_use_network_topology_aware_scheduling.md §3.3.2: pods 0-3 in
    one tier-1 HyperNode (node0-3), pods 4-7 in the other (node4-7)."""
    decision = schedule(
        load_manifests(str(EXAMPLES / "volcano-partition.yaml")),
        load_conf(EXAMPLES / "volcano-hypernode.conf"),
        engine=engine,
        workers=1,
        seed=0,
    )
    placed = decision.placed
    assert len(placed) == 8
    halves = [
        {placed[f"default/network-topology-job-t0-{i}"] for i in r} for r in (range(4), range(4, 8))
    ]
    assert sorted(halves, key=sorted) == [
        {f"node{i}" for i in range(4)},
        {f"node{i}" for i in range(4, 8)},
    ]
