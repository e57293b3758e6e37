"""`gangplan serve` refuses unusable credentials at start-up with one line on stderr
(exit 2), never a traceback and never a server that silently skips authentication."""

from __future__ import annotations

import os
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from pydantic import ValidationError

from server import Settings, create_server
from tests.server.conftest import SERVE


def _serve(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SERVE, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.parametrize("content", ["", "   \n\t\n"])
def test_an_empty_token_file_is_a_start_up_error(tmp_path: Path, content: str) -> None:
    token = tmp_path / "token"
    token.write_text(content)
    done = _serve("--token-file", str(token))
    assert done.returncode == 2
    assert f"--token-file {token}: the file is empty" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_blank_token_from_the_environment_is_refused() -> None:
    done = _serve(env={"GANGPLAN_TOKEN": "  "})
    assert done.returncode == 2 and "--token: the token is empty" in done.stderr
    assert "Value error" not in done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["--token-file", "/nonexistent/token"],
        ["--tls-cert", "/nonexistent/cert.pem", "--tls-key", "/nonexistent/key.pem"],
    ],
)
def test_missing_credential_files_are_one_line_errors(args: list[str]) -> None:
    done = _serve(*args)
    assert done.returncode == 2, done.stderr
    assert "/nonexistent/" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr  # every file in one line
    assert "Value error" not in done.stderr and "Errno" not in done.stderr
    assert done.stderr.startswith(f"error: {args[0]}")


def test_a_certificate_that_is_not_pem_is_a_start_up_error(tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.write_text("not a certificate")
    key.write_text("not a key")
    done = _serve("--tls-cert", str(cert), "--tls-key", str(key))
    assert done.returncode == 2, done.stderr
    assert f"{cert}: not a PEM file with a certificate" in done.stderr
    assert f"{key}: not a PEM file with a private key" in done.stderr
    assert "Traceback" not in done.stderr


def test_metrics_off_loopback_need_a_token() -> None:
    with pytest.raises(ValidationError, match="off loopback"):
        Settings(metrics_host="0.0.0.0", metrics_port=0)
    assert Settings(metrics_host="::1", metrics_port=0).metrics_loopback
    assert Settings(metrics_host="0.0.0.0", metrics_port=None).metrics_port is None


def test_metrics_off_loopback_require_the_token() -> None:
    srv, _ = create_server(
        Settings(host="127.0.0.1", port=0, metrics_host="0.0.0.0", metrics_port=0, token="s3cret")
    )
    srv.start()
    try:
        url = f"http://127.0.0.1:{srv.metrics_port}/metrics"
        with pytest.raises(urllib.error.HTTPError) as denied:
            urllib.request.urlopen(url, timeout=5)
        denied.value.close()
        assert denied.value.code == 401
        allowed = urllib.request.Request(url, headers={"Authorization": "Bearer s3cret"})
        with urllib.request.urlopen(allowed, timeout=5) as answer:
            assert b"gangplan_snapshots 0.0" in answer.read()
    finally:
        srv.stop(0)
