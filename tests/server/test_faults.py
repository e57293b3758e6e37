"""Faults against a real server on loopback: a cancelled call frees its worker, and the
deadline bounds a CP-SAT call that cannot finish (the answer is greedy's, on time)."""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from gangplan.v1 import cluster_pb2 as pb
from gangplan.v1 import placement_service_pb2 as spb
from gangplan.v1 import placement_service_pb2_grpc as spb_grpc
from server import GangplanServer
from solver import schedule
from tests.server.conftest import SERVE, gpu_node, gpu_pod, small_cluster

Start = Callable[..., tuple[GangplanServer, int]]
ROOT = Path(__file__).resolve().parents[2]


def hard_request(engine: str = "cpsat") -> spb.PlaceJobRequest:
    """400 nodes and 30 gangs of 40: CP-SAT does not finish this within a minute."""
    cluster = pb.Cluster(
        nodes=[gpu_node(f"n{i:04d}", gpus=8, cpu=16_000 + 1000 * (i % 7)) for i in range(400)]
    )
    job = pb.Job()
    for g in range(30):
        job.gangs.add(namespace="default", name=f"g{g:02d}", min_member=40)
        job.pods.extend(
            gpu_pod(f"g{g:02d}-{i}", gang=f"default/g{g:02d}", gpus=1 + g % 2) for i in range(40)
        )
    request = spb.PlaceJobRequest(cluster=cluster, job=job)
    request.options.engine = engine
    request.options.workers = 1
    return request


def test_a_cancelled_call_frees_its_worker(start: Start) -> None:
    _, port = start(workers=1, max_queued=4, time_limit=60.0)
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = spb_grpc.PlacementServiceStub(channel)
        hard = stub.PlaceJob.future(hard_request(), timeout=60)
        time.sleep(2.0)  # built, searching
        hard.cancel()
        small = spb.PlaceJobRequest(cluster=small_cluster())
        small.job.pods.append(gpu_pod("p"))
        small.options.engine = "greedy"
        # With the search still running, the only worker would be busy for ~60 s.
        answer = stub.PlaceJob(small, timeout=10)
    assert answer.placed


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    """A `gangplan serve` process of its own: timings free of this process's threads."""
    with subprocess.Popen(
        SERVE,
        cwd=ROOT,
        env={**os.environ, "GANGPLAN_LOG_LEVEL": "WARNING"},
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdout is not None
        match = re.search(r"127\.0\.0\.1:(\d+)", proc.stdout.readline())
        assert match, "server did not start"
        try:
            yield f"127.0.0.1:{match.group(1)}"
        finally:
            proc.terminate()
            proc.wait(30)


@pytest.mark.parametrize("deadline", [0.3, 1.0, 3.0])  # the full sweep: benchmarks/deadlines
def test_a_deadline_bounds_a_call_cpsat_cannot_finish(served: str, deadline: float) -> None:
    with grpc.insecure_channel(served) as channel:
        stub = spb_grpc.PlacementServiceStub(channel)
        answer = stub.PlaceJob(hard_request("auto"), timeout=deadline)
    assert answer.decision.status in ("HEURISTIC", "FEASIBLE", "OPTIMAL")
    assert len(answer.decision.placements) == 1200


def test_health_answers_while_every_worker_is_busy(start: Start) -> None:
    release = threading.Event()
    busy = threading.Semaphore(0)

    def stuck(snapshot: Any, conf: Any, **kw: Any) -> Any:
        busy.release()
        release.wait(30)
        return schedule(snapshot, conf, **kw)

    _, port = start(schedule_fn=stuck, workers=1, max_queued=2)
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = spb_grpc.PlacementServiceStub(channel)
        request = spb.PlaceJobRequest(cluster=small_cluster())
        request.options.engine = "greedy"
        calls = [stub.PlaceJob.future(request, timeout=30) for _ in range(3)]  # 1 runs, 2 wait
        assert busy.acquire(timeout=10)
        time.sleep(0.2)
        health = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(), timeout=1
        )
        assert health.status == health_pb2.HealthCheckResponse.SERVING
        with pytest.raises(grpc.RpcError) as err:
            stub.PlaceJob(request, timeout=5)  # a fourth call: beyond workers + max_queued
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        release.set()
        assert all(c.result(timeout=30).decision.status for c in calls)
