"""clients/probe.py, the image's HEALTHCHECK, against real servers: its exit status for each
health answer, the address it derives from the container's environment, TLS and mutual TLS,
and that it stays light (it must not load the solver)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from grpc_health.v1 import health_pb2

from clients.probe import EXIT_NOT_SERVING, EXIT_SERVING, EXIT_UNREACHABLE, default_target, main
from server.app import SERVICE_NAME
from tests.server.conftest import Certs


def probe(*args: str, env: dict[str, str] | None = None) -> int:
    return main(list(args), env={} if env is None else env)


def test_serving_not_serving_unknown_and_unreachable(
    start: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    srv, port = start()
    target = f"127.0.0.1:{port}"
    assert probe("--server", target) == EXIT_SERVING
    assert probe("--server", target, "--service", SERVICE_NAME) == EXIT_SERVING
    assert capsys.readouterr().out == "SERVING\nSERVING\n"
    assert probe("--server", target, "--service", "no.such.Service") == EXIT_NOT_SERVING
    assert capsys.readouterr().out == "SERVICE_UNKNOWN\n"
    srv.health.set(SERVICE_NAME, health_pb2.HealthCheckResponse.NOT_SERVING)
    assert probe("--server", target, "--service", SERVICE_NAME) == EXIT_NOT_SERVING
    assert capsys.readouterr().out == "NOT_SERVING\n"
    srv.stop(0)  # draining, then gone
    assert probe("--server", target, "--timeout", "1") == EXIT_UNREACHABLE
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"error: {target}: UNAVAILABLE")


def test_the_address_comes_from_the_containers_environment(start: Any) -> None:
    _, port = start()
    assert probe(env={"GANGPLAN_HOST": "0.0.0.0", "GANGPLAN_PORT": str(port)}) == EXIT_SERVING
    assert default_target({}) == "127.0.0.1:50051"  # the server's defaults
    assert default_target({"GANGPLAN_HOST": "[::]", "GANGPLAN_PORT": "7"}) == "127.0.0.1:7"
    assert default_target({"GANGPLAN_HOST": "::1"}) == "[::1]:50051"
    assert default_target({"GANGPLAN_HOST": "10.0.0.5", "GANGPLAN_PORT": "9"}) == "10.0.0.5:9"


def test_tls_with_the_ca_and_the_name_the_certificate_carries(
    start: Any, certs: Certs, capsys: pytest.CaptureFixture[str]
) -> None:
    _, port = start(tls_cert=certs.server_cert, tls_key=certs.server_key)
    target = f"127.0.0.1:{port}"
    tls_server = {"GANGPLAN_TLS_CERT": str(certs.server_cert)}
    # plaintext to a TLS server would only time out: the probe says what is missing
    assert probe("--server", target, env=tls_server) == EXIT_UNREACHABLE
    assert "give --ca-cert" in capsys.readouterr().err
    assert probe("--server", target, "--ca-cert", str(certs.ca)) == EXIT_SERVING
    assert probe("--server", target, env={"GANGPLAN_CA_CERT": str(certs.ca)}) == EXIT_SERVING
    # the certificate names 127.0.0.1 and localhost, not this
    wrong = ("--server", target, "--ca-cert", str(certs.ca), "--timeout", "2")
    assert probe(*wrong, "--server-name", "gangplan.example") == EXIT_UNREACHABLE
    assert probe(*wrong, "--server-name", "localhost") == EXIT_SERVING


def test_mutual_tls_needs_the_client_certificate(
    start: Any, certs: Certs, capsys: pytest.CaptureFixture[str]
) -> None:
    _, port = start(tls_cert=certs.server_cert, tls_key=certs.server_key, client_ca=certs.ca)
    base = ("--server", f"127.0.0.1:{port}", "--ca-cert", str(certs.ca), "--timeout", "2")
    assert probe(*base) == EXIT_UNREACHABLE
    mutual = ("--client-cert", str(certs.client_cert), "--client-key", str(certs.client_key))
    assert probe(*base, *mutual) == EXIT_SERVING
    capsys.readouterr()
    assert probe(*base, "--client-cert", str(certs.client_cert)) == EXIT_UNREACHABLE
    assert "go together" in capsys.readouterr().err
    assert probe(*base, *mutual[:2], "--client-key", "/nonexistent.pem") == EXIT_UNREACHABLE
    assert "/nonexistent.pem: cannot read" in capsys.readouterr().err


def test_bad_usage_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert probe("--timeout", "0") == EXIT_UNREACHABLE
    with pytest.raises(SystemExit) as usage:  # argparse's own usage errors: 2 as well
        probe("--no-such-flag")
    assert usage.value.code == EXIT_UNREACHABLE
    assert "--no-such-flag" in capsys.readouterr().err


def test_the_probe_does_not_load_the_solver() -> None:
    # a probe runs every few seconds: the solver's imports (~1 s of CPU) are not its to pay
    code = "import sys, clients.probe; print(sorted({m.split('.')[0] for m in sys.modules}))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    for heavy in ("solver", "server", "ortools", "numpy", "typer", "rich"):
        assert f"'{heavy}'" not in loaded, heavy
