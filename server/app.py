"""`create_server()`: the gRPC server with the placement service, health, reflection,
interceptors, TLS and metrics, bound but not started (as grpc's own examples do)."""

from __future__ import annotations

import logging
import threading
import time
from concurrent import futures
from dataclasses import dataclass, field

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from gangplan.v1 import placement_service_pb2 as spb
from gangplan.v1 import placement_service_pb2_grpc as spb_grpc
from server.admission import HEALTH_THREADS, AdmissionInterceptor
from server.drain import Drain
from server.interceptors import AuthInterceptor, ObservabilityInterceptor
from server.lenient import add_lenient_service
from server.metrics import Metrics
from server.reflection import enable_reflection
from server.servicer import PlacementServicer, ScheduleFn
from server.settings import Settings
from server.store import SnapshotStore, settle
from server.warmup import warm_up

__all__ = ["SERVICE_NAME", "GangplanServer", "create_server"]

log = logging.getLogger("gangplan.server")

SERVICE_NAME: str = spb.DESCRIPTOR.services_by_name["PlacementService"].full_name


@dataclass
class GangplanServer:
    """A bound server; `start()` serves, `stop()` drains."""

    server: grpc.Server
    port: int
    settings: Settings
    health: health.HealthServicer
    metrics: Metrics
    store: SnapshotStore
    servicer: PlacementServicer
    admission: AdmissionInterceptor | None = None
    metrics_port: int | None = None
    _stopped: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        # The first call's lazy initialisation paid before serving; then modules,
        # descriptors and schemas, which live as long as the process, are frozen: the
        # collector's full passes (~30 ms, enough to miss a 50 ms deadline) skip them.
        warm_up()
        settle()
        # /metrics first: an address it cannot bind fails the start before any RPC is served
        if self.settings.metrics_port is not None:
            token = self.settings.token
            guard = None if self.settings.metrics_loopback or token is None else token
            self.metrics_port = self.metrics.serve(
                self.settings.metrics_host,
                self.settings.metrics_port,
                guard.get_secret_value() if guard is not None else None,
            )
        self.server.start()
        for name in ("", SERVICE_NAME):
            self.health.set(name, health_pb2.HealthCheckResponse.SERVING)

    def stop(self, grace: float | None = None) -> None:
        """Health goes NOT_SERVING, new calls are refused, in-flight calls get `grace` seconds."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        self.health.enter_graceful_shutdown()
        grace = self.settings.grace if grace is None else grace
        end = time.monotonic() + grace
        self.servicer.drain.begin(grace)  # admitted calls: budgets that end before the grace
        if self.admission is not None:
            # New calls get UNAVAILABLE from admission while the admitted ones finish; grpc's
            # own stop comes after, when it can no longer cut an admitted call short.
            self.admission.close()
            log.info(f"refusing new calls; admitted calls have {grace:g} s")
            self.admission.wait_idle(end - time.monotonic())
        self.server.stop(max(0.0, end - time.monotonic())).wait()
        self.servicer.drain.close()
        self.metrics.stop()

    def wait(self, timeout: float | None = None) -> bool:
        return self.server.wait_for_termination(timeout)


def _read(path: object) -> bytes:
    with open(str(path), "rb") as f:
        return f.read()


def create_server(
    settings: Settings | None = None, *, schedule_fn: ScheduleFn | None = None
) -> tuple[GangplanServer, int]:
    """The server and its bound port. `schedule_fn` replaces `solver.schedule` (tests)."""
    settings = settings or Settings()
    metrics = Metrics()
    interceptors: list[grpc.ServerInterceptor] = [ObservabilityInterceptor(metrics)]
    if settings.token is not None:
        interceptors.append(AuthInterceptor(settings.token.get_secret_value()))
    admission = AdmissionInterceptor(settings.workers, settings.max_queued)
    interceptors.append(admission)
    threads = settings.max_concurrent_rpcs + HEALTH_THREADS  # every admitted call has one
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=threads, thread_name_prefix="gangplan"),
        interceptors=interceptors,
        options=[
            ("grpc.max_receive_message_length", settings.max_message_bytes),
            ("grpc.max_send_message_length", settings.max_message_bytes),
            ("grpc.so_reuseport", 0),
        ],
        maximum_concurrent_rpcs=threads,
    )
    store = SnapshotStore(settings.max_snapshots, settings.max_snapshot_mb << 20)
    drain = Drain()
    servicer = PlacementServicer(settings, store, metrics, schedule_fn, drain)
    metrics.watch_snapshots(store.listing)
    add_lenient_service(spb_grpc.add_PlacementServiceServicer_to_server, servicer, server)
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection_services = enable_reflection((SERVICE_NAME, health.SERVICE_NAME), server)
    metrics.initialize(
        (
            spb.DESCRIPTOR.services_by_name["PlacementService"],
            health_pb2.DESCRIPTOR.services_by_name["Health"],
            *reflection_services,
        )
    )
    address = f"{settings.host}:{settings.port}"
    if settings.tls_cert is not None and settings.tls_key is not None:
        credentials = grpc.ssl_server_credentials(
            [(_read(settings.tls_key), _read(settings.tls_cert))],
            root_certificates=_read(settings.client_ca) if settings.client_ca else None,
            require_client_auth=settings.client_ca is not None,
        )
        port = server.add_secure_port(address, credentials)
    else:
        port = server.add_insecure_port(address)
    if port == 0:
        raise OSError(f"cannot bind {address}")
    return (
        GangplanServer(
            server, port, settings, health_servicer, metrics, store, servicer, admission
        ),
        port,
    )
