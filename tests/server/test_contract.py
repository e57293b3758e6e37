"""The gRPC error contract for what a client sends: bytes that are not the request message
get INVALID_ARGUMENT (grpcio alone answers INTERNAL), and a bug inside a call is INTERNAL
with a log line, never UNKNOWN."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status

from gangplan.v1 import cluster_pb2 as pb
from gangplan.v1 import placement_service_pb2 as spb
from server import GangplanServer
from tests.server.conftest import small_cluster

METHODS = [
    "PutSnapshot",
    "UpdateSnapshot",
    "DeleteSnapshot",
    "PlaceJob",
    "Preempt",
    "Enqueue",
    "ValidateQueues",
    "PlanCapacity",
    "Why",
    "Defragment",
]
GARBAGE = [
    b"\xff" * 16,  # an invalid tag
    b"\x0a\xff\xff\xff\xff\x0f",  # a length past the end
    b"\x12\x05abc",  # truncated
]


def _raw(port: int, method: str) -> grpc.UnaryUnaryMultiCallable:
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    return channel.unary_unary(f"/gangplan.v1.PlacementService/{method}")


@pytest.mark.parametrize("method", METHODS)
def test_malformed_request_bytes_are_invalid_argument(
    start: Callable[..., tuple[GangplanServer, int]], method: str
) -> None:
    _, port = start()
    call = _raw(port, method)
    for data in GARBAGE:
        with pytest.raises(grpc.RpcError) as err:
            call(data, timeout=10)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT, (method, data)
        assert "malformed request bytes" in (err.value.details() or "")
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
    assert health.status == health_pb2.HealthCheckResponse.SERVING


def test_a_bug_inside_a_call_is_internal_not_unknown(
    start: Callable[..., tuple[GangplanServer, int]],
) -> None:
    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise ZeroDivisionError("a bug")

    _, port = start(schedule_fn=broken)
    request = spb.PlaceJobRequest(cluster=small_cluster())
    with pytest.raises(grpc.RpcError) as err:
        _raw(port, "PlaceJob")(request.SerializeToString(), timeout=10)
    assert err.value.code() == grpc.StatusCode.INTERNAL
    assert "a bug" not in (err.value.details() or "")  # internals stay in the server log


def test_a_snapshot_id_is_bounded_and_never_echoed_whole(
    start: Callable[..., tuple[GangplanServer, int]],
) -> None:
    _, port = start()
    huge = "x" * (1 << 20)
    put = spb.PutSnapshotRequest(snapshot_id=huge, cluster=small_cluster())
    with pytest.raises(grpc.RpcError) as err:
        _raw(port, "PutSnapshot")(put.SerializeToString(), timeout=10)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert len(err.value.details() or "") < 200
    delete = spb.DeleteSnapshotRequest(snapshot_id=huge)
    with pytest.raises(grpc.RpcError) as err:
        _raw(port, "DeleteSnapshot")(delete.SerializeToString(), timeout=10)
    # an id no snapshot can have is refused as Put refuses it, not looked up
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert len(err.value.details() or "") < 200
    delete = spb.DeleteSnapshotRequest(snapshot_id="x" * 253)
    with pytest.raises(grpc.RpcError) as err:
        _raw(port, "DeleteSnapshot")(delete.SerializeToString(), timeout=10)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


def test_enum_values_the_proto_does_not_declare_are_invalid_argument(
    start: Callable[..., tuple[GangplanServer, int]],
) -> None:
    _, port = start()
    cluster = small_cluster()
    cluster.nodes[0].taints.add(key="k", effect=99)  # type: ignore[arg-type]
    pod = cluster.pods.add(namespace="default", name="p", preemption_policy=77)  # type: ignore[arg-type]
    pod.tolerations.add(key="k", operator=5)  # type: ignore[arg-type]
    cluster.gangs.add(namespace="default", name="g", min_member=1, match_policy=42)  # type: ignore[arg-type]
    request = spb.PutSnapshotRequest(cluster=cluster)
    with pytest.raises(grpc.RpcError) as err:
        _raw(port, "PutSnapshot")(request.SerializeToString(), timeout=10)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    status = rpc_status.from_call(err.value)  # type: ignore[arg-type]
    assert status is not None
    bad = error_details_pb2.BadRequest()
    status.details[0].Unpack(bad)
    assert {v.field for v in bad.field_violations} == {
        "cluster.nodes[0].taints[0].effect",
        "cluster.pods[0].preemption_policy",
        "cluster.pods[0].tolerations[0].operator",
        "cluster.gangs[0].match_policy",
    }


@pytest.mark.parametrize(
    ("method", "request_message"),
    [
        ("PlaceJob", spb.PlaceJobRequest(options=spb.SolveOptions(seed=-1))),
        ("PlaceJob", spb.PlaceJobRequest(options=spb.SolveOptions(seed=2**40, workers=1000))),
        ("PlanCapacity", spb.PlanCapacityRequest(options=spb.SolveOptions(seed=2**35))),
        ("Why", spb.WhyRequest(gang="default/x", options=spb.SolveOptions(seed=-1))),
        ("Defragment", spb.DefragmentRequest(options=spb.SolveOptions(workers=65))),
    ],
)
def test_out_of_range_search_options_are_invalid_argument(
    start: Callable[..., tuple[GangplanServer, int]], method: str, request_message: Any
) -> None:
    _, port = start()
    if method in ("PlaceJob", "Why", "Defragment"):
        request_message.cluster.CopyFrom(small_cluster())
    with pytest.raises(grpc.RpcError) as err:
        _raw(port, method)(request_message.SerializeToString(), timeout=30)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT, err.value.details()


def test_an_empty_plan_request_is_an_empty_plan(
    start: Callable[..., tuple[GangplanServer, int]],
) -> None:
    _, port = start()
    answer = spb.PlanCapacityResponse.FromString(
        _raw(port, "PlanCapacity")(spb.PlanCapacityRequest().SerializeToString(), timeout=30)
    )
    assert answer.total_pods == 0 and not answer.nodes and answer.cost == 0


def test_a_timestamp_outside_years_1_to_9999_names_the_field(
    start: Callable[..., tuple[GangplanServer, int]],
) -> None:
    _, port = start()
    request = spb.PlaceJobRequest(cluster=small_cluster())
    gang = request.job.gangs.add(namespace="default", name="g", min_member=1)
    gang.creation_time.seconds = 2**62
    request.job.pods.add(namespace="default", name="p", gang="default/g").creation_time.nanos = -5
    with pytest.raises(grpc.RpcError) as err:
        _raw(port, "PlaceJob")(request.SerializeToString(), timeout=10)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "job.gangs[0].creation_time" in (err.value.details() or "")
    assert "job.pods[0].creation_time" in (err.value.details() or "")


def test_a_deeply_nested_scheduler_conf_is_invalid_argument(
    start: Callable[..., tuple[GangplanServer, int]],
) -> None:
    _, port = start()
    request = spb.PlaceJobRequest(cluster=small_cluster())
    request.options.scheduler_conf = "[" * 100_000
    with pytest.raises(grpc.RpcError) as err:
        _raw(port, "PlaceJob")(request.SerializeToString(), timeout=10)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "options.scheduler_conf" in (err.value.details() or "")


@pytest.mark.parametrize(
    ("allocatable", "field"),
    [
        ({"cpu": 2**63 - 1}, 'cluster.nodes[0].allocatable["cpu"]'),
        ({"cpu": 8000, "nvidia.com/gpu": 2**63 - 1}, 'allocatable["nvidia.com/gpu"]'),
        ({"cpu": 8000, "nvidia.com/gpu": 10**12}, 'allocatable["nvidia.com/gpu"]'),
    ],
)
def test_amounts_no_node_holds_are_invalid_argument_not_internal(
    start: Callable[..., tuple[GangplanServer, int]], allocatable: dict[str, int], field: str
) -> None:
    """int64's maximum of a resource (or a trillion GPU devices) is refused by field path;
    it used to reach numpy and end in INTERNAL."""
    _, port = start()
    cluster = small_cluster()
    del cluster.nodes[1:]
    cluster.nodes[0].allocatable.clear()
    cluster.nodes[0].allocatable.update(allocatable)
    request = spb.PlaceJobRequest(cluster=cluster)
    with pytest.raises(grpc.RpcError) as err:
        _raw(port, "PlaceJob")(request.SerializeToString(), timeout=20)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert field in (err.value.details() or "")


def _gt(value: str) -> pb.NodeSelectorTerm:
    return pb.NodeSelectorTerm(
        match_expressions=[
            pb.NodeSelectorRequirement(key="size", operator=pb.SELECTOR_OPERATOR_GT, values=[value])
        ]
    )


@pytest.mark.parametrize(
    ("mutate", "field", "words"),
    [
        (lambda c: c.nodes[0].labels.update({"a": "b c"}), "cluster.nodes[0].labels", "label 'a'"),
        (
            lambda c: c.nodes[0].labels.update({"bad key!": "x"}),
            "cluster.nodes[0].labels",
            "qualified name",
        ),
        (
            lambda c: c.pods.add(namespace="d", name="p", labels={"x": "-y"}),
            "cluster.pods[0].labels",
            "label 'x'",
        ),
        (
            lambda c: c.pods.add(
                namespace="d", name="r", node_name=c.nodes[0].name, labels={"x": "y" * 64}
            ),
            "cluster.pods[0].labels",
            "label 'x'",
        ),
        (
            lambda c: c.pods.add(namespace="d", name="p", required_node_affinity=[_gt("٣")]),
            "values",
            "ASCII digits, within int64",
        ),
    ],
)
def test_what_the_reader_refuses_the_wire_refuses_in_the_same_words(
    start: Callable[..., tuple[GangplanServer, int]],
    mutate: Callable[[pb.Cluster], object],
    field: str,
    words: str,
) -> None:
    _, port = start()
    cluster = small_cluster()
    mutate(cluster)
    with pytest.raises(grpc.RpcError) as err:
        _raw(port, "PlaceJob")(spb.PlaceJobRequest(cluster=cluster).SerializeToString(), timeout=20)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert field in (err.value.details() or "") and words in (err.value.details() or "")
