"""Kueue ClusterQueues over gRPC: the example's ClusterQueues, Cohort and LocalQueues reach
the service (`Queue.kueue`), fair sharing comes with the conf text, and the answer names
each placed pod set's ClusterQueue and flavors (`flavor_assignments`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clients.client import Client
from solver import load_manifests
from solver.codec import cluster_to_proto

ROOT = Path(__file__).resolve().parents[2] / "examples" / "fairshare"


@pytest.mark.parametrize("engine", ["greedy", "auto"])
def test_kueue_example_over_grpc(start: Any, engine: str) -> None:
    _, port = start()
    cluster = cluster_to_proto(load_manifests(str(ROOT / "kueue.yaml")))
    assert sum(q.HasField("kueue") for q in cluster.queues) == len(cluster.queues) == 7
    conf = (ROOT / "kueue.conf").read_text()
    with Client(f"127.0.0.1:{port}", timeout=30) as client:
        answer = client.place_job(cluster=cluster, engine=engine, scheduler_conf=conf, workers=1)
        classical = client.place_job(cluster=cluster, engine=engine, workers=1)
    for decision, want in ((answer.decision, {"prod": 4, "research": 2}),
                           (classical.decision, {"prod": 2, "research": 4})):  # fmt: skip
        placed: dict[str, int] = {}
        for p in decision.placements:
            if p.node:
                placed[p.pod.split("/")[0]] = placed.get(p.pod.split("/")[0], 0) + 1
        assert placed == want
        assert {a.cluster_queue for a in decision.flavor_assignments} == {"prod", "research"}
        assert all(a.flavors["nvidia.com/gpu"] == "a100" for a in decision.flavor_assignments)
