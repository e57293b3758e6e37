"""Why end to end: a real server on 127.0.0.1:0, through the Python client.

n0 [4 GPU]  n1 [4 GPU]  n2 [4 GPU]      train: 5 × 4 GPU (all required)
-> capacity: 20 GPUs needed, 12 free; +2 nodes like n0; minMember 3; starts when
   nothing ends (no running pod): no start found
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import grpc
import pytest
import yaml

from clients.client import Client, ClientError
from gangplan.v1 import cluster_pb2 as pb
from gangplan.v1 import placement_service_pb2 as spb
from gangplan.v1 import placement_service_pb2_grpc as spb_grpc
from solver.config import SchedulerConf
from tests.server.conftest import gang_job, gpu_pod, small_cluster


def test_why_gives_the_certificate_the_changes_and_the_start(start: Any) -> None:
    _, port = start()
    with Client(f"127.0.0.1:{port}", timeout=30) as client:
        answer = client.why("default/train", gang_job("train", 5, gpus=4), cluster=small_cluster())
    assert not answer.placed
    cert = answer.certificate
    assert cert.kind == "capacity" and cert.proven and (cert.needed, cert.offered) == (20, 12)
    assert [(c.kind, c.change, c.size) for c in answer.changes] == [
        ("nodes", "+2 node(s) like n0, empty", 2),
        ("min-member", "minMember 3 instead of 5", 2),
    ]
    assert answer.start.text.startswith("no start found") and not answer.start.HasField("at")
    assert answer.decision.certificates["default/train"].sentence == cert.sentence


def _two_at_six(start: Any, cluster: pb.Cluster, **options: Any) -> Any:
    """Why a 2 × 4 GPU gang waits on `cluster`, asked at 18:00 on 2026-11-28."""
    _, port = start()
    with Client(f"127.0.0.1:{port}", timeout=30) as client:
        return client.why(
            "default/two",
            gang_job("two", 2, gpus=4),
            cluster=cluster,
            now=datetime(2026, 11, 28, 18, 0, tzinfo=UTC),
            **options,
        )


def test_why_estimates_from_the_running_pods_ends(start: Any) -> None:
    """n0..n2 hold a 4-GPU pod each, ending at 19:00, 20:00 and 21:00: a 2 × 4 GPU gang
    (room for none now) starts at 20:00 on n0 and n1."""
    cluster = small_cluster()
    for i, hour in enumerate((19, 20, 21)):
        running = gpu_pod(f"run-{i}", gpus=4)
        running.node_name = f"n{i}"
        running.annotations["gangplan.io/expected-end"] = f"2026-11-28T{hour}:00:00Z"
        cluster.pods.append(running)
    answer = _two_at_six(start, cluster)
    assert answer.start.at.ToDatetime(tzinfo=UTC) == datetime(2026, 11, 28, 20, 0, tzinfo=UTC)
    assert list(answer.start.nodes) == ["n0", "n1"]
    assert list(answer.start.after) == ["default/run-0", "default/run-1"]


def test_why_counts_runtimes_from_the_pods_creation_over_grpc(start: Any) -> None:
    """An expected runtime (and the call's default runtime) runs from a pod's creation time:
    over gRPC the snapshot's own column, where it used to be unknown (no start found)."""
    cluster = small_cluster()
    for i, runtime in enumerate(("2h", "3h", "")):
        running = gpu_pod(f"run-{i}", gpus=4)
        running.node_name = f"n{i}"
        running.creation_time.FromDatetime(datetime(2026, 11, 28, 17, 0))
        if runtime:
            running.annotations["gangplan.io/expected-runtime"] = runtime
        cluster.pods.append(running)
    answer = _two_at_six(start, cluster, default_runtime=5 * 3600.0)
    assert answer.start.at.ToDatetime(tzinfo=UTC) == datetime(2026, 11, 28, 20, 0, tzinfo=UTC)
    assert list(answer.start.nodes) == ["n0", "n1"]


def test_why_reads_each_priority_class_runtime_from_the_conf_over_grpc(start: Any) -> None:
    """The conf's `expectedRuntime` gives the pods of a class their runtime
    (`priority_class_name`); one stated on the pod wins; a class of 0 runs on."""
    cluster = small_cluster()
    for i, klass in enumerate(("train", "batch", "serve")):
        running = gpu_pod(f"run-{i}", gpus=4)
        running.node_name = f"n{i}"
        running.priority_class_name = klass
        running.creation_time.FromDatetime(datetime(2026, 11, 28, 17, 0))
        cluster.pods.append(running)
    runtimes = {"default": "4h", "priorityClasses": {"train": "2h", "serve": "0s"}}
    conf = yaml.safe_dump({**SchedulerConf.default().to_dict(), "expectedRuntime": runtimes})
    answer = _two_at_six(start, cluster, scheduler_conf=conf)
    # train ends 19:00, batch (the default) 21:00, serve never: both on n0 and n1 at 21:00
    assert answer.start.at.ToDatetime(tzinfo=UTC) == datetime(2026, 11, 28, 21, 0, tzinfo=UTC)
    assert list(answer.start.nodes) == ["n0", "n1"]
    cluster.pods[1].annotations["gangplan.io/priority-class"] = "train"  # it states its own
    answer = _two_at_six(start, cluster, scheduler_conf=conf)
    assert answer.start.at.ToDatetime(tzinfo=UTC) == datetime(2026, 11, 28, 19, 0, tzinfo=UTC)


def test_a_priority_class_name_too_long_is_invalid_argument(start: Any) -> None:
    cluster = small_cluster()
    running = gpu_pod("run", gpus=4)
    running.node_name = "n0"
    running.priority_class_name = "x" * 254
    cluster.pods.append(running)
    _, port = start()
    with Client(f"127.0.0.1:{port}", timeout=30) as client, pytest.raises(ClientError) as err:
        client.why("default/t", gang_job("t", 1, gpus=4), cluster=cluster)
    assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert [f for f, _ in err.value.violations] == ["cluster.pods[0].priority_class_name"]


def test_a_placed_gang_has_nothing_to_explain(start: Any) -> None:
    _, port = start()
    with Client(f"127.0.0.1:{port}", timeout=30) as client:
        answer = client.why("default/ok", gang_job("ok", 2, gpus=4), cluster=small_cluster())
    assert answer.placed and not answer.HasField("certificate") and not answer.changes


@pytest.mark.parametrize("gang", ["", "nope", "default/missing"])
def test_a_gang_not_in_the_call_is_invalid(start: Any, gang: str) -> None:
    _, port = start()
    with Client(f"127.0.0.1:{port}", timeout=30) as client, pytest.raises(ClientError) as err:
        client.why(gang, gang_job("ok", 1, gpus=1), cluster=small_cluster())
    assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert [f for f, _ in err.value.violations] == ["gang"]


def test_the_job_is_optional(start: Any) -> None:
    cluster = small_cluster(nodes=1)
    cluster.gangs.append(pb.Gang(namespace="default", name="g", min_member=2))
    cluster.pods.extend(gpu_pod(f"g-{i}", gang="default/g", gpus=4) for i in range(2))
    _, port = start()
    with Client(f"127.0.0.1:{port}", timeout=30) as client:
        answer = client.why("default/g", cluster=cluster)
    assert answer.certificate.kind == "capacity"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("default_runtime_seconds", float("inf")),
        ("default_runtime_seconds", float("nan")),
        ("default_runtime_seconds", -1.0),
        ("default_runtime_seconds", 1e300),
        ("now", 2**62),
    ],
)
def test_a_bad_clock_is_invalid_argument_naming_the_field(
    start: Any, field: str, value: float
) -> None:
    _, port = start()
    request = spb.WhyRequest(gang="default/t", cluster=small_cluster(), job=gang_job("t", 9, 4))
    if field == "now":
        request.now.seconds = int(value)
    else:
        request.default_runtime_seconds = value
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = spb_grpc.PlacementServiceStub(channel)
        with pytest.raises(grpc.RpcError) as err:
            stub.Why(request, timeout=30)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert field in (err.value.details() or "")


def test_why_buys_the_cheapest_node_type_of_the_request(start: Any) -> None:
    types = [
        spb.PlanNodeType(name="gpu4", cost=10, allocatable={"cpu": 32_000, "nvidia.com/gpu": 4}),
        spb.PlanNodeType(name="gpu8", cost=15, allocatable={"cpu": 32_000, "nvidia.com/gpu": 8}),
    ]
    _, port = start()
    with Client(f"127.0.0.1:{port}", timeout=30) as client:
        answer = client.why(
            "default/train", gang_job("train", 5, gpus=4), cluster=small_cluster(), node_types=types
        )
        bad = [spb.PlanNodeType(name="x", cost=-1, allocatable={"cpu": 1})]
        with pytest.raises(ClientError) as err:
            client.why("default/train", gang_job("train", 5, gpus=4), cluster=small_cluster(),
                       node_types=bad)  # fmt: skip
    nodes = [(c.change, c.size, c.target) for c in answer.changes if c.kind == "nodes"]
    assert nodes == [("+1 gpu8 node(s) (cost 15)", 1, "gpu8")]
    assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert [f for f, _ in err.value.violations] == ["node_types[0].cost"]
