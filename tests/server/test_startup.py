"""`gangplan serve` refuses unusable credentials at start-up with one line on stderr
(exit 2), never a traceback and never a server that silently skips authentication."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SERVE = [sys.executable, "-c", "from clients.cli import main; main()", "serve", "--port", "0"]


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
    assert done.returncode == 2 and "token: Value error, the token is empty" in done.stderr


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
    assert len(done.stderr.strip().splitlines()) <= 2  # one line per unusable file


def test_a_certificate_that_is_not_pem_is_a_start_up_error(tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.write_text("not a certificate")
    key.write_text("not a key")
    done = _serve("--tls-cert", str(cert), "--tls-key", str(key))
    assert done.returncode == 2, done.stderr
    assert f"{cert}: not a PEM file with a certificate" in done.stderr
    assert f"{key}: not a PEM file with a private key" in done.stderr
    assert "Traceback" not in done.stderr
