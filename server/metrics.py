"""Prometheus metrics, served on their own port (`--metrics-port`).

Each server has its own `CollectorRegistry`, so several servers in one process (tests) do not
collide. Families:

    gangplan_rpc_requests_total{method,code}        finished RPCs
    gangplan_rpc_duration_seconds{method}           RPC latency (histogram)
    gangplan_solves_total{engine,status}            Decisions returned
    gangplan_solve_duration_seconds{engine}         model build + solve + verify (histogram)
    gangplan_solve_gap{engine}                      Decision.gap of the last solve with a bound
    gangplan_snapshots                              snapshots held
    gangplan_snapshot_nodes / _pods                 nodes / pods over all snapshots
    volcano_queue_card_{deserved,allocated,request,capacity}{queue_name,card_name}
        the capacity-card plugin's queue metrics (seed 002). Until the card feature lands in
        the library, `_deserved` and `_capacity` come from each stored queue's
        `volcano.sh/card.quota` annotation (the card quota is both), and `_allocated` and
        `_request` stay unset.
"""

from __future__ import annotations

import hmac
import json
import threading
from collections.abc import Iterable
from http.server import ThreadingHTTPServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import MetricsHandler

from solver.decision import Decision
from solver.model import Queue

__all__ = ["Metrics"]

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
CARD_QUOTA = "volcano.sh/card.quota"


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.rpcs = Counter(
            "gangplan_rpc_requests", "Finished RPCs.", ["method", "code"], registry=r
        )
        self.rpc_seconds = Histogram(
            "gangplan_rpc_duration_seconds",
            "RPC latency.",
            ["method"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.solves = Counter(
            "gangplan_solves", "Decisions returned.", ["engine", "status"], registry=r
        )
        self.solve_seconds = Histogram(
            "gangplan_solve_duration_seconds",
            "Model build, solve and verify.",
            ["engine"],
            buckets=_LATENCY_BUCKETS,
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
        labels = ["queue_name", "card_name"]
        self.card = {
            kind: Gauge(
                f"volcano_queue_card_{kind}",
                f"Card resources per queue: {kind}.",
                labels,
                registry=r,
            )
            for kind in ("deserved", "allocated", "request", "capacity")
        }
        self._lock = threading.Lock()
        self._http: object | None = None

    def serve(self, host: str, port: int, token: str | None = None) -> int:
        """Start /metrics on `host:port` (with `token`, only for `Bearer <token>`); returns
        the bound port."""
        handler = _handler(MetricsHandler.factory(self.registry), token)
        server = ThreadingHTTPServer((host, port), handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
        self._http = server
        bound: int = server.server_port
        return bound

    def stop(self) -> None:
        server = self._http
        if server is not None:
            server.shutdown()  # type: ignore[attr-defined]
            server.server_close()  # type: ignore[attr-defined]
            self._http = None

    def solved(self, decision: Decision, seconds: float) -> None:
        self.solves.labels(decision.engine, decision.status).inc()
        self.solve_seconds.labels(decision.engine).observe(seconds)
        gap = decision.gap
        if gap is not None:
            self.solve_gap.labels(decision.engine).set(gap)

    def snapshot_sizes(self, count: int, nodes: int, pods: int) -> None:
        self.snapshots.set(count)
        self.snapshot_nodes.set(nodes)
        self.snapshot_pods.set(pods)

    def queue_cards(self, queues: Iterable[Queue]) -> None:
        """Card quotas of the queues of a stored snapshot (see the module docstring)."""
        with self._lock:
            for queue in queues:
                try:
                    quota = json.loads(queue.annotations.get(CARD_QUOTA, "") or "{}")
                except json.JSONDecodeError:
                    continue
                if not isinstance(quota, dict):
                    continue
                for card, value in quota.items():
                    if isinstance(value, int | float) and not isinstance(value, bool):
                        self.card["deserved"].labels(queue.name, str(card)).set(value)
                        self.card["capacity"].labels(queue.name, str(card)).set(value)


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
