"""`python -m gangplan.clients.probe` (`python -m clients.probe` in a checkout): the
container image's HEALTHCHECK, a grpc.health.v1 `Check` of the server beside it.

    python -m gangplan.clients.probe [--server HOST:PORT] [--service NAME] [--timeout S]
                                     [--ca-cert PEM [--client-cert PEM --client-key PEM]]
                                     [--server-name NAME]

It answers what `gangplan health` answers, with the same exit status (0 SERVING; 1 any
other status: NOT_SERVING while the server drains, SERVICE_UNKNOWN for a service it does
not serve; 2 unreachable or bad usage), but imports grpc and the health stubs only: the
command line loads the solver, about a second of CPU on every start, which a probe run
every few seconds should not pay.

Without `--server` it asks the server that this container's `GANGPLAN_HOST` and
`GANGPLAN_PORT` describe (a wildcard host is asked on 127.0.0.1), so the image's
HEALTHCHECK follows the port it is configured with. TLS: `--ca-cert` (else
`GANGPLAN_CA_CERT`) holds the roots; `--server-name` is the name the certificate must carry
when it is not the address dialled (a probe dials 127.0.0.1).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2

__all__ = ["ProbeError", "check", "default_target", "main"]

EXIT_SERVING, EXIT_NOT_SERVING, EXIT_UNREACHABLE = 0, 1, 2
# addresses a server listens on everywhere with: the probe reaches them on loopback
_WILDCARDS = {"", "0.0.0.0", "::", "[::]"}


class ProbeError(Exception):
    """The server did not answer the check (unreachable, TLS refused, deadline)."""


def default_target(env: Mapping[str, str]) -> str:
    """The server `gangplan serve` started with `env` listens on (server/settings.py:
    `GANGPLAN_HOST`, default 127.0.0.1; `GANGPLAN_PORT`, default 50051)."""
    host = env.get("GANGPLAN_HOST", "127.0.0.1").strip()
    port = env.get("GANGPLAN_PORT", "50051").strip()
    if host in _WILDCARDS:
        host = "127.0.0.1"
    elif ":" in host and not host.startswith("["):  # a bare IPv6 address
        host = f"[{host}]"
    return f"{host}:{port}"


def check(
    target: str,
    service: str = "",
    *,
    timeout: float = 3.0,
    credentials: grpc.ChannelCredentials | None = None,
    server_name: str | None = None,
) -> str:
    """The status `target` reports for `service` ("" : the whole server), by name:
    `SERVING`, `NOT_SERVING`, or `SERVICE_UNKNOWN` for a service it does not serve.
    Raises ProbeError when the server does not answer."""
    options = [("grpc.ssl_target_name_override", server_name)] if server_name else []
    channel = (
        grpc.secure_channel(target, credentials, options)
        if credentials is not None
        else grpc.insecure_channel(target, options)
    )
    with channel:
        # the method by hand, as clients/client.py does: the typed stubs do not declare it
        health_check = channel.unary_unary(
            "/grpc.health.v1.Health/Check",
            request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
            response_deserializer=health_pb2.HealthCheckResponse.FromString,
        )
        try:
            response: health_pb2.HealthCheckResponse = health_check(
                health_pb2.HealthCheckRequest(service=service), timeout=timeout
            )
        except grpc.RpcError as err:
            code = err.code() if isinstance(err, grpc.Call) else grpc.StatusCode.UNKNOWN
            # grpc/health/v1/health.proto: Check answers NOT_FOUND for an unknown service
            if code is grpc.StatusCode.NOT_FOUND:
                return health_pb2.HealthCheckResponse.ServingStatus.Name(
                    health_pb2.HealthCheckResponse.SERVICE_UNKNOWN
                )
            details = err.details() if isinstance(err, grpc.Call) else str(err)
            raise ProbeError(f"{code.name}: {details}") from None
    return health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m gangplan.clients.probe",
        description="grpc.health.v1 Check of a gangplan server: exit 0 only when SERVING, "
        "1 for any other status, 2 when it cannot be reached.",
    )
    parser.add_argument(
        "--server", help="HOST:PORT (default: from GANGPLAN_HOST and GANGPLAN_PORT)"
    )
    parser.add_argument("--service", default="", help='one service ("" : the whole server)')
    parser.add_argument("--timeout", type=float, default=3.0, help="seconds (default 3)")
    parser.add_argument("--ca-cert", help="CA bundle for TLS (default: GANGPLAN_CA_CERT)")
    parser.add_argument("--client-cert", help="client certificate chain, for mutual TLS")
    parser.add_argument("--client-key", help="client private key, for mutual TLS")
    parser.add_argument("--server-name", help="the name the server's certificate carries")
    return parser


def _credentials(
    args: argparse.Namespace, env: Mapping[str, str]
) -> grpc.ChannelCredentials | None:
    ca = args.ca_cert or env.get("GANGPLAN_CA_CERT") or None
    if (args.client_cert is None) != (args.client_key is None):
        raise ValueError("--client-cert and --client-key go together")
    if ca is None and args.client_cert is None:
        if env.get("GANGPLAN_TLS_CERT"):  # this container's server speaks TLS only
            raise ValueError("the server serves TLS (GANGPLAN_TLS_CERT): give --ca-cert")
        return None
    return grpc.ssl_channel_credentials(
        root_certificates=None if ca is None else _read(ca),
        private_key=None if args.client_key is None else _read(args.client_key),
        certificate_chain=None if args.client_cert is None else _read(args.client_cert),
    )


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as err:
        raise ValueError(f"{path}: cannot read: {err.strerror or err}") from None


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    """The probe; returns its exit status."""
    args = _parser().parse_args(argv)
    env = os.environ if env is None else env
    target = args.server or default_target(env)
    if args.timeout <= 0:
        sys.stderr.write("error: --timeout must be positive\n")
        return EXIT_UNREACHABLE
    try:
        credentials = _credentials(args, env)
        status = check(
            target,
            args.service,
            timeout=args.timeout,
            credentials=credentials,
            server_name=args.server_name,
        )
    except (ValueError, ProbeError) as err:
        sys.stderr.write(f"error: {target}: {err}\n")
        return EXIT_UNREACHABLE
    sys.stdout.write(status + "\n")
    return EXIT_SERVING if status == "SERVING" else EXIT_NOT_SERVING


if __name__ == "__main__":
    sys.exit(main())
