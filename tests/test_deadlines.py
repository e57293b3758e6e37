"""Deadlines are promises: for random gang instances and time limits, every answer arrives
within its limit + 50 ms — from the library (`schedule`: engine and verify), from the CLI
(`gangplan schedule --time-limit`: reading, engine, check and output), and over gRPC (a
PlaceJob deadline, which must end in an answer, not `DEADLINE_EXCEEDED`).

The instances are packing problems CP-SAT rarely finishes in the limits drawn (up to 40
gangs of up to 30 pods on up to 150 nodes), so the limit is what ends most calls. The
timing figures across deadlines and running pods are in `benchmarks/deadlines/`.
"""

from __future__ import annotations

import random
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from grpc import StatusCode
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from clients.cli import app
from clients.client import Client, ClientError
from server import Settings, create_server
from solver import schedule
from solver.codec import cluster_to_proto
from tests.builders import model, node, pod, podgroup

MARGIN = 0.05  # seconds past the limit an answer may take
LIMITS = [0.05, 0.1, 0.2, 0.4]
ENGINES = ["auto", "cpsat", "greedy"]
TRIES = settings(
    max_examples=12,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # a timing failure does not shrink
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


def instance(seed: int) -> list[dict[str, Any]]:
    """A random instance from a drawn seed (sizes uniform over their ranges, unlike
    hypothesis' own integers, which favour small ones; and nothing to shrink)."""
    rng = random.Random(seed)
    objects = [
        node(f"n{i}").cpu(str(32 + i % 7)).memory("256Gi").gpu(8).obj()
        for i in range(rng.randint(10, 150))
    ]
    for g in range(rng.randint(2, 40)):
        size, cpu, gpu = rng.randint(1, 30), rng.randint(1, 6), rng.choice([1, 2, 3, 4])
        objects.append(podgroup(f"g{g}", size))
        objects += [
            pod(f"g{g}-{i}").group(f"g{g}").requests(cpu=str(cpu), gpu=gpu).obj()
            for i in range(size)
        ]
    return objects


SEEDS = st.integers(0, 2**32 - 1)


@given(SEEDS, st.sampled_from(LIMITS), st.sampled_from(ENGINES))
@TRIES
def test_the_library_answers_within_its_time_limit(seed: int, limit: float, engine: str) -> None:
    question = model(*instance(seed))
    started = time.perf_counter()
    schedule(question, engine=engine, time_limit=limit, workers=1, seed=0)
    assert time.perf_counter() - started <= limit + MARGIN


@given(SEEDS, st.sampled_from([0.5, 1.0]), st.sampled_from(ENGINES))
@settings(TRIES, max_examples=8)
def test_the_cli_answers_within_its_time_limit(seed: int, limit: float, engine: str) -> None:
    """Reading the manifests counts against `--time-limit` (here up to 0.25 s of it for
    1,000 objects: the limits drawn leave the engine time of its own)."""
    assert _cli_seconds(seed, limit, "--engine", engine) <= limit + MARGIN


def _cli_seconds(seed: int, limit: float, *flags: str) -> float:
    """`gangplan schedule` on the seed's instance with `--time-limit limit`: its seconds."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "cluster.yaml"
        path.write_text(yaml.safe_dump_all(instance(seed)), encoding="utf-8")
        args = ["schedule", "-f", str(path), *flags, "--time-limit", str(limit), "--workers", "1"]
        started = time.perf_counter()
        result = CliRunner().invoke(app, args)
        seconds = time.perf_counter() - started
    assert result.exit_code == 0, result.output
    return seconds


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    srv, port = create_server(
        Settings(host="127.0.0.1", port=0, metrics_port=None, grace=1.0, workers=1)
    )
    srv.start()
    yield f"127.0.0.1:{port}"
    srv.stop(0)


@given(SEEDS, st.sampled_from(LIMITS), st.sampled_from(ENGINES))
@TRIES
def test_a_grpc_deadline_gets_an_answer_before_it(
    server: str, seed: int, limit: float, engine: str
) -> None:
    """On a connected channel, as a front end keeps one (connecting is the client's cost,
    and a first call on a fresh channel pays it within its deadline). The answer is a
    Decision, or — when decoding left less than answering that many pods takes
    (`Settings.answer_floor`) — the server's own DEADLINE_EXCEEDED saying so, sent at once;
    never the transport cutting the call off at its deadline."""
    cluster = cluster_to_proto(model(*instance(seed)))
    with Client(server) as client:
        client.health(timeout=5)
        started = time.perf_counter()
        try:
            client.place_job(cluster=cluster, engine=engine, workers=1, timeout=limit)
        except ClientError as err:
            seconds = time.perf_counter() - started
            if not (err.code is StatusCode.DEADLINE_EXCEEDED and "the deadline left" in str(err)):
                pytest.fail(f"{err} after {seconds:.3f} s")
            assert seconds < limit, f"refused after the deadline: {err}"
        assert time.perf_counter() - started <= limit + MARGIN


@given(SEEDS, st.sampled_from([0.5, 1.0]))
@settings(TRIES, max_examples=4)
def test_the_cli_asking_a_server_answers_within_its_time_limit(
    server: str, seed: int, limit: float
) -> None:
    """`--server`: the call's gRPC deadline is what `--time-limit` leaves after reading."""
    assert _cli_seconds(seed, limit, "--server", server) <= limit + MARGIN
