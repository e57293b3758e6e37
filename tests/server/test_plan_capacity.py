"""PlanCapacity end to end: a real server on 127.0.0.1:0."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from clients.client import Client, ClientError
from gangplan.v1 import cluster_pb2 as pb
from gangplan.v1 import placement_service_pb2 as spb
from gangplan.v1 import placement_service_pb2_grpc as spb_grpc
from tests.server.conftest import GPU, gang_job, small_cluster


def _stub(port: int) -> tuple[grpc.Channel, spb_grpc.PlacementServiceStub]:
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    return channel, spb_grpc.PlacementServiceStub(channel)


def _catalog() -> list[spb.PlanNodeType]:
    return [
        spb.PlanNodeType(
            name="gpu4", cost=10, gpu_model="A100", allocatable={"cpu": 32_000, GPU: 4}
        ),
        spb.PlanNodeType(name="gpu8", cost=25, allocatable={"cpu": 64_000, GPU: 8}, max_count=1),
    ]


def test_plan_capacity_on_an_inline_cluster(start: Any) -> None:
    _, port = start()
    channel, stub = _stub(port)
    with channel:
        # 3 free 4-GPU nodes hold 3 of the gang's 5 pods; 2 more gpu4 nodes are cheapest
        answer = stub.PlanCapacity(
            spb.PlanCapacityRequest(
                cluster=small_cluster(nodes=3, gpus=4),
                workload=gang_job("train", 5, gpus=4),
                node_types=_catalog(),
                options=spb.SolveOptions(workers=1, seed=1),
            ),
            timeout=20,
        )
    added = {n.node_type: n.count for n in answer.nodes if not n.existing}
    assert added == {"gpu4": 2}
    assert answer.cost == 20 and answer.placed_pods == 5 == answer.total_pods
    assert answer.status == "OPTIMAL" and answer.gap == 0
    assert {u.resource for u in answer.utilisation} >= {"cpu", "gpu"}


def test_plan_capacity_without_a_cluster_reports_leftovers(start: Any) -> None:
    _, port = start()
    job = gang_job("big", 1, gpus=16)
    channel, stub = _stub(port)
    with channel:
        answer = stub.PlanCapacity(
            spb.PlanCapacityRequest(workload=job, node_types=_catalog()), timeout=20
        )
    assert answer.placed_pods == 0 and not answer.nodes
    (left,) = answer.unplaced
    assert left.jobs == ["default/big"] and "2 Insufficient nvidia.com/gpu" in left.reason


def test_plan_capacity_bad_catalogue_is_invalid_argument(start: Any) -> None:
    _, port = start()
    channel, stub = _stub(port)
    bad = spb.PlanNodeType(name="x", cost=-1, allocatable={"cpu": 1})
    with channel, pytest.raises(grpc.RpcError) as err:
        stub.PlanCapacity(spb.PlanCapacityRequest(workload=pb.Job(), node_types=[bad]), timeout=20)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "node_types[0].cost" in (err.value.details() or "")  # the request's field names


@pytest.mark.parametrize(
    ("value", "placed", "gpu_ratio"),
    [(spb.PLAN_VALUE_UNSPECIFIED, 2, 0.0), (spb.PLAN_VALUE_GPU, 1, 1.0)],
)
def test_plan_capacity_value_decides_what_a_full_cluster_runs(
    start: Any, value: int, placed: int, gpu_ratio: float
) -> None:
    # one 4-CPU, 1-GPU node and no catalogue: two 2-CPU pods, or one 4-CPU GPU pod
    _, port = start()
    cluster = pb.Cluster(
        nodes=[pb.Node(name="n0", allocatable={"cpu": 4000, "memory": 2**34, GPU: 1})]
    )
    job = pb.Job(
        pods=[
            pb.Pod(namespace="default", name="cpu-a", requests={"cpu": 2000}),
            pb.Pod(namespace="default", name="cpu-b", requests={"cpu": 2000}),
            pb.Pod(namespace="default", name="train", requests={"cpu": 4000, GPU: 1}),
        ]
    )
    channel, stub = _stub(port)
    with channel:
        answer = stub.PlanCapacity(
            spb.PlanCapacityRequest(cluster=cluster, workload=job, value=value), timeout=20
        )
    assert answer.placed_pods == placed and answer.total_pods == 3
    (gpu,) = [u for u in answer.utilisation if u.resource == "gpu"]
    assert gpu.ratio == gpu_ratio


def test_the_python_client_plans_on_a_stored_snapshot_and_budget(start: Any) -> None:
    _, port = start()
    with Client(f"127.0.0.1:{port}") as client:
        client.put_snapshot(small_cluster(nodes=3, gpus=4), "prod")
        answer = client.plan_capacity(
            gang_job("train", 5, gpus=4), _catalog(), snapshot="prod", workers=1, seed=1,
            timeout=20,
        )  # fmt: skip
        assert {n.node_type: n.count for n in answer.nodes if not n.existing} == {"gpu4": 2}
        capped = client.plan_capacity(
            gang_job("train", 5, gpus=4), _catalog(), snapshot="prod", budget=15, workers=1,
            timeout=20,
        )  # fmt: skip
        assert capped.cost <= 15 and capped.placed_pods < 5
        with pytest.raises(ClientError) as err:
            client.plan_capacity(pb.Job(), [spb.PlanNodeType(name="x", cost=-1)], timeout=20)
        assert err.value.code is grpc.StatusCode.INVALID_ARGUMENT and err.value.violations


def test_a_node_types_cpu_is_read_in_milli_as_the_wire_says(start: Any) -> None:
    """`PlanNodeType.allocatable` is in integer units, cpu in milli: 4,000 is 4 cores. A
    pod of 6 cores fits no node of 4 (read as 4,000 cores, one node would take it)."""
    job = pb.Job(pods=[pb.Pod(namespace="default", name="wide", requests={"cpu": 6_000})])
    small = spb.PlanNodeType(name="cpu4", cost=1, allocatable={"cpu": 4_000, "pods": 110})
    _, port = start()
    channel, stub = _stub(port)
    with channel:
        answer = stub.PlanCapacity(
            spb.PlanCapacityRequest(workload=job, node_types=[small]), timeout=20
        )
    assert answer.placed_pods == 0 and not answer.nodes
