"""The metrics a Prometheus scrape sees, named and labelled as the gRPC ecosystem names them
(go-grpc-prometheus `server_metrics.go`, go-grpc-middleware `providers/prometheus`), and the
address the `serve` banner prints."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import threading
import urllib.request
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from clients.client import Client, ClientError
from gangplan.v1 import cluster_pb2 as pb
from gangplan.v1 import placement_service_pb2 as spb
from gangplan.v1 import placement_service_pb2_grpc as spb_grpc
from server.metrics import GRPC_CODE_NAMES
from tests.server.conftest import SERVE, gang_job, gpu_pod, small_cluster
from tests.server.scrape import rpc, samples, scrape

# go-grpc-prometheus's server families: (type, help, labels) exactly as upstream declares them
GRPC_FAMILIES = {
    "grpc_server_started": (
        "counter",
        "Total number of RPCs started on the server.",
        {"grpc_type", "grpc_service", "grpc_method"},
    ),
    "grpc_server_handled": (
        "counter",
        "Total number of RPCs completed on the server, regardless of success or failure.",
        {"grpc_type", "grpc_service", "grpc_method", "grpc_code"},
    ),
    "grpc_server_msg_received": (
        "counter",
        "Total number of RPC stream messages received on the server.",
        {"grpc_type", "grpc_service", "grpc_method"},
    ),
    "grpc_server_msg_sent": (
        "counter",
        "Total number of gRPC stream messages sent by the server.",
        {"grpc_type", "grpc_service", "grpc_method"},
    ),
    "grpc_server_handling_seconds": (
        "histogram",
        "Histogram of response latency (seconds) of gRPC that had been application-level "
        "handled by the server.",
        {"grpc_type", "grpc_service", "grpc_method"},
    ),
}
# prometheus.DefBuckets, go-grpc-prometheus's default for the handling-time histogram
DEF_BUCKETS = ["0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1.0", "2.5", "5.0", "10.0"]


def _client(port: int, **kw: Any) -> Client:
    return Client(f"127.0.0.1:{port}", **kw)


@pytest.fixture
def traffic(start: Any) -> Iterator[tuple[str, str]]:
    """A server after two good PlaceJob calls and one NOT_FOUND: (scrape, request id echoed)."""
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
    echoed = dict(call.initial_metadata())["x-request-id"]
    yield scrape(srv.metrics_port), echoed


def test_the_grpc_families_are_go_grpc_prometheus_s(traffic: tuple[str, str]) -> None:
    text, _ = traffic
    families = {f.name: f for f in text_string_to_metric_families(text)}
    for name, (kind, help_text, labels) in GRPC_FAMILIES.items():
        family = families[name]
        assert (family.type, family.documentation) == (kind, help_text), name
        for sample in family.samples:
            assert set(sample.labels) - {"le"} == labels, (name, sample.labels)
    buckets = {
        s.labels["le"]
        for s in families["grpc_server_handling_seconds"].samples
        if s.name.endswith("_bucket")
    }
    assert buckets == {*DEF_BUCKETS, "+Inf"}


def test_a_scrape_counts_calls_by_service_method_and_code(traffic: tuple[str, str]) -> None:
    text, echoed = traffic
    got = samples(text)
    place = rpc("PlaceJob")
    assert echoed == "abc123"
    assert got["grpc_server_started_total", place] == 3
    assert got["grpc_server_handled_total", place | {("grpc_code", "OK")}] == 2
    assert got["grpc_server_handled_total", place | {("grpc_code", "NotFound")}] == 1
    assert got["grpc_server_handling_seconds_count", place] == 3
    assert got["grpc_server_msg_received_total", place] == 3
    assert got["grpc_server_msg_sent_total", place] == 2  # not for the call that failed
    assert got["grpc_server_handled_total", rpc("PutSnapshot") | {("grpc_code", "OK")}] == 1
    assert "/gangplan.v1.PlacementService/" not in text  # never the full path as a label


def test_every_method_is_there_at_zero_before_its_first_call(traffic: tuple[str, str]) -> None:
    """go-grpc-prometheus `InitializeMetrics`: a method's first error shows in `rate()`."""
    got = samples(traffic[0])
    for method in spb.DESCRIPTOR.services_by_name["PlacementService"].methods:
        if method.name in ("PlaceJob", "PutSnapshot"):
            continue
        labels = rpc(method.name)
        assert got["grpc_server_started_total", labels] == 0, method.name
        assert got["grpc_server_handling_seconds_count", labels] == 0
        for code in GRPC_CODE_NAMES.values():
            assert got["grpc_server_handled_total", labels | {("grpc_code", code)}] == 0
    watch = rpc("Watch", "grpc.health.v1.Health", "server_stream")
    assert got["grpc_server_started_total", watch] == 0
    reflect = rpc("ServerReflectionInfo", "grpc.reflection.v1.ServerReflection", "bidi_stream")
    assert got["grpc_server_msg_received_total", reflect] == 0


def test_solver_metrics_by_engine_and_status(traffic: tuple[str, str]) -> None:
    got = samples(traffic[0])
    greedy = frozenset({("engine", "greedy"), ("status", "HEURISTIC")})
    assert got["gangplan_solves_total", greedy] == 2
    assert got["gangplan_solve_duration_seconds_count", greedy] == 2
    assert got["gangplan_solve_duration_seconds_sum", greedy] > 0
    assert got["gangplan_snapshots", frozenset()] == 1
    assert got["gangplan_snapshot_nodes", frozenset()] == 3


def test_process_and_python_collectors_and_no_created_series(traffic: tuple[str, str]) -> None:
    text, _ = traffic
    got = samples(text)
    assert got["process_resident_memory_bytes", frozenset()] > 0
    assert got["process_cpu_seconds_total", frozenset()] > 0
    assert any(name == "python_info" for name, _ in got)
    assert any(name == "python_gc_collections_total" for name, _ in got)
    assert "_created" not in text


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
    series = frozenset(
        {("snapshot", "prod"), ("queue_name", "team-a"), ("card_name", "NVIDIA-A100")}
    )
    with _client(port) as client:
        client.put_snapshot(cluster, "prod")
        got = samples(scrape(srv.metrics_port))
        values = {
            kind: got[f"volcano_queue_card_{kind}", series]
            for kind in ("deserved", "capacity", "allocated", "request")
        }
        assert values == {"deserved": 5, "capacity": 5, "allocated": 2, "request": 5}
        # computed when scraped, per generation: the next generation's values, not a memo
        client.update_snapshot(
            spb.UpdateSnapshotRequest(snapshot_id="prod", remove_pods=["default/r0"])
        )
        got = samples(scrape(srv.metrics_port))
        assert got["volcano_queue_card_allocated", series] == 0
        assert got["volcano_queue_card_request", series] == 3
        client.delete_snapshot("prod")
    assert 'snapshot="prod"' not in scrape(srv.metrics_port)


def test_grpc_code_names_are_grpc_gos() -> None:
    assert GRPC_CODE_NAMES[grpc.StatusCode.OK] == "OK"
    assert GRPC_CODE_NAMES[grpc.StatusCode.INVALID_ARGUMENT] == "InvalidArgument"
    assert GRPC_CODE_NAMES[grpc.StatusCode.DEADLINE_EXCEEDED] == "DeadlineExceeded"
    assert GRPC_CODE_NAMES[grpc.StatusCode.UNAUTHENTICATED] == "Unauthenticated"
    assert GRPC_CODE_NAMES[grpc.StatusCode.CANCELLED] == "Canceled"
    assert len(GRPC_CODE_NAMES) == 17


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


_NO_IPV6 = pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback here")


@pytest.mark.parametrize(
    ("host", "shown"),
    [
        (None, "127.0.0.1"),
        pytest.param("::1", "[::1]", marks=_NO_IPV6),
        pytest.param("[::1]", "[::1]", marks=_NO_IPV6),
    ],
)
def test_the_banner_prints_the_address_metrics_are_bound_to(host: str | None, shown: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "GANGPLAN_METRICS_HOST"}
    if host is not None:
        env["GANGPLAN_METRICS_HOST"] = host
    with subprocess.Popen(SERVE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                          env=env) as proc:  # fmt: skip
        watchdog = threading.Timer(30, proc.kill)  # a server that never prints fails, not hangs
        watchdog.start()
        try:
            assert proc.stdout is not None
            banner = proc.stdout.readline()
            found = re.search(r"metrics on (http://(\S+):(\d+)/metrics)$", banner.strip())
            assert found, banner
            assert found.group(2) == shown
            with urllib.request.urlopen(found.group(1), timeout=5) as answer:
                assert b"grpc_server_started_total" in answer.read()
        finally:
            watchdog.cancel()
            proc.terminate()
