"""The gRPC error contract for what a client sends: bytes that are not the request message
get INVALID_ARGUMENT (grpcio alone answers INTERNAL), and a bug inside a call is INTERNAL
with a log line, never UNKNOWN."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

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
