"""The typed Python client of `gangplan.v1.PlacementService` (also `gangplan.Client`).

    from gangplan.v1 import cluster_pb2 as pb
    with Client("127.0.0.1:50051", token="s3cret") as client:
        client.put_snapshot(pb.Cluster(nodes=[...]), snapshot_id="prod")
        answer = client.place_job(pb.Job(gangs=[...], pods=[...]), snapshot="prod")
        answer.decision.placements   # pod -> node, or the reason it stays pending

Errors arrive as `ClientError` with the status code, the message and, for
INVALID_ARGUMENT, the field violations. Only idempotent calls (PlaceJob, Preempt, Enqueue,
ValidateQueues, PlanCapacity, Why, Defragment and the health check) are retried, by gRPC's own retry policy,
on UNAVAILABLE and RESOURCE_EXHAUSTED with exponential backoff; snapshot writes never are.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any

import grpc
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2
from grpc_status import rpc_status

from gangplan.v1 import cluster_pb2 as pb
from gangplan.v1 import placement_service_pb2 as spb
from gangplan.v1 import placement_service_pb2_grpc as spb_grpc

__all__ = ["Client", "ClientError"]

SERVICE = "gangplan.v1.PlacementService"
# The calls that only read (server/servicer.py): PlaceJob, Preempt, Enqueue and
# ValidateQueues solve or check against the snapshot without changing it (Preempt proposes
# victims but evicts nothing; Defragment proposes moves but moves nothing) and PlanCapacity builds its own model of the snapshot plus the
# workload, so a second attempt after one that may have reached the server changes nothing.
# The snapshot writes are not: a retried PutSnapshot without an id stores a second snapshot
# and one with an id bumps the generation twice, a retried UpdateSnapshot whose first attempt
# landed fails its expected_generation check (without one, its removals are rejected as
# already gone: solver/snapshot/_snapshot.py, Snapshot.apply), and a retried DeleteSnapshot
# reports NOT_FOUND for a delete that succeeded. The health check only reads too (a probe
# that must see the first failure, as `gangplan health` does, passes retries=0).
IDEMPOTENT = (
    "PlaceJob",
    "Preempt",
    "Enqueue",
    "ValidateQueues",
    "PlanCapacity",
    "Why",
    "Defragment",
)
HEALTH_SERVICE = "grpc.health.v1.Health"
MAX_RETRIES = 4  # gRPC caps a retry policy's maxAttempts at 5 (gRFC A6)

PemSource = bytes | str | Path


class ClientError(Exception):
    """A call failed: `code` (grpc.StatusCode), `details`, and field `violations`."""

    def __init__(
        self, code: grpc.StatusCode, details: str, violations: list[tuple[str, str]]
    ) -> None:
        self.code = code
        self.details = details
        self.violations = violations
        super().__init__(f"{code.name}: {details}")

    @classmethod
    def from_rpc_error(cls, err: grpc.RpcError) -> ClientError:
        code = err.code() if isinstance(err, grpc.Call) else grpc.StatusCode.UNKNOWN
        details = (err.details() if isinstance(err, grpc.Call) else str(err)) or ""
        violations: list[tuple[str, str]] = []
        status = rpc_status.from_call(err) if isinstance(err, grpc.Call) else None
        details_any: list[Any] = list(status.details) if status else []
        for detail in details_any:
            bad = error_details_pb2.BadRequest()
            if detail.Unpack(bad):
                violations.extend((v.field, v.description) for v in bad.field_violations)
        return cls(code, details, violations)


def _pem(source: PemSource | None) -> bytes | None:
    if source is None:
        return None
    if isinstance(source, bytes):
        return source
    return Path(source).read_bytes()


def _service_config(retries: int) -> str:
    """gRPC's retry policy (gRFC A6 service config) for the idempotent calls only."""
    config: dict[str, Any] = {"methodConfig": []}
    if retries > 0:
        config["methodConfig"].append(
            {
                "name": [
                    *({"service": SERVICE, "method": m} for m in IDEMPOTENT),
                    {"service": HEALTH_SERVICE, "method": "Check"},
                ],
                "retryPolicy": {
                    "maxAttempts": retries + 1,
                    "initialBackoff": "0.05s",
                    "maxBackoff": "2s",
                    "backoffMultiplier": 2,
                    "retryableStatusCodes": ["UNAVAILABLE", "RESOURCE_EXHAUSTED"],
                },
            }
        )
    return json.dumps(config)


class Client:
    """A channel to one gangplan server.

    `tls=True` (implied by `ca_cert` or a client certificate) uses TLS with `ca_cert` as the
    trusted roots (the system's when None); `client_cert` + `client_key` add mutual TLS;
    `token` sends `authorization: Bearer <token>`. `timeout` is each call's deadline (the
    server's solver budget) unless a call passes its own. `retries` counts extra attempts
    of idempotent calls (0..4: gRPC caps attempts at 5); the backoff starts at 50 ms and
    doubles up to 2 s, with gRPC's jitter.
    """

    def __init__(
        self,
        target: str,
        *,
        token: str | None = None,
        tls: bool = False,
        ca_cert: PemSource | None = None,
        client_cert: PemSource | None = None,
        client_key: PemSource | None = None,
        timeout: float | None = 10.0,
        retries: int = 3,
        max_message_mb: int = 256,
    ) -> None:
        if not 0 <= retries <= MAX_RETRIES:
            raise ValueError(f"retries must be 0..{MAX_RETRIES}, not {retries}")
        if (client_cert is None) != (client_key is None):
            raise ValueError("mutual TLS needs both client_cert and client_key")
        options = [
            ("grpc.max_receive_message_length", max_message_mb * 1024 * 1024),
            ("grpc.max_send_message_length", max_message_mb * 1024 * 1024),
            ("grpc.enable_retries", 1 if retries > 0 else 0),
            ("grpc.service_config", _service_config(retries)),
        ]
        if tls or ca_cert is not None or client_cert is not None:
            credentials = grpc.ssl_channel_credentials(
                root_certificates=_pem(ca_cert),
                private_key=_pem(client_key),
                certificate_chain=_pem(client_cert),
            )
            self.channel = grpc.secure_channel(target, credentials, options=options)
        else:
            self.channel = grpc.insecure_channel(target, options=options)
        self.timeout = timeout
        self._metadata: tuple[tuple[str, str], ...] = (
            (("authorization", f"Bearer {token}"),) if token else ()
        )
        self._stub = spb_grpc.PlacementServiceStub(self.channel)
        self._health_check = self.channel.unary_unary(
            f"/{HEALTH_SERVICE}/Check",
            request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
            response_deserializer=health_pb2.HealthCheckResponse.FromString,
        )

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _call(self, method: Any, request: Any, timeout: float | None) -> Any:
        try:
            return method(
                request,
                timeout=self.timeout if timeout is None else timeout,
                metadata=self._metadata,
            )
        except grpc.RpcError as err:
            raise ClientError.from_rpc_error(err) from None

    # ------------------------------------------------------------------------- snapshots

    def put_snapshot(
        self, cluster: pb.Cluster, snapshot_id: str = "", *, timeout: float | None = None
    ) -> spb.PutSnapshotResponse:
        """Store `cluster`; returns the snapshot id and its generation."""
        request = spb.PutSnapshotRequest(cluster=cluster, snapshot_id=snapshot_id)
        response: spb.PutSnapshotResponse = self._call(self._stub.PutSnapshot, request, timeout)
        return response

    def update_snapshot(
        self, request: spb.UpdateSnapshotRequest, *, timeout: float | None = None
    ) -> spb.UpdateSnapshotResponse:
        """Apply deltas; set `request.expected_generation` to fail on a concurrent change."""
        response: spb.UpdateSnapshotResponse = self._call(
            self._stub.UpdateSnapshot, request, timeout
        )
        return response

    def delete_snapshot(self, snapshot_id: str, *, timeout: float | None = None) -> None:
        """Forget a snapshot (NOT_FOUND when the id is unknown)."""
        self._call(
            self._stub.DeleteSnapshot, spb.DeleteSnapshotRequest(snapshot_id=snapshot_id), timeout
        )

    # ------------------------------------------------------------------------- placement

    @staticmethod
    def _source(
        snapshot: str | None, cluster: pb.Cluster | None, expected_generation: int
    ) -> dict[str, Any]:
        if (snapshot is None) == (cluster is None):
            raise ValueError("pass exactly one of snapshot= and cluster=")
        if snapshot is not None:
            ref = spb.SnapshotRef(id=snapshot, expected_generation=expected_generation)
            return {"snapshot": ref}
        return {"cluster": cluster}

    @staticmethod
    def _options(
        engine: str,
        scheduler_conf: str,
        workers: int,
        seed: int,
        scheduler_names: Sequence[str] = (),
        namespaces: Sequence[str] = (),
        consolidate: bool = False,
    ) -> spb.SolveOptions:
        return spb.SolveOptions(
            engine=engine,
            scheduler_conf=scheduler_conf,
            workers=workers,
            seed=seed,
            scheduler_names=scheduler_names,
            namespaces=namespaces,
            consolidate=consolidate,
        )

    def place_job(
        self,
        job: pb.Job | None = None,
        *,
        snapshot: str | None = None,
        cluster: pb.Cluster | None = None,
        expected_generation: int = 0,
        engine: str = "",
        scheduler_conf: str = "",
        workers: int = 0,
        seed: int = 0,
        scheduler_names: Sequence[str] = (),
        namespaces: Sequence[str] = (),
        consolidate: bool = False,
        timeout: float | None = None,
    ) -> spb.PlaceJobResponse:
        """Where the job's pods go (an empty job: every pending pod of the cluster).

        `scheduler_names` / `namespaces` keep only the pending pods of those schedulers /
        namespaces (the others stay pending; bound pods always count). `consolidate`: a
        gang left out may get room by moving running pods (`decision.moves`)."""
        request = spb.PlaceJobRequest(
            job=job or pb.Job(),
            options=self._options(
                engine, scheduler_conf, workers, seed, scheduler_names, namespaces, consolidate
            ),
            **self._source(snapshot, cluster, expected_generation),
        )
        response: spb.PlaceJobResponse = self._call(self._stub.PlaceJob, request, timeout)
        return response

    def preempt(
        self,
        job: pb.Job | None = None,
        *,
        snapshot: str | None = None,
        cluster: pb.Cluster | None = None,
        expected_generation: int = 0,
        engine: str = "",
        scheduler_conf: str = "",
        workers: int = 0,
        seed: int = 0,
        scheduler_names: Sequence[str] = (),
        namespaces: Sequence[str] = (),
        consolidate: bool = False,
        timeout: float | None = None,
    ) -> spb.PreemptResponse:
        """Placements, and the victims to evict (with their DisruptionTarget message and the
        node each member is nominated to) when the job only fits by preempting or reclaiming
        lower-priority pods. Nothing is evicted: the answer is a proposal for the front end.
        `placed` counts nominated members as placed; `reason` says why no victims are
        proposed when there are none. Options as for `place_job` (with `consolidate`, moves
        are preferred: victims only when evicting serves more gangs)."""
        request = spb.PreemptRequest(
            job=job or pb.Job(),
            options=self._options(
                engine, scheduler_conf, workers, seed, scheduler_names, namespaces, consolidate
            ),
            **self._source(snapshot, cluster, expected_generation),
        )
        response: spb.PreemptResponse = self._call(self._stub.Preempt, request, timeout)
        return response

    def enqueue(
        self,
        job: pb.Job,
        *,
        snapshot: str | None = None,
        cluster: pb.Cluster | None = None,
        expected_generation: int = 0,
        scheduler_conf: str = "",
        timeout: float | None = None,
    ) -> spb.EnqueueResponse:
        """Whether the job's gangs may enter their queues (the capacity or capacity-card
        plugin's admission at the leaf queue and every ancestor), one answer per gang."""
        request = spb.EnqueueRequest(
            job=job,
            options=self._options("", scheduler_conf, 0, 0),
            **self._source(snapshot, cluster, expected_generation),
        )
        response: spb.EnqueueResponse = self._call(self._stub.Enqueue, request, timeout)
        return response

    def why(
        self,
        gang: str,
        job: pb.Job | None = None,
        *,
        snapshot: str | None = None,
        cluster: pb.Cluster | None = None,
        expected_generation: int = 0,
        engine: str = "",
        scheduler_conf: str = "",
        now: datetime | None = None,
        default_runtime: float = 0.0,
        node_types: Sequence[spb.PlanNodeType] = (),
        workers: int = 0,
        seed: int = 0,
        scheduler_names: Sequence[str] = (),
        timeout: float | None = None,
    ) -> spb.WhyResponse:
        """Why `gang` (`namespace/name`; a pod's key for a pod alone) waits: its certificate,
        the smallest checked changes that would let it run and when it will start (from the
        running pods' `gangplan.io/expected-end` annotations, counted from `now`;
        `default_runtime` seconds for pods without one; `node_types`: what may be bought,
        which the `nodes` change then buys)."""
        request = spb.WhyRequest(
            gang=gang,
            job=job or pb.Job(),
            options=self._options(engine, scheduler_conf, workers, seed, scheduler_names),
            default_runtime_seconds=default_runtime,
            node_types=node_types,
            **self._source(snapshot, cluster, expected_generation),
        )
        if now is not None:
            request.now.FromDatetime(now)
        response: spb.WhyResponse = self._call(self._stub.Why, request, timeout)
        return response

    def defragment(
        self,
        goal: spb.DefragmentGoal | None = None,
        *,
        snapshot: str | None = None,
        cluster: pb.Cluster | None = None,
        expected_generation: int = 0,
        engine: str = "",
        scheduler_conf: str = "",
        workers: int = 0,
        seed: int = 0,
        timeout: float | None = None,
    ) -> spb.DefragmentResponse:
        """The running pods to move so that whole nodes or domains become free (`goal`:
        the level, a count or the most within `max_pods`, protections; or room for a pending
        gang, scheduled under `scheduler_conf`), with the bound and the gap; nothing is
        moved. The call's deadline is the solver's time limit."""
        request = spb.DefragmentRequest(
            goal=goal or spb.DefragmentGoal(),
            options=self._options(engine, scheduler_conf, workers, seed),
            **self._source(snapshot, cluster, expected_generation),
        )
        response: spb.DefragmentResponse = self._call(self._stub.Defragment, request, timeout)
        return response

    def validate_queues(
        self,
        *,
        snapshot: str | None = None,
        cluster: pb.Cluster | None = None,
        timeout: float | None = None,
    ) -> spb.ValidateQueuesResponse:
        """The cluster's queue tree checked against Volcano's queue admission rules."""
        request = spb.ValidateQueuesRequest(**self._source(snapshot, cluster, 0))
        response: spb.ValidateQueuesResponse = self._call(
            self._stub.ValidateQueues, request, timeout
        )
        return response

    def plan_capacity(
        self,
        workload: pb.Job,
        node_types: list[spb.PlanNodeType],
        *,
        snapshot: str | None = None,
        cluster: pb.Cluster | None = None,
        card_quota: dict[str, int] | None = None,
        budget: float | None = None,
        value: spb.PlanValue.ValueType = spb.PLAN_VALUE_UNSPECIFIED,
        workers: int = 0,
        seed: int = 0,
        timeout: float | None = None,
    ) -> spb.PlanCapacityResponse:
        """What to add from the `node_types` catalogue so the workload fits on the cluster
        (a stored snapshot, an inline cluster, or none: an empty one); the call's deadline
        is the planner's time limit."""
        request = spb.PlanCapacityRequest(
            workload=workload,
            node_types=node_types,
            card_quota=card_quota or {},
            budget=budget,
            value=value,
            options=self._options("", "", workers, seed),
            **(
                self._source(snapshot, cluster, 0)
                if snapshot is not None or cluster is not None
                else {}
            ),
        )
        response: spb.PlanCapacityResponse = self._call(self._stub.PlanCapacity, request, timeout)
        return response

    def health(self, service: str = "", *, timeout: float | None = None) -> str:
        """`SERVING`, `NOT_SERVING`, ... of the whole server ("") or one service
        (`gangplan.v1.PlacementService`); needs no token."""
        response: health_pb2.HealthCheckResponse = self._call(
            self._health_check, health_pb2.HealthCheckRequest(service=service), timeout
        )
        return health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)
