"""GPU sharing over gRPC: a snapshot with a running Koordinator share, a PlaceJob of KAI
fractions; the answer names devices and the annotation (PodPlacement.gpu_devices,
gpu_annotations); the wire round trip keeps them."""

from __future__ import annotations

import json
from typing import Any

from clients.client import Client
from gangplan.v1 import cluster_pb2 as pb
from solver.codec import decision_from_proto, decision_to_proto
from solver.decision import Decision, Placement
from tests.server.conftest import start  # noqa: F401  (the server fixture)

GPU = "nvidia.com/gpu"
ALLOCATED = "scheduling.koordinator.sh/device-allocated"


def cluster() -> pb.Cluster:
    node = pb.Node(
        name="g",
        labels={"nvidia.com/gpu.memory": "24576"},
        allocatable={"cpu": 32_000, GPU: 2, "pods": 110, "koordinator.sh/gpu-core": 200},
    )
    running = pb.Pod(
        namespace="default",
        name="r",
        node_name="g",
        requests={"cpu": 1000, "koordinator.sh/gpu-core": 70},
        annotations={
            ALLOCATED: json.dumps(
                {"gpu": [{"minor": 0, "resources": {"koordinator.sh/gpu-core": "70"}}]}
            )
        },
    )
    return pb.Cluster(nodes=[node], pods=[running])


def test_place_job_names_devices_and_annotations(start: Any) -> None:  # noqa: F811
    _, port = start()
    job = pb.Job(
        pods=[
            pb.Pod(
                namespace="default",
                name=f"k{i}",
                requests={"cpu": 1000},
                annotations={"gpu-fraction": "0.5"},
            )
            for i in range(3)
        ]
    )
    with Client(f"127.0.0.1:{port}") as client:
        client.put_snapshot(cluster(), "s")
        answer = client.place_job(job, snapshot="s")
    placed = [p for p in answer.decision.placements if p.node]
    assert len(placed) == 2  # GPU0 holds 0.7: two halves share GPU1, the third fits nowhere
    assert all(
        list(p.gpu_devices) == [1] and dict(p.gpu_annotations) == {"runai-gpu": "1"} for p in placed
    )
    pending = next(p for p in answer.decision.placements if not p.node)
    assert "had no GPU device with enough free share" in pending.reason


def test_the_wire_keeps_devices_and_annotations() -> None:
    decision = Decision(
        placements={"default/p": Placement(node="g", devices=(0, 2), annotations={"a": "b"})},
        podgroups={},
        engine="greedy",
        status="HEURISTIC",
        objective=0,
        tiers={},
        seconds=0.0,
    )
    back = decision_from_proto(decision_to_proto(decision))
    assert back.placements["default/p"].devices == (0, 2)
    assert back.placements["default/p"].annotations == {"a": "b"}
