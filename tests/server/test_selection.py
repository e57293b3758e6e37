"""SolveOptions.scheduler_names and namespaces: which pending pods a call places."""

from __future__ import annotations

from typing import Any

import grpc

from gangplan.v1 import cluster_pb2 as pb
from gangplan.v1 import placement_service_pb2 as spb
from gangplan.v1 import placement_service_pb2_grpc as spb_grpc
from tests.server.conftest import small_cluster


def test_the_service_selects_by_scheduler_name_and_namespace(start: Any) -> None:
    _, port = start()
    pods = [
        pb.Pod(namespace="ml", name="a", requests={"cpu": 100}, scheduler_name="volcano"),
        pb.Pod(namespace="ml", name="b", requests={"cpu": 100}, scheduler_name="other"),
        pb.Pod(namespace="dev", name="c", requests={"cpu": 100}, scheduler_name="volcano"),
    ]
    request = spb.PlaceJobRequest(
        cluster=small_cluster(1),
        job=pb.Job(pods=pods),
        options=spb.SolveOptions(engine="greedy", scheduler_names=["volcano"], namespaces=["ml"]),
    )
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        answer = spb_grpc.PlacementServiceStub(channel).PlaceJob(request, timeout=10)
    placed = {p.pod for p in answer.decision.placements if p.node}
    assert placed == {"ml/a"}
    assert any("1 (namespace dev), 1 (schedulerName other)" in n for n in answer.decision.notes)
