"""SIGTERM drains: the call in flight finishes, new calls are refused, the process exits 0."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from clients.client import Client, ClientError
from tests.server.conftest import gang_job, small_cluster

ROOT = Path(__file__).resolve().parents[2]


def _wait_for(stream: Any, pattern: str, timeout: float = 20.0) -> re.Match[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            break
        match = re.search(pattern, line)
        if match:
            return match
    raise AssertionError(f"no line matching {pattern!r}")


@contextlib.contextmanager
def slow_server(
    seconds: float | str, grace: float = 10.0
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`tests.server.slow_server` (solves take `seconds`, or "budget": their time limit
    unless stopped) and its port; killed at exit."""
    env = {
        **os.environ,
        "SLOW_SECONDS": str(seconds),
        "SLOW_GRACE": str(grace),
        "PYTHONPATH": str(ROOT),
    }
    with subprocess.Popen(
        [sys.executable, "-m", "tests.server.slow_server"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            yield proc, _wait_for(proc.stdout, r"listening on 127\.0\.0\.1:(\d+)").group(1)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_sigterm_drains_a_call_in_flight() -> None:
    with slow_server(1.5) as (proc, port):
        results: list[Any] = []
        with Client(f"127.0.0.1:{port}", retries=0, timeout=15) as client:
            assert client.health() == "SERVING"

            def call() -> None:
                try:
                    results.append(client.place_job(gang_job("j", 2), cluster=small_cluster()))
                except ClientError as err:
                    results.append(err)

            in_flight = threading.Thread(target=call)
            in_flight.start()
            _wait_for(proc.stderr, "solving")
            proc.send_signal(signal.SIGTERM)
            time.sleep(0.3)
            with Client(f"127.0.0.1:{port}", retries=0, timeout=2) as late:
                with pytest.raises(ClientError) as refused:
                    late.place_job(gang_job("k", 1), cluster=small_cluster())
                assert refused.value.code is grpc.StatusCode.UNAVAILABLE
            in_flight.join(15)
        assert len(results) == 1 and not isinstance(results[0], ClientError), results
        assert results[0].placed
        assert proc.wait(15) == 0


def test_sigterm_with_32_calls_in_flight_loses_none() -> None:
    # 4 RPC threads, 28 queued: 32 calls of 0.5 s drain in ~4 s, inside the 10 s grace.
    with slow_server(0.5) as (proc, port):
        results: list[Any] = []
        lock = threading.Lock()
        with Client(f"127.0.0.1:{port}", retries=0, timeout=30) as client:

            def call(i: int) -> None:
                try:
                    answer: Any = client.place_job(gang_job(f"j{i}", 1), cluster=small_cluster())
                except ClientError as err:
                    answer = err
                with lock:
                    results.append(answer)

            threads = [threading.Thread(target=call, args=(i,)) for i in range(32)]
            for t in threads:
                t.start()
            _wait_for(proc.stderr, "solving")
            time.sleep(0.2)  # every call accepted: 4 running, 28 queued
            proc.send_signal(signal.SIGTERM)
            for t in threads:
                t.join(30)
        lost = [r for r in results if isinstance(r, ClientError)]
        assert len(results) == 32 and not lost, lost[:3]
        assert proc.wait(15) == 0


def test_a_second_sigterm_stops_at_once() -> None:
    with (
        slow_server(30) as (proc, port),
        Client(f"127.0.0.1:{port}", retries=0, timeout=60) as client,
    ):

        def call() -> None:
            with contextlib.suppress(ClientError):
                client.place_job(gang_job("j", 1), cluster=small_cluster())

        threading.Thread(target=call, daemon=True).start()
        _wait_for(proc.stderr, "solving")
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        # The 30 s call would hold the drain for its 10 s grace otherwise.
        assert proc.wait(5) == 1


def test_sigterm_answers_every_admitted_call_before_the_grace_ends() -> None:
    """16 calls with a minute of budget each, 4 running and 12 queued, then SIGTERM with a
    3 s grace: the running solvers stop at the drain's end with their answer, the queued
    ones start with what is left (the greedy's answer) — all 16 answered, none cancelled,
    and the process is gone within the grace."""
    with slow_server("budget", grace=3.0) as (proc, port):
        results: list[Any] = []

        def call() -> None:
            with Client(f"127.0.0.1:{port}", timeout=60) as client:
                try:
                    results.append(client.place_job(cluster=small_cluster(), job=gang_job("g", 2)))
                except ClientError as err:
                    results.append(err.code)

        threads = [threading.Thread(target=call) for _ in range(16)]
        for t in threads:
            t.start()
        assert proc.stderr is not None
        _wait_for(proc.stderr, "solving")
        time.sleep(0.5)  # every call admitted: 4 solving, the rest queued
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        for t in threads:
            t.join(30)
        assert proc.wait(30) == 0
        assert time.monotonic() - sent < 3.0 + 1.0
    codes = [r for r in results if not hasattr(r, "decision")]
    assert codes == [] and len(results) == 16


def test_calls_arriving_during_the_drain_are_refused_with_unavailable_never_cancelled() -> None:
    """While the admitted call finishes, every new call gets UNAVAILABLE from admission
    (what clients retry on another replica); grpc's own stop, which ends a call on its way
    in with CANCELLED, runs only when no admitted call is left. (The late calls start once the
    server logs that admission is closed: sent right after the signal, on a loaded machine,
    one may reach admission before the handler runs, and is rightly answered.)"""
    with slow_server(3.0) as (proc, port):
        codes: list[grpc.StatusCode] = []
        details: list[str] = []
        with Client(f"127.0.0.1:{port}", retries=0, timeout=15) as client:
            in_flight = threading.Thread(
                target=lambda: client.place_job(gang_job("j", 2), cluster=small_cluster())
            )
            in_flight.start()
            _wait_for(proc.stderr, "solving")
            proc.send_signal(signal.SIGTERM)
            # admission is closed from this line on; the call in flight has ~3 s to go
            _wait_for(proc.stderr, "refusing new calls")
            with Client(f"127.0.0.1:{port}", retries=0, timeout=2) as late:
                deadline = time.monotonic() + 1.0
                while time.monotonic() < deadline:
                    try:
                        late.place_job(gang_job("k", 1), cluster=small_cluster())
                        codes.append(grpc.StatusCode.OK)
                    except ClientError as err:
                        codes.append(err.code)
                        details.append(err.details)
                    time.sleep(0.01)
            in_flight.join(15)
        # Admission closed before the first late call: every one is refused with UNAVAILABLE
        # (what clients retry on another replica), none answered, none CANCELLED.
        assert codes and set(codes) == {grpc.StatusCode.UNAVAILABLE}, codes
        assert any("shutting down" in d for d in details), details[:3]
        assert proc.wait(15) == 0
