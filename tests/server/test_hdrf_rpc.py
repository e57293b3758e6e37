"""Hierarchical DRF over gRPC: the example's queues (their hierarchy annotations) and conf
reach the service, and the answer says CP-SAT answered with the greedy's placement."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clients.client import Client
from solver import load_manifests
from solver.codec import cluster_to_proto

ROOT = Path(__file__).resolve().parents[2] / "examples" / "fairshare"


@pytest.mark.parametrize("engine", ["greedy", "auto"])
def test_hdrf_example_over_grpc(start: Any, engine: str) -> None:
    _, port = start()
    cluster = cluster_to_proto(load_manifests(str(ROOT / "hdrf.yaml")))
    conf = (ROOT / "hdrf.conf").read_text()
    with Client(f"127.0.0.1:{port}", timeout=30) as client:
        answer = client.place_job(cluster=cluster, engine=engine, scheduler_conf=conf, workers=1)
    per_job: dict[str, int] = {}
    for p in answer.decision.placements:
        if p.node:
            job = p.pod.split("/")[1].split("-worker-")[0]
            per_job[job] = per_job.get(job, 0) + 1
    assert per_job == {"sweep": 16, "pretrain": 8, "chat": 8}
    encoded = any("does not encode hierarchical DRF" in n for n in answer.decision.notes)
    assert encoded == (engine == "auto")
