"""The fuzz suites' server: one real gangplan server per test module, on loopback, still
SERVING when the module ends."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from server import Settings, create_server


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    settings_ = Settings(
        host="127.0.0.1", port=0, metrics_port=None, grace=1.0, workers=2, time_limit=2.0
    )
    srv, bound = create_server(settings_)
    srv.start()
    yield bound
    with grpc.insecure_channel(f"127.0.0.1:{bound}") as channel:
        health = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(), timeout=5
        )
    srv.stop(0)
    assert health.status == health_pb2.HealthCheckResponse.SERVING
