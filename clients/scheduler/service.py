"""`gangplan scheduler` as a process: the watches, the cycle, a gangplan service (a remote
one, or one embedded in this process and called over loopback gRPC, the same public API),
HTTP probes and metrics, JSON logs, and a drain on SIGTERM.

    /healthz         200 while the process runs its loops
    /readyz          200 once every watched kind is listed and the snapshot is put
    /metrics         Prometheus text (gangplan_scheduler_*)
    /debug/decisions the latest decision per gang (what --dry-run would have done)
"""

from __future__ import annotations

import json
import logging
import signal
import socket
import threading
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from clients.client import Client
from clients.scheduler.binder import Binder
from clients.scheduler.cycle import Cycle, CycleOptions
from clients.scheduler.evict import Evictor
from clients.scheduler.kinds import KINDS, Kind
from clients.scheduler.kube import KubeApi
from clients.scheduler.leader import Gate, LeaderElector, LeaseOptions, default_identity
from clients.scheduler.metrics import SchedulerMetrics
from clients.scheduler.mirror import Mirror
from clients.scheduler.reflector import Reflector, discover_kinds
from clients.scheduler.report import Reporter
from server.app import GangplanServer, create_server
from server.main import configure_logging
from server.settings import Settings

__all__ = ["JsonLogFormatter", "SchedulerService"]

log = logging.getLogger("gangplan.scheduler")


class Stopped(Exception):
    """Stopped (SIGTERM, `stop()`) while waiting for the API server: nothing was started."""


_PLAIN = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class JsonLogFormatter(logging.Formatter):
    """One JSON object per line: time, level, message and every `extra` field."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname,
            "msg": record.getMessage(),
        }
        data.update({k: v for k, v in vars(record).items() if k not in _PLAIN})
        return json.dumps(data, default=str)


@dataclass
class SchedulerService:
    """Everything `gangplan scheduler` runs; `start()`, then `stop()` (or `run()`)."""

    api: KubeApi
    options: CycleOptions
    server: str | None = None  # HOST:PORT of a gangplan service; None: embedded
    token: str | None = None
    http_port: int | None = 10259  # kube-scheduler's secure port number; None: no HTTP
    http_host: str = "127.0.0.1"  # 0.0.0.0 in a pod, for the kubelet's probes
    bind_workers: int = 16
    lease: LeaseOptions | None = None  # --leader-elect: only the Lease's holder writes
    identity: str = field(default_factory=default_identity)
    metrics: SchedulerMetrics = field(default_factory=SchedulerMetrics)
    stop_event: threading.Event = field(default_factory=threading.Event)
    embedded: GangplanServer | None = None
    cycle: Cycle | None = None
    elector: LeaderElector | None = None
    reflectors: list[Reflector] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ready: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _http: ThreadingHTTPServer | None = None

    def start(self) -> SchedulerService:
        target = self.server
        if target is None:
            self.embedded, port = create_server(
                Settings(host="127.0.0.1", port=0, metrics_port=None)
            )
            self.embedded.start()
            target = f"127.0.0.1:{port}"
        client = Client(target, token=self.token, timeout=self.options.time_limit + 1.0)
        try:
            served, self.notes = self._discover()
        except Stopped:
            client.close()
            raise
        for note in self.notes:
            log.info(note)
        if self.lease is not None and self.server is not None:
            # replicas share that service: each keeps its own snapshot there
            self.options = replace(
                self.options, snapshot_id=f"{self.options.snapshot_id}-{socket.gethostname()}"
            )
        mirror = Mirror(served)
        gate = Gate(open_=self.lease is None)
        reporter = Reporter(self.api, on_drop=self.metrics.reports_dropped.inc, gate=gate)
        self.cycle = Cycle(
            client,
            mirror,
            Binder(self.api, mirror, self.bind_workers, gate),
            reporter,
            self.metrics,
            self.options,
            versions=dict(served),
            gate=gate,
            evictor=Evictor(self.api, mirror, gate),
        )
        if self.lease is not None:
            self.metrics.leader.set(0)

            def leading(now: bool) -> None:
                self.metrics.leader.set(1 if now else 0)
                with mirror.lock:  # wake the cycle: it decides from now on (or stops)
                    mirror.lock.notify_all()

            self.elector = LeaderElector(
                self.api, self.lease, gate, self.identity, on_change=leading
            ).start()

        def restarted(kind: str, reason: str) -> None:
            self.metrics.watch_restarts.labels(kind=kind, reason=reason).inc()

        self.cycle.heap.pause()  # until the first lists are read (`heap.py`)
        self.reflectors = [
            Reflector(self.api, kind, version, mirror, self.stop_event, restarted).start()
            for kind, version in served.items()
        ]
        if self.http_port is not None:
            self._serve_http()
        loop = threading.Thread(target=self._loop, name="cycle", daemon=True)
        loop.start()
        self._threads.append(loop)
        return self

    def _discover(self) -> tuple[dict[Kind, str], list[str]]:
        """The kinds the cluster serves; an API server not reachable yet is waited for
        (Stopped when the service is stopped meanwhile)."""
        backoff = 0.2
        while not self.stop_event.is_set():
            try:
                return discover_kinds(self.api, KINDS)
            except Exception as err:  # any failure to reach the API server
                log.warning("API server not reachable", extra={"error": str(err)[:200]})
            self.stop_event.wait(backoff)
            backoff = min(backoff * 2, 10.0)
        raise Stopped("stopped before the API server answered")

    def _loop(self) -> None:
        assert self.cycle is not None
        mirror = self.cycle.mirror
        with mirror.lock:
            while len(mirror.synced) < len(mirror.kinds) and not self.stop_event.is_set():
                mirror.lock.wait(0.2)
        while not self.stop_event.is_set():
            try:
                self.cycle.sync()
                break
            except Exception as err:
                log.warning("first snapshot not put", extra={"error": str(err)[:300]})
                self.cycle.heap.settle()  # the collector runs again while it retries
                self.stop_event.wait(1.0)
        self.cycle.heap.settle()
        self.ready.set()
        log.info("ready", extra={"kinds": len(mirror.kinds), "generation": self.cycle.generation})
        self.cycle.stopping = self.stop_event
        self.cycle.run()

    def stop(self, timeout: float = 30.0) -> None:
        """Finish the cycle in flight (its binds), the queued reports, then the rest."""
        self.stop_event.set()
        if self.cycle is not None:  # wake the loop if it waits for a change
            with self.cycle.mirror.lock:
                self.cycle.mirror.lock.notify_all()
        for t in self._threads:
            t.join(timeout)
        if self.cycle is not None:
            self.cycle.heap.resume()  # stopped before the first snapshot: collector back on
            self.cycle.binder.close()
            if self.cycle.evictor is not None:
                self.cycle.evictor.close()
            self.cycle.reporter.close()
            self.cycle.client.close()
        if self.elector is not None:  # after the binds in flight: then the Lease is let go
            self.elector.stop()
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
        if self.embedded is not None:
            self.embedded.stop(grace=1.0)

    def run(self) -> None:
        """Start, serve until SIGTERM/SIGINT, then drain (main thread only)."""

        def on_signal(signum: int, _frame: FrameType | None) -> None:
            log.info(f"received {signal.Signals(signum).name}: finishing the cycle")
            self.stop_event.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        try:
            self.start()
        except Stopped as why:
            log.info(f"{why}: nothing was scheduled")
            self.stop()
            return
        http = f", probes and metrics on :{self.http_port}" if self._http else ""
        print(
            f"gangplan scheduler: scheduling {', '.join(sorted(self.options.scheduler_names))}"
            f"{' (dry run)' if self.options.dry_run else ''}{http}",
            flush=True,
        )
        while not self.stop_event.wait(0.5):
            pass
        self.stop()
        log.info("stopped")

    # ------------------------------------------------------------------ HTTP

    def _serve_http(self) -> None:
        service = self

        class Handler(BaseHTTPRequestHandler):
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                path = self.path.split("?")[0]
                if path == "/healthz":
                    alive = all(t.is_alive() for t in service._threads)
                    self._send(200 if alive else 500, b"ok\n" if alive else b"stopped\n")
                elif path == "/readyz":
                    ok = service.ready.is_set() and not service.stop_event.is_set()
                    self._send(200 if ok else 503, b"ok\n" if ok else b"not ready\n")
                elif path == "/metrics":
                    self._send(200, generate_latest(service.metrics.registry), CONTENT_TYPE_LATEST)
                elif path == "/debug/decisions":
                    shadow = service.cycle.shadow if service.cycle else {}
                    body = json.dumps(sorted(shadow.values(), key=lambda e: e["gang"]))
                    self._send(200, body.encode(), "application/json")
                else:
                    self._send(404, b"not found\n")

            def _send(self, code: int, body: bytes, kind: str = "text/plain") -> None:
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._http = ThreadingHTTPServer((self.http_host, self.http_port or 0), Handler)
        self._http.daemon_threads = True
        self.http_port = self._http.server_address[1]
        threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
        ).start()


def setup_logging(level: str = "info") -> None:
    """JSON log lines with every `extra` field; the embedded service's one line per RPC
    only when asked for (`--log-level debug`)."""
    configure_logging(level, JsonLogFormatter())
    logging.getLogger("gangplan.server").setLevel(
        logging.DEBUG if level.lower() == "debug" else logging.WARNING
    )
