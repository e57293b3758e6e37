"""Pods the scheduler does not place: bound ones hold their room, finished ones hold none.

kube-scheduler schedules only pods without `spec.nodeName` (its queue's filter,
`assignedPod`); a pod with a node is in that node's NodeInfo whatever its phase, until it
is Succeeded or Failed (the scheduler cache drops terminated pods; kubelet has released
their resources). Checked on both engines, from YAML and from the protobuf snapshot
(PutSnapshot, UpdateSnapshot) the server builds.
"""

from __future__ import annotations

from typing import Any

import pytest

from gangplan.v1 import cluster_pb2 as pb
from solver import SCHEMA, schedule, snapshot_of
from solver.codec import cluster_to_proto, snapshot_from_proto
from solver.model import ClusterModel
from solver.snapshot import Delta, Snapshot
from tests.builders import model, node, pod, podgroup

ENGINES = ("greedy", "cpsat")


def two_nodes() -> list[dict[str, Any]]:
    return [node("n1").gpu(4).obj(), node("n2").gpu(4).obj()]


def through_protobuf(cluster: ClusterModel) -> Snapshot:
    message = pb.Cluster.FromString(cluster_to_proto(cluster).SerializeToString())
    return snapshot_from_proto(message, "cluster", SCHEMA)


def binding(node_name: str, phase: str | None) -> dict[str, Any]:
    """A 4-GPU pod with spec.nodeName set, in `phase` (None: no status at all)."""
    body = pod("bound").requests(gpu=4).obj()
    body["spec"]["nodeName"] = node_name
    if phase is not None:
        body["status"] = {"phase": phase}
    return body


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("phase", ["Pending", None, "Running", "Unknown"])
def test_a_pod_with_a_node_holds_its_room_and_is_never_placed_again(
    phase: str | None, engine: str
) -> None:
    # A pod bound to n1 but not yet started (phase Pending, or no status yet) is n1's:
    # the scheduler neither places it nor lets another pod use its 4 GPUs.
    cluster = model(*two_nodes(), binding("n1", phase), pod("p").requests(gpu=4).obj())
    for question in (cluster, snapshot_of(cluster), through_protobuf(cluster)):
        decision = schedule(question, engine=engine, workers=1)
        assert "default/bound" not in decision.placements
        assert decision.placements["default/p"].node == "n2"
    crowded = model(*two_nodes(), binding("n1", phase), *[
        pod(f"q{i}").requests(gpu=4).obj() for i in range(2)
    ])  # fmt: skip
    placed = schedule(crowded, engine=engine, workers=1).placements
    assert sorted(str(p.node) for p in placed.values()) == ["None", "n2"]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_bound_gang_member_counts_as_running(engine: str) -> None:
    # minMember 2: one member already has a node (not started yet), one is pending; the gang
    # needs only the one more, on the node left.
    members = [
        pod("w-0").group("w").requests(gpu=4).obj(),
        pod("w-1").group("w").requests(gpu=4).obj(),
    ]
    members[0]["spec"]["nodeName"] = "n1"
    members[0]["status"] = {"phase": "Pending"}
    cluster = model(*two_nodes(), podgroup("w", 2, "volcano"), *members)
    decision = schedule(cluster, engine=engine, workers=1)
    assert list(decision.placements) == ["default/w-1"]
    assert decision.placements["default/w-1"].node == "n2"


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_finished_pods_free_their_room(phase: str, engine: str) -> None:
    done = [pod(f"done-{n}").requests(gpu=4).on(n, phase=phase).obj() for n in ("n1", "n2")]
    cluster = model(*two_nodes(), *done, *[pod(f"p{i}").requests(gpu=4).obj() for i in (1, 2)])
    for question in (cluster, snapshot_of(cluster), through_protobuf(cluster)):
        decision = schedule(question, engine=engine, workers=1)
        assert not any(k.startswith("default/done") for k in decision.placements)
        assert sorted(str(p.node) for p in decision.placements.values()) == ["n1", "n2"]


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_finished_pod_without_a_node_is_not_placed(phase: str) -> None:
    body = pod("job").requests(gpu=1).obj()
    body["status"] = {"phase": phase}
    cluster = model(*two_nodes(), body)
    assert schedule(cluster, engine="greedy").placements == {}
    assert schedule(through_protobuf(cluster), engine="greedy").placements == {}


def test_an_update_to_a_finished_phase_frees_the_room() -> None:
    # UpdateSnapshot: the running pod on n1 finishes; its 4 GPUs are free in the next
    # generation, and it is nowhere (neither a row nor pending).
    running = pod("r").requests(gpu=4).on("n1").obj()
    snapshot = snapshot_of(model(node("n1").gpu(4).obj(), running))
    n1 = snapshot.nodes.index["n1"]
    gpu = snapshot.running.resources.index("nvidia.com/gpu")
    assert int(snapshot.usage.used[n1, gpu]) == 4
    bound = model(node("n1").gpu(4).obj(), running).pods[0]
    finished = snapshot.apply(Delta(upsert_pods=(bound.model_copy(update={"phase": "Failed"}),)))
    assert int(finished.usage.used[n1, gpu]) == 0
    assert finished.running.find("default/r") < 0 and "default/r" not in finished.pending
