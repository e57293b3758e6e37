"""Prometheus metrics, served on their own port (`--metrics-port`).

Each server has its own `CollectorRegistry` (several servers in one process, as in tests, do
not collide), with the process, platform and GC collectors (`process_*`, `python_info`,
`python_gc_*`, as prometheus_client's default registry has them) and without `_created`
series. Families:

    grpc_server_started_total{grpc_type,grpc_service,grpc_method}
    grpc_server_handled_total{grpc_type,grpc_service,grpc_method,grpc_code}
    grpc_server_handling_seconds{grpc_type,grpc_service,grpc_method}      (histogram)
    grpc_server_msg_received_total / grpc_server_msg_sent_total{grpc_type,grpc_service,grpc_method}
        the standard gRPC server metrics, named and labelled as go-grpc-prometheus
        (`server_metrics.go`) and java-grpc-prometheus name them: `grpc_code` in Go's
        spelling (`OK`, `InvalidArgument`), `grpc_type` unary | server_stream | ...; every
        registered method's series exist from the start, at zero (`initialize`)
    gangplan_solves_total{engine,status}            Decisions returned
    gangplan_solve_duration_seconds{engine,status}  model build + solve + verify (histogram)
    gangplan_solve_gap{engine}                      Decision.gap of the last solve with a bound
    gangplan_snapshots                              snapshots held
    gangplan_snapshot_nodes / _pods                 nodes / pods over all snapshots
    volcano_queue_card_{deserved,capacity,allocated,request}{snapshot,queue_name,card_name}
        the capacity-card plugin's queue metrics (seed 002), per stored snapshot:
        deserved and capacity = the queue's `volcano.sh/card.quota` (the plugin's one card
        quota is both), allocated = cards its running pods hold, request = allocated plus
        the `volcano.sh/card.request` of its PodGroups that are not running yet.
"""

from __future__ import annotations

import hmac
import socket
import threading
from collections.abc import Callable, Iterable
from http.server import ThreadingHTTPServer

import grpc
from google.protobuf.descriptor import ServiceDescriptor
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import MetricsHandler
from prometheus_client.registry import Collector

from solver.decision import Decision
from solver.model import CARD_QUOTA, CARD_REQUEST, parse_quota
from solver.snapshot import Snapshot

__all__ = ["CARD_KINDS", "GRPC_CODE_NAMES", "Metrics", "grpc_type", "split_method"]

# prometheus.DefBuckets, which go-grpc-prometheus's handling-time histogram uses
_DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
_SOLVE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
_RPC_LABELS = ["grpc_type", "grpc_service", "grpc_method"]
CARD_KINDS = ("deserved", "capacity", "allocated", "request")
# grpc-go's codes.Code.String(): the spelling every gRPC dashboard filters on
# (CamelCase of the Python name, but for Go's "Canceled")
GRPC_CODE_NAMES = {
    code: "".join(part.capitalize() for part in code.name.split("_")) for code in grpc.StatusCode
} | {grpc.StatusCode.OK: "OK", grpc.StatusCode.CANCELLED: "Canceled"}

# process-wide in prometheus_client: no `_created` series anywhere
disable_created_metrics()  # type: ignore[no-untyped-call]


def split_method(full: str) -> tuple[str, str]:
    """`/pkg.Service/Method` -> (`pkg.Service`, `Method`)."""
    service, _, method = full.lstrip("/").partition("/")
    return service, method


def grpc_type(client_streaming: bool, server_streaming: bool) -> str:
    """go-grpc-prometheus's `grpc_type` label (`util.go` typeFromMethodInfo)."""
    if client_streaming:
        return "bidi_stream" if server_streaming else "client_stream"
    return "server_stream" if server_streaming else "unary"


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        ProcessCollector(registry=r)  # process_cpu_seconds_total, process_resident_memory_bytes
        PlatformCollector(registry=r)  # python_info{implementation,version,...}
        GCCollector(registry=r)  # python_gc_collections_total{generation}, ...
        self.started = Counter(
            "grpc_server_started", "Total number of RPCs started on the server.", _RPC_LABELS,
            registry=r,
        )  # fmt: skip
        self.handled = Counter(
            "grpc_server_handled",
            "Total number of RPCs completed on the server, regardless of success or failure.",
            [*_RPC_LABELS, "grpc_code"],
            registry=r,
        )
        self.handling_seconds = Histogram(
            "grpc_server_handling_seconds",
            "Histogram of response latency (seconds) of gRPC that had been application-level "
            "handled by the server.",
            _RPC_LABELS,
            buckets=_DEFAULT_BUCKETS,
            registry=r,
        )
        self.received = Counter(
            "grpc_server_msg_received", "Total number of RPC stream messages received on the server.",
            _RPC_LABELS, registry=r,
        )  # fmt: skip
        self.sent = Counter(
            "grpc_server_msg_sent", "Total number of gRPC stream messages sent by the server.",
            _RPC_LABELS, registry=r,
        )  # fmt: skip
        self.solves = Counter(
            "gangplan_solves", "Decisions returned.", ["engine", "status"], registry=r
        )
        self.verify_fallbacks = Counter(
            "gangplan_verify_fallbacks",
            "Decisions whose engine's answer failed verification, answered by another engine.",
            ["engine"],
            registry=r,
        )
        self.solve_seconds = Histogram(
            "gangplan_solve_duration_seconds",
            "Model build, solve and verify.",
            ["engine", "status"],
            buckets=_SOLVE_BUCKETS,
            registry=r,
        )
        self.solve_gap = Gauge(
            "gangplan_solve_gap",
            "Relative optimality gap of the last solve.",
            ["engine"],
            registry=r,
        )
        self.snapshots = Gauge("gangplan_snapshots", "Snapshots held.", registry=r)
        self.snapshot_nodes = Gauge(
            "gangplan_snapshot_nodes", "Nodes over all snapshots.", registry=r
        )
        self.snapshot_pods = Gauge("gangplan_snapshot_pods", "Pods over all snapshots.", registry=r)
        self._lock = threading.Lock()
        self._http: ThreadingHTTPServer | None = None

    def initialize(self, services: Iterable[ServiceDescriptor]) -> None:
        """Every method's series, at zero, before its first call, as go-grpc-prometheus's
        `ServerMetrics.InitializeMetrics` (`preRegisterMethod`: started, msg received/sent,
        handling time, and handled for every code). A series born at 1 shows no increase to
        Prometheus's `rate()`, so without this a method's first error would go unseen."""
        for service in services:
            for method in service.methods:
                kind = grpc_type(method.client_streaming, method.server_streaming)
                labels = (kind, service.full_name, method.name)
                for family in (self.started, self.received, self.sent, self.handling_seconds):
                    family.labels(*labels)
                for code in GRPC_CODE_NAMES.values():
                    self.handled.labels(*labels, code)

    def serve(self, host: str, port: int, token: str | None = None) -> int:
        """Start /metrics on `host:port` (with `token`, only for `Bearer <token>`); returns
        the bound port. `host` may be IPv6, bare or bracketed (`::1`, `[::]`)."""
        handler = _handler(MetricsHandler.factory(self.registry), token)
        server = _http_server(host.strip("[]"), port, handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
        self._http = server
        return server.server_port

    @property
    def url(self) -> str | None:
        """`http://<bound address>/metrics` while serving (IPv6 in brackets), else None."""
        server = self._http
        if server is None:
            return None
        host, port = server.server_address[:2]
        host = host.decode() if isinstance(host, bytes | bytearray) else host
        shown = f"[{host}]" if server.address_family == socket.AF_INET6 else host
        return f"http://{shown}:{port}/metrics"

    def stop(self) -> None:
        server = self._http
        if server is not None:
            server.shutdown()
            server.server_close()
            self._http = None

    def rpc_labels(self, grpc_type: str, full_method: str) -> tuple[str, str, str]:
        return (grpc_type, *split_method(full_method))

    def solved(self, decision: Decision, seconds: float) -> None:
        self.solves.labels(decision.engine, decision.status).inc()
        if decision.stats.get("verify_fallback"):
            self.verify_fallbacks.labels(decision.engine).inc()
        self.solve_seconds.labels(decision.engine, decision.status).observe(seconds)
        gap = decision.gap
        if gap is not None:
            self.solve_gap.labels(decision.engine).set(gap)

    def snapshot_sizes(self, count: int, nodes: int, pods: int) -> None:
        self.snapshots.set(count)
        self.snapshot_nodes.set(nodes)
        self.snapshot_pods.set(pods)

    def watch_snapshots(self, stored: Callable[[], Iterable[tuple[str, int, Snapshot]]]) -> None:
        """Serve the card gauges of the snapshots `stored()` lists, computed when scraped."""
        self.registry.register(_QueueCards(stored))


class _QueueCards(Collector):
    """`volcano_queue_card_*` of every stored snapshot, computed at scrape time and memoised
    per (snapshot, generation): a snapshot write pays nothing for them (on a snapshot with
    12,500 PodGroups they cost ~40 ms, too much for every UpdateSnapshot), and a deleted or
    evicted snapshot's series go with it."""

    def __init__(self, stored: Callable[[], Iterable[tuple[str, int, Snapshot]]]) -> None:
        self._stored = stored
        self._memo: dict[tuple[str, int], dict[tuple[str, str], tuple[int, int, int, int]]] = {}
        self._lock = threading.Lock()

    def describe(self) -> list[Metric]:
        return list(self._families())  # the families without samples: no scrape at registration

    def collect(self) -> list[Metric]:
        families = self._families()
        with self._lock:
            memo, self._memo = self._memo, {}
            for snapshot_id, generation, snapshot in self._stored():
                key = (snapshot_id, generation)
                values = memo[key] if key in memo else _card_values(snapshot)
                self._memo[key] = values
                for (queue, card), row in values.items():
                    for family, value in zip(families, row, strict=True):
                        family.add_metric([snapshot_id, queue, card], value)
        return list(families)

    @staticmethod
    def _families() -> list[GaugeMetricFamily]:
        labels = ["snapshot", "queue_name", "card_name"]
        return [
            GaugeMetricFamily(
                f"volcano_queue_card_{kind}", f"Card resources per queue: {kind}.", labels=labels
            )
            for kind in CARD_KINDS
        ]


def _card_values(snapshot: Snapshot) -> dict[tuple[str, str], tuple[int, int, int, int]]:
    """(queue, card) -> (deserved, capacity, allocated, request) over the snapshot's queues."""
    quota = {
        name: parse_quota(q.annotations.get(CARD_QUOTA))[0] for name, q in snapshot.queues.items()
    }
    allocated: dict[tuple[str, str], int] = {}
    running = snapshot.running
    cards = snapshot.usage.queue_cards
    for q in range(cards.shape[0]):
        for c in range(cards.shape[1]):
            if cards[q, c]:
                key = (running.queue_names.value(q), running.card_names.value(c))
                allocated[key] = int(cards[q, c])
    waiting: dict[tuple[str, str], int] = {}
    for gang in snapshot.gangs.values():
        if gang.queue is None or snapshot.gang_running(gang.id) > 0:
            continue
        for card, count in parse_quota(gang.annotations.get(CARD_REQUEST))[0].items():
            waiting[gang.queue, card] = waiting.get((gang.queue, card), 0) + count
    keys = {(q, c) for q, cs in quota.items() for c in cs} | set(allocated) | set(waiting)
    return {
        (q, c): (
            quota.get(q, {}).get(c, 0),
            quota.get(q, {}).get(c, 0),
            allocated.get((q, c), 0),
            allocated.get((q, c), 0) + waiting.get((q, c), 0),
        )
        for q, c in sorted(keys)
    }


def _http_server(host: str, port: int, handler: type[MetricsHandler]) -> ThreadingHTTPServer:
    """A server on `host:port` in the address family `host` resolves to: `HTTPServer` is
    AF_INET only, so an IPv6 host fails to bind without this (prometheus_client
    `exposition._get_best_family`, used by its `start_wsgi_server`, does the same)."""
    try:
        infos = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )  # "" (every address) as the wildcard getaddrinfo knows
    except socket.gaierror as err:
        raise OSError(f"metrics host {host!r}: {err.strerror}") from None
    family, _, _, _, address = infos[0]

    class Server(ThreadingHTTPServer):
        address_family = family

    return Server((str(address[0]), port), handler)


def _handler(base: type[MetricsHandler], token: str | None) -> type[MetricsHandler]:
    """`base`, answering 401 to a request without `Authorization: Bearer <token>`."""
    if token is None:
        return base
    expected = f"Bearer {token}".encode()

    class Authenticated(base):  # type: ignore[valid-type,misc]
        def do_GET(self) -> None:
            given = (self.headers.get("Authorization") or "").encode()
            if not hmac.compare_digest(given, expected):
                self.send_response(401)
                self.send_header("WWW-Authenticate", "Bearer")
                self.end_headers()
                return
            super().do_GET()

    return Authenticated
