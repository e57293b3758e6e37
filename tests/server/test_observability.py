"""Health, reflection (v1 and v1alpha) and the metrics a Prometheus scrape sees, named as
the gRPC ecosystem names them."""

from __future__ import annotations

import re
import threading
import time
import urllib.request
from typing import Any

import grpc
import pytest
from google.protobuf import descriptor_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2
from typer.testing import CliRunner

from clients.cli import app
from clients.client import Client, ClientError
from gangplan.v1 import cluster_pb2 as pb
from gangplan.v1 import placement_service_pb2 as spb
from gangplan.v1 import placement_service_pb2_grpc as spb_grpc
from server.metrics import GRPC_CODE_NAMES
from tests.server.conftest import gang_job, gpu_pod, small_cluster

SERVICES = {
    "gangplan.v1.PlacementService",
    "grpc.health.v1.Health",
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
}


def _client(port: int, **kw: Any) -> Client:
    return Client(f"127.0.0.1:{port}", **kw)


def _reflect(
    channel: grpc.Channel, version: str, *requests: reflection_pb2.ServerReflectionRequest
) -> list[reflection_pb2.ServerReflectionResponse]:
    """Reflection over `grpc.reflection.<version>`: v1 and v1alpha messages are the same
    bytes, so v1alpha's classes encode a v1 client's requests exactly."""
    call = channel.stream_stream(
        f"/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo",
        request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
        response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
    )
    return list(call(iter(requests), timeout=5))


@pytest.mark.parametrize("version", ["v1", "v1alpha"])
def test_reflection_lists_and_describes_in_both_versions(start: Any, version: str) -> None:
    _, port = start()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        listed, placement, own = _reflect(
            channel,
            version,
            reflection_pb2.ServerReflectionRequest(list_services=""),
            reflection_pb2.ServerReflectionRequest(
                file_containing_symbol="gangplan.v1.PlacementService"
            ),
            reflection_pb2.ServerReflectionRequest(
                file_containing_symbol=f"grpc.reflection.{version}.ServerReflection"
            ),
        )
    assert {s.name for s in listed.list_services_response.service} == SERVICES
    files = [
        descriptor_pb2.FileDescriptorProto.FromString(raw)
        for raw in placement.file_descriptor_response.file_descriptor_proto
    ]
    assert "PlaceJob" in {m.name for f in files for s in f.service for m in s.method}
    (reflection_file,) = [
        descriptor_pb2.FileDescriptorProto.FromString(raw)
        for raw in own.file_descriptor_response.file_descriptor_proto
    ]
    assert reflection_file.package == f"grpc.reflection.{version}"
    (method,) = reflection_file.service[0].method
    assert method.input_type == f".grpc.reflection.{version}.ServerReflectionRequest"


def test_health_check_needs_no_token(start: Any) -> None:
    _, port = start(token="s3cret")
    with _client(port) as client:
        assert client.health() == "SERVING"
        assert client.health("gangplan.v1.PlacementService") == "SERVING"


def test_health_watch_streams_until_the_client_goes(start: Any) -> None:
    srv, port = start(metrics_port=0)
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        watch = stub.Watch(health_pb2.HealthCheckRequest(service=""), timeout=1.0)
        first = next(watch)
        assert first.status == health_pb2.HealthCheckResponse.SERVING
        with pytest.raises(grpc.RpcError) as ended:
            next(watch)  # no change within the deadline: the stream ends with it
        assert ended.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
    # grpc-go's health server ends such a stream Canceled (the client's RST arrives just before
    # the server's own deadline); either way it is not OK
    text = _scrape_until(srv.metrics_port, "grpc_server_handled_total{")
    watch = 'grpc_method="Watch",grpc_service="grpc.health.v1.Health",grpc_type="server_stream"'
    handled = re.findall(r'grpc_server_handled_total\{grpc_code="(\w+)",' + watch + r"\} 1.0", text)
    assert handled in (["Canceled"], ["DeadlineExceeded"])
    assert _value(text, r"grpc_server_msg_sent_total\{" + watch + r"\}") == 1


def test_a_scrape_shows_the_conventional_grpc_metrics(start: Any) -> None:
    srv, port = start(metrics_port=0)
    cluster = small_cluster()
    cluster.queues.append(
        pb.Queue(name="team-a", annotations={"volcano.sh/card.quota": '{"NVIDIA-A100": 5}'})
    )
    with _client(port) as client:
        client.put_snapshot(cluster, "s")
        client.place_job(gang_job("j", 2), snapshot="s")
        with pytest.raises(ClientError):
            client.place_job(gang_job("j", 2), snapshot="missing")
        stub = spb_grpc.PlacementServiceStub(client.channel)
        _, call = stub.PlaceJob.with_call(
            spb.PlaceJobRequest(cluster=cluster, job=gang_job("j", 1)),
            metadata=(("x-request-id", "abc123"),),
            timeout=5,
        )
    assert ("x-request-id", "abc123") in call.initial_metadata()
    text = _scrape(srv.metrics_port)
    place = 'grpc_method="PlaceJob",grpc_service="gangplan.v1.PlacementService",grpc_type="unary"'
    assert _value(text, r"grpc_server_started_total\{" + place + r"\}") == 3
    assert _value(text, r'grpc_server_handled_total\{grpc_code="OK",' + place + r"\}") == 2
    assert _value(text, r'grpc_server_handled_total\{grpc_code="NotFound",' + place + r"\}") == 1
    assert _value(text, r"grpc_server_handling_seconds_count\{" + place + r"\}") == 3
    assert _value(text, r"grpc_server_msg_received_total\{" + place + r"\}") == 3
    assert _value(text, r"grpc_server_msg_sent_total\{" + place + r"\}") == 2
    assert 'grpc_server_handling_seconds_bucket{grpc_method="PlaceJob"' in text
    assert _value(text, r'gangplan_solves_total\{engine="greedy",status="HEURISTIC"\}') == 2
    assert _value(text, r"gangplan_snapshot_nodes") == 3
    assert _value(text, r"process_resident_memory_bytes") > 0
    assert "_created" not in text
    assert "/gangplan.v1.PlacementService/" not in text  # never the full path as a label


def test_queue_card_metrics_are_filled_per_snapshot_and_dropped_with_it(start: Any) -> None:
    srv, port = start(metrics_port=0)
    cluster = small_cluster()
    for node in cluster.nodes:  # GPU feature discovery's labels: 4 A100 cards each
        node.labels.update(
            {"nvidia.com/gpu.product": "NVIDIA-A100", "nvidia.com/gpu.count": "4",
             "nvidia.com/gpu.memory": "81920"}
        )  # fmt: skip
    card = {"volcano.sh/card.name": "NVIDIA-A100"}
    cluster.queues.append(
        pb.Queue(name="team-a", annotations={"volcano.sh/card.quota": '{"NVIDIA-A100": 5}'})
    )
    running = gpu_pod("r0", gang="default/run", gpus=2, node="n1")
    running.annotations.update(card)
    cluster.pods.append(running)
    cluster.gangs.append(pb.Gang(namespace="default", name="run", min_member=1, queue="team-a"))
    cluster.gangs.append(
        pb.Gang(
            namespace="default", name="wait", min_member=3, queue="team-a",
            annotations={"volcano.sh/card.request": '{"NVIDIA-A100": 3}'},
        )
    )  # fmt: skip
    with _client(port) as client:
        client.put_snapshot(cluster, "prod")
        text = _scrape(srv.metrics_port)
        series = 'card_name="NVIDIA-A100",queue_name="team-a",snapshot="prod"'
        got = {
            kind: _value(text, rf"volcano_queue_card_{kind}\{{{series}\}}")
            for kind in ("deserved", "capacity", "allocated", "request")
        }
        assert got == {"deserved": 5, "capacity": 5, "allocated": 2, "request": 5}
        client.delete_snapshot("prod")
    assert 'snapshot="prod"' not in _scrape(srv.metrics_port)


def test_grpc_code_names_are_grpc_gos() -> None:
    assert GRPC_CODE_NAMES[grpc.StatusCode.OK] == "OK"
    assert GRPC_CODE_NAMES[grpc.StatusCode.INVALID_ARGUMENT] == "InvalidArgument"
    assert GRPC_CODE_NAMES[grpc.StatusCode.DEADLINE_EXCEEDED] == "DeadlineExceeded"
    assert GRPC_CODE_NAMES[grpc.StatusCode.UNAUTHENTICATED] == "Unauthenticated"
    assert GRPC_CODE_NAMES[grpc.StatusCode.CANCELLED] == "Canceled"
    assert len(GRPC_CODE_NAMES) == 17


def _scrape(port: int | None) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        text: str = answer.read().decode()
    return text


def _scrape_until(port: int | None, *needles: str) -> str:
    """The server records a stream's end on its own thread, just after the client sees it."""
    deadline = time.monotonic() + 5
    while True:
        text = _scrape(port)
        if all(n in text for n in needles) or time.monotonic() > deadline:
            return text
        threading.Event().wait(0.05)


def _value(text: str, pattern: str) -> float:
    match = re.search(pattern + r" ([0-9.e+]+)", text)
    assert match, pattern
    return float(match.group(1))


def test_the_health_command_is_a_probe(start: Any) -> None:
    srv, port = start(token="s3cret")
    probe = ["health", "--server", f"127.0.0.1:{port}", "--timeout", "2"]
    serving = CliRunner().invoke(app, probe)
    assert (serving.exit_code, serving.stdout) == (0, "SERVING\n")
    srv.health.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
    draining = CliRunner().invoke(app, probe)
    assert (draining.exit_code, draining.stdout) == (1, "NOT_SERVING\n")
    srv.stop(0)
    gone = CliRunner().invoke(app, probe)
    assert gone.exit_code == 2 and "UNAVAILABLE" in gone.output
