"""Service configuration: flags of `gangplan serve`, else environment variables `GANGPLAN_*`.

Every field below can be set as `GANGPLAN_<FIELD>` (e.g. `GANGPLAN_PORT=50051`,
`GANGPLAN_TOKEN=...`); flags given to `gangplan serve` win over the environment.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from solver.schedule import AFTER_ENGINE_PER_POD

__all__ = ["Settings"]

MIN_ANSWER = 0.005  # s: the least a call has left after decoding to be answered at all


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="GANGPLAN_", extra="ignore", frozen=True)

    host: str = Field(default="127.0.0.1", description="address to listen on ('[::]' for all)")
    port: int = Field(default=50051, ge=0, le=65535, description="gRPC port; 0 picks a free one")
    metrics_port: int | None = Field(
        default=9464,
        ge=0,
        le=65535,
        description="Prometheus /metrics port on the same host; 0 picks one; None disables",
    )
    metrics_host: str = Field(
        default="127.0.0.1",
        description="address of /metrics; off loopback it needs `token` (and then requires it)",
    )
    tls_cert: Path | None = Field(default=None, description="server certificate chain (PEM)")
    tls_key: Path | None = Field(default=None, description="server private key (PEM)")
    client_ca: Path | None = Field(
        default=None, description="CA bundle (PEM); when set, clients must present a certificate"
    )
    token: SecretStr | None = Field(
        default=None,
        description="when set, every RPC except health needs `authorization: Bearer <token>`",
    )
    workers: int = Field(default=4, ge=1, description="threads serving RPCs (solves in parallel)")
    max_queued: int = Field(
        default=28,
        ge=0,
        description="RPCs waiting beyond `workers`; more concurrent calls get RESOURCE_EXHAUSTED",
    )
    max_message_mb: int = Field(
        default=256, ge=1, description="largest request or response message, MiB"
    )
    max_snapshots: int = Field(default=64, ge=1, description="snapshots kept in memory")
    max_snapshot_mb: int = Field(
        default=8192,
        ge=1,
        description="estimated memory for all snapshots, MiB; storing past it evicts the "
        "least recently used",
    )
    engine: str = Field(default="greedy", description="engine when a request names none")
    scheduler_conf: Path | None = Field(
        default=None, description="Volcano scheduler conf used when a request carries none"
    )
    solver_workers: int = Field(
        default=1,
        ge=1,
        description="CP-SAT num_workers per solve when a request names none; keep "
        "workers x solver_workers <= cores",
    )
    seed: int = Field(
        default=0, ge=0, le=2**31 - 1, description="CP-SAT random seed when a request names none"
    )
    time_limit: float = Field(
        default=10.0, gt=0, description="solver budget (s) for a call without a deadline"
    )
    deadline_margin: float = Field(
        default=0.02, ge=0, description="seconds kept back from a call's deadline to answer"
    )
    deadline_share: float = Field(
        default=0.1,
        ge=0,
        lt=1,
        description="share of a call's remaining time also kept back (verify, encode, and "
        "CP-SAT overrunning its limit grow with the instance; benchmarks/deadlines measures it)",
    )

    deadline_per_pod: float = Field(
        default=AFTER_ENGINE_PER_POD,
        ge=0,
        description="seconds per pod of the call also kept back: the work after the engine "
        "(the Decision, verify, encoding) grows with them, ~30 us a pod on 2 cores",
    )

    answer_ratio: float = Field(
        default=1.5,
        ge=0,
        description="answering a call (compile, the greedy's first gang group, verify, "
        "encoding) takes at the least this many times what decoding it took: a call with "
        "less left after decoding is refused at once (measured per call, so the floor follows "
        "the machine's speed and load)",
    )

    def answer_floor(self, decode_seconds: float, pods: int) -> float:
        """The least time left after decoding in which a call of `pods` pods that took
        `decode_seconds` to decode is answered; with less, it is DEADLINE_EXCEEDED at once
        rather than cut off by its deadline."""
        work = max(self.answer_ratio * decode_seconds, pods * self.deadline_per_pod)
        return MIN_ANSWER + work

    def budget(self, remaining: float, pods: int = 0) -> float:
        """The engine's time limit when `remaining` seconds are left before the deadline
        for a call placing `pods` pods."""
        kept = self.deadline_margin + pods * self.deadline_per_pod
        return remaining * (1 - self.deadline_share) - kept

    min_cpsat_budget: float = Field(
        default=0.1, ge=0, description="below this budget (s) a CP-SAT request gets greedy"
    )
    grace: float = Field(default=10.0, ge=0, description="SIGTERM: seconds in-flight calls get")
    log_level: str = Field(default="INFO", description="logging level")

    @field_validator("token")
    @classmethod
    def _token_not_blank(cls, token: SecretStr | None) -> SecretStr | None:
        # An empty token would make `Bearer ` the password: refuse it rather than
        # silently serving without authentication.
        if token is not None and not token.get_secret_value().strip():
            raise ValueError("the token is empty")
        return token

    @field_validator("scheduler_conf")
    @classmethod
    def _readable(cls, path: Path | None) -> Path | None:
        if path is not None and not path.is_file():
            raise ValueError(f"{path}: no such file")
        return path

    @field_validator("tls_cert", "client_ca")
    @classmethod
    def _certificates(cls, path: Path | None) -> Path | None:
        return _pem(path, "CERTIFICATE-----")

    @field_validator("tls_key")
    @classmethod
    def _key(cls, path: Path | None) -> Path | None:
        return _pem(path, "PRIVATE KEY-----")

    @model_validator(mode="after")
    def _metrics_guarded(self) -> Settings:
        if self.metrics_port is not None and not self.metrics_loopback and self.token is None:
            raise ValueError(
                f"metrics on {self.metrics_host} (off loopback) need a token (--token-file)"
            )
        return self

    @property
    def metrics_loopback(self) -> bool:
        try:
            return ipaddress.ip_address(self.metrics_host.strip("[]")).is_loopback
        except ValueError:
            return self.metrics_host == "localhost"

    @model_validator(mode="after")
    def _tls_pair(self) -> Settings:
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError("tls_cert and tls_key must be given together")
        if self.client_ca is not None and self.tls_cert is None:
            raise ValueError("client_ca (mutual TLS) needs tls_cert and tls_key")
        return self

    @property
    def max_concurrent_rpcs(self) -> int:
        return self.workers + self.max_queued

    @property
    def max_message_bytes(self) -> int:
        return self.max_message_mb * 1024 * 1024


def _pem(path: Path | None, marker: str) -> Path | None:
    """`path` when it is a readable PEM file holding `marker` (grpc would only say "failed
    to bind" of a file that is not)."""
    if path is None:
        return None
    try:
        text = path.read_text(encoding="ascii", errors="replace")
    except OSError as err:
        raise ValueError(f"{path}: cannot read: {err.strerror or err}") from None
    if "-----BEGIN " not in text or marker not in text:
        raise ValueError(f"{path}: not a PEM file with a {marker.rstrip('-').lower()}")
    return path
