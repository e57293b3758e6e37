"""gRPC health v1 (`grpc/health/v1/health.proto`): `Check` without a token, `Watch` streaming
every change until the client goes, and how a `Watch` that ends is counted and logged: at
the client's deadline or on its cancel, never OK."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from typer.testing import CliRunner

from clients.cli import app
from clients.client import Client
from tests.server.scrape import rpc, samples, scrape

Status = health_pb2.HealthCheckResponse
WATCH = rpc("Watch", "grpc.health.v1.Health", "server_stream")


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def codes(self, method: str) -> list[str]:
        return [getattr(r, "code", "") for r in self.records if getattr(r, "method", "") == method]


@pytest.fixture
def rpc_log() -> Iterator[Records]:
    """The server's one-line-per-RPC log, as records."""
    logger = logging.getLogger("gangplan.server")
    records, level = Records(), logger.level
    logger.addHandler(records)
    logger.setLevel(logging.INFO)
    yield records
    logger.removeHandler(records)
    logger.setLevel(level)


def _watch_handled(port: int | None, code: str | None = None) -> dict[str, float]:
    """Watch calls handled, by code (non-zero only); the server records a stream's end on its
    own thread just after the client sees it, so wait up to 5 s for one (or one `code`)."""
    deadline = time.monotonic() + 5
    while True:
        got = samples(scrape(port))
        handled = {
            dict(labels)["grpc_code"]: value
            for (name, labels), value in got.items()
            if name == "grpc_server_handled_total" and labels >= WATCH and value
        }
        if (handled if code is None else code in handled) or time.monotonic() > deadline:
            return handled
        threading.Event().wait(0.05)


def test_check_needs_no_token(start: Any) -> None:
    _, port = start(token="s3cret")
    with Client(f"127.0.0.1:{port}") as client:
        assert client.health() == "SERVING"
        assert client.health("gangplan.v1.PlacementService") == "SERVING"


def test_watch_streams_every_change_until_the_client_cancels(start: Any, rpc_log: Records) -> None:
    srv, port = start(metrics_port=0)
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        watch = health_pb2_grpc.HealthStub(channel).Watch(health_pb2.HealthCheckRequest())
        assert next(watch).status == Status.SERVING
        srv.health.set("", Status.NOT_SERVING)
        assert next(watch).status == Status.NOT_SERVING
        srv.health.set("", Status.SERVING)
        assert next(watch).status == Status.SERVING
        watch.cancel()
    assert _watch_handled(srv.metrics_port) == {"Canceled": 1}
    sent = samples(scrape(srv.metrics_port))["grpc_server_msg_sent_total", WATCH]
    assert sent == 3
    assert rpc_log.codes("/grpc.health.v1.Health/Watch") == ["CANCELLED"]


def test_a_watch_ending_at_the_clients_deadline_is_not_ok(start: Any, rpc_log: Records) -> None:
    srv, port = start(metrics_port=0)
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        watch = stub.Watch(health_pb2.HealthCheckRequest(service=""), timeout=1.0)
        assert next(watch).status == Status.SERVING
        with pytest.raises(grpc.RpcError) as ended:
            next(watch)  # no change within the deadline: the stream ends with it
        assert ended.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
    # grpc-go's health server ends such a stream Canceled (the client's RST can arrive just
    # before the server's own deadline); either way not OK
    handled = _watch_handled(srv.metrics_port)
    assert handled in ({"DeadlineExceeded": 1}, {"Canceled": 1}), handled
    (logged,) = rpc_log.codes("/grpc.health.v1.Health/Watch")
    assert logged in ("DEADLINE_EXCEEDED", "CANCELLED")


def test_watching_an_unknown_service_waits_for_it(start: Any) -> None:
    """The protocol: SERVICE_UNKNOWN, the stream stays open, and the status once it exists."""
    srv, port = start()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        watch = stub.Watch(health_pb2.HealthCheckRequest(service="later"), timeout=5)
        assert next(watch).status == Status.SERVICE_UNKNOWN
        srv.health.set("later", Status.SERVING)
        assert next(watch).status == Status.SERVING
        watch.cancel()


def test_a_watcher_sees_not_serving_when_the_server_drains(start: Any) -> None:
    srv, port = start()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        watch = stub.Watch(health_pb2.HealthCheckRequest(service=""), timeout=5)
        assert next(watch).status == Status.SERVING
        stopping = threading.Thread(target=srv.stop, args=(1.0,))
        stopping.start()
        assert next(watch).status == Status.NOT_SERVING
        watch.cancel()
        stopping.join(5)


def test_the_health_command_is_a_probe(start: Any) -> None:
    srv, port = start(token="s3cret")
    probe = ["health", "--server", f"127.0.0.1:{port}", "--timeout", "2"]
    serving = CliRunner().invoke(app, probe)
    assert (serving.exit_code, serving.stdout) == (0, "SERVING\n")
    srv.health.set("", Status.NOT_SERVING)
    draining = CliRunner().invoke(app, probe)
    assert (draining.exit_code, draining.stdout) == (1, "NOT_SERVING\n")
    srv.stop(0)
    gone = CliRunner().invoke(app, probe)
    assert gone.exit_code == 2 and "UNAVAILABLE" in gone.output


def test_a_stream_refused_before_it_starts_is_counted_with_its_code(start: Any) -> None:
    """Reflection needs the token: refused at once, it is handled `Unauthenticated`."""
    srv, port = start(token="s3cret", metrics_port=0)
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = channel.stream_stream("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo")
        with pytest.raises(grpc.RpcError) as refused:
            list(call(iter([b""]), timeout=5))
        assert refused.value.code() is grpc.StatusCode.UNAUTHENTICATED
        assert "x-request-id" in dict(refused.value.initial_metadata())  # as for unary calls
    reflect = rpc("ServerReflectionInfo", "grpc.reflection.v1.ServerReflection", "bidi_stream")
    got = samples(scrape(srv.metrics_port))
    assert got["grpc_server_started_total", reflect] == 1
    assert got["grpc_server_handled_total", reflect | {("grpc_code", "Unauthenticated")}] == 1
