"""The Python client against a real server: every RPC has a typed method, and only the
idempotent calls are retried.

Retries are observed through `FlakyProxy`, a byte-level gRPC proxy in front of a real server
that fails the first attempts of each method with a chosen status and counts every attempt
that reached it (the proxy answers before forwarding, as an overloaded or restarting server
would, so a failed attempt never reaches the real server).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest

from clients.client import IDEMPOTENT, MAX_RETRIES, Client, ClientError
from gangplan.v1 import cluster_pb2 as pb
from gangplan.v1 import placement_service_pb2 as spb
from server import GangplanServer
from tests.server.conftest import GPU, gang_job, gpu_pod, small_cluster

Code = grpc.StatusCode
Start = Callable[..., tuple[GangplanServer, int]]
PREFIX = "/gangplan.v1.PlacementService/"
HEALTH = "/grpc.health.v1.Health/Check"
GPU4 = {"cpu": 32_000, "nvidia.com/gpu": 4}  # a catalogue node type's allocatable


class FlakyProxy(grpc.GenericRpcHandler):
    """Forwards every unary call to `backend`, after failing the first `failures` attempts
    of each method with `code`; `attempts[method]` counts what arrived."""

    def __init__(self, backend: str, failures: int, code: grpc.StatusCode) -> None:
        self.backend = backend
        self.failures = failures
        self.code = code
        self.attempts: Counter[str] = Counter()
        self._lock = threading.Lock()
        # The proxy's own channel must not retry: only the client under test does.
        self._channel = grpc.insecure_channel(backend, options=[("grpc.enable_retries", 0)])

    def service(
        self, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        method: str = handler_call_details.method  # type: ignore[attr-defined]
        forward = self._channel.unary_unary(method)  # bytes in, bytes out

        def behaviour(request: bytes, context: grpc.ServicerContext) -> bytes:
            with self._lock:
                self.attempts[method] += 1
                failing = self.attempts[method] <= self.failures
            if failing:
                context.abort(self.code, "flaky proxy")
            try:
                answer: bytes = forward(
                    request,
                    timeout=context.time_remaining(),
                    metadata=context.invocation_metadata(),
                )
            except grpc.RpcError as err:
                context.abort(err.code(), err.details() or "")  # type: ignore[attr-defined]
            return answer

        return grpc.unary_unary_rpc_method_handler(behaviour)

    def close(self) -> None:
        self._channel.close()


@pytest.fixture
def flaky(start: Start) -> Iterator[Callable[..., tuple[FlakyProxy, GangplanServer, int]]]:
    """flaky(failures, code) -> (proxy, the real server, the proxy's port)."""
    running: list[tuple[grpc.Server, FlakyProxy]] = []

    def factory(
        failures: int = 1, code: grpc.StatusCode = Code.UNAVAILABLE
    ) -> tuple[FlakyProxy, GangplanServer, int]:
        srv, backend_port = start()
        proxy = FlakyProxy(f"127.0.0.1:{backend_port}", failures, code)
        front = grpc.server(futures.ThreadPoolExecutor(max_workers=4), handlers=[proxy])
        port = front.add_insecure_port("127.0.0.1:0")
        front.start()
        running.append((front, proxy))
        return proxy, srv, port

    yield factory
    for front, proxy in running:
        front.stop(0)
        proxy.close()


def _every_read(client: Client) -> dict[str, Callable[[], Any]]:
    """One call of each idempotent RPC, on the stored snapshot `s`."""
    catalogue = [spb.PlanNodeType(name="gpu4", cost=10, allocatable=GPU4)]
    return {
        "PlaceJob": lambda: client.place_job(gang_job("j", 1), snapshot="s"),
        "Preempt": lambda: client.preempt(gang_job("j", 1), snapshot="s"),
        "Enqueue": lambda: client.enqueue(gang_job("j", 1), snapshot="s"),
        "ValidateQueues": lambda: client.validate_queues(snapshot="s"),
        "PlanCapacity": lambda: client.plan_capacity(
            gang_job("j", 1), catalogue, snapshot="s", workers=1
        ),
        "Why": lambda: client.why("default/j", gang_job("j", 1), snapshot="s"),
        "Defragment": lambda: client.defragment(snapshot="s", workers=1),
    }


def test_idempotent_calls_are_retried_until_they_succeed(flaky: Any) -> None:
    proxy, _, port = flaky(failures=2)
    with Client(proxy.backend) as direct:
        direct.put_snapshot(small_cluster(), "s")
    with Client(f"127.0.0.1:{port}", retries=2, timeout=20) as client:
        calls = _every_read(client)
        assert sorted(calls) == sorted(IDEMPOTENT)
        answers = {name: call() for name, call in calls.items()}
    assert answers["PlaceJob"].placed and answers["Preempt"].placed
    assert [a.admitted for a in answers["Enqueue"].admissions] == [True]
    assert answers["ValidateQueues"].valid
    assert answers["PlanCapacity"].placed_pods == 1
    assert answers["Why"].placed
    assert list(answers["Defragment"].freed) == []  # nothing runs on the snapshot
    assert {m.removeprefix(PREFIX): n for m, n in proxy.attempts.items()} == dict.fromkeys(
        IDEMPOTENT, 3
    )


def test_snapshot_writes_are_never_retried(flaky: Any) -> None:
    proxy, srv, port = flaky(failures=1)
    with Client(f"127.0.0.1:{port}", retries=MAX_RETRIES, timeout=10) as client:
        writes: dict[str, Callable[[], Any]] = {
            "PutSnapshot": lambda: client.put_snapshot(small_cluster(), "s"),
            "UpdateSnapshot": lambda: client.update_snapshot(
                spb.UpdateSnapshotRequest(snapshot_id="s", remove_nodes=["n0"])
            ),
            "DeleteSnapshot": lambda: client.delete_snapshot("s"),
        }
        for name, call in writes.items():
            with pytest.raises(ClientError) as err:
                call()
            assert err.value.code is Code.UNAVAILABLE, name
        assert len(srv.store) == 0  # no attempt reached the server
        # The caller decides: a write repeated by hand goes through (the proxy fails once).
        assert client.put_snapshot(small_cluster(), "s").generation == 1
    expected = {f"{PREFIX}{name}": 1 for name in writes}
    expected[f"{PREFIX}PutSnapshot"] = 2
    assert dict(proxy.attempts) == expected


def test_the_health_check_is_retried_unless_retries_is_0(flaky: Any) -> None:
    proxy, _, port = flaky(failures=1)
    with Client(f"127.0.0.1:{port}", retries=1, timeout=10) as client:
        assert client.health() == "SERVING"
    assert proxy.attempts[HEALTH] == 2
    proxy.attempts.clear()
    with Client(f"127.0.0.1:{port}", retries=0, timeout=10) as probe:
        with pytest.raises(ClientError) as err:
            probe.health()
        assert err.value.code is Code.UNAVAILABLE
    assert proxy.attempts[HEALTH] == 1


@pytest.mark.parametrize("retries", [0, 1, MAX_RETRIES])
def test_retries_are_bounded(flaky: Any, retries: int) -> None:
    proxy, _, port = flaky(failures=100)
    with (
        Client(f"127.0.0.1:{port}", retries=retries, timeout=20) as client,
        pytest.raises(ClientError) as err,
    ):
        client.validate_queues(cluster=small_cluster())
    assert err.value.code is Code.UNAVAILABLE
    assert proxy.attempts[f"{PREFIX}ValidateQueues"] == retries + 1


def test_resource_exhausted_is_retried_and_other_errors_are_not(flaky: Any) -> None:
    proxy, _, port = flaky(failures=1, code=Code.RESOURCE_EXHAUSTED)
    with Client(f"127.0.0.1:{port}", retries=1, timeout=20) as client:
        assert client.place_job(gang_job("j", 1), cluster=small_cluster()).placed
        # NOT_FOUND comes from the real server, after the proxy's one failure: not retried
        with pytest.raises(ClientError) as err:
            client.preempt(gang_job("j", 1), snapshot="missing")
    assert err.value.code is Code.NOT_FOUND
    assert proxy.attempts[f"{PREFIX}PlaceJob"] == 2
    assert proxy.attempts[f"{PREFIX}Preempt"] == 2  # the retried overload, then NOT_FOUND


def test_selection_options_reach_the_server(start: Start) -> None:
    _, port = start()
    cluster = small_cluster()
    cluster.pods.extend(
        [gpu_pod("mine", scheduler_name="gangplan"), gpu_pod("theirs", scheduler_name="other")]
    )
    cluster.pods.append(pb.Pod(namespace="team-b", name="b", requests={"cpu": 100}))
    with Client(f"127.0.0.1:{port}") as client:
        mine = client.place_job(cluster=cluster, scheduler_names=["gangplan"])
        team_b = client.preempt(cluster=cluster, namespaces=["team-b"])
    assert {p.pod for p in mine.decision.placements if p.node} == {"default/mine"}
    assert {p.pod for p in team_b.decision.placements if p.node} == {"team-b/b"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"retries": MAX_RETRIES + 1}, "retries must be 0..4"),
        ({"retries": -1}, "retries must be 0..4"),
        ({"client_cert": b"cert"}, "needs both client_cert and client_key"),
        ({"client_key": b"key"}, "needs both client_cert and client_key"),
    ],
)
def test_bad_options_are_a_clear_error(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Client("127.0.0.1:1", **kwargs)


def test_one_of_snapshot_and_cluster(start: Start) -> None:
    _, port = start()
    with Client(f"127.0.0.1:{port}") as client:
        neither_or_both: list[dict[str, Any]] = [{}, {"snapshot": "s", "cluster": small_cluster()}]
        for kwargs in neither_or_both:
            with pytest.raises(ValueError, match="exactly one of snapshot= and cluster="):
                client.place_job(gang_job("j", 1), **kwargs)
        # PlanCapacity alone may name neither: it plans on an empty cluster
        empty = client.plan_capacity(
            gang_job("j", 1),
            [spb.PlanNodeType(name="gpu4", cost=10, allocatable=GPU4)],
            workers=1,
        )
    assert [(n.node_type, n.count) for n in empty.nodes] == [("gpu4", 1)]


def test_budgets_and_queue_usage_reach_the_server(start: Start) -> None:
    """The Python client carries what the Go and Node tests carry: a PodDisruptionBudget
    (Preempt keeps its pods with `pdb` in the conf) and KAI queues' usage (the less-used
    queue's gang goes first under `usageDBConfig`)."""
    _, port = start()
    cluster = pb.Cluster(nodes=[pb.Node(name="n0", allocatable={"cpu": 4000, "pods": 110})])
    for name in ("a", "b"):
        cluster.pods.append(
            pb.Pod(namespace="default", name=name, node_name="n0", priority=1,
                   labels={"app": "web"}, requests={"cpu": 2000})
        )  # fmt: skip
    urgent = pb.Job(
        pods=[pb.Pod(namespace="default", name="u", priority=100, requests={"cpu": 2000})]
    )
    conf = (
        "actions: 'enqueue, allocate, preempt'\n"
        "tiers: [{plugins: [{name: gang}, {name: predicates}, {name: pdb}]}]"
    )
    with Client(f"127.0.0.1:{port}") as client:
        free = client.preempt(urgent, cluster=cluster, engine="greedy", scheduler_conf=conf)
        cluster.disruption_budgets.add(
            name="web",
            selector=pb.LabelSelector(match_labels={"app": "web"}),
            disruptions_allowed=0,
        )
        held = client.preempt(urgent, cluster=cluster, engine="greedy", scheduler_conf=conf)
    assert (len(free.decision.victims), len(held.decision.victims)) == (1, 0)

    kai = pb.Cluster(nodes=[pb.Node(name="n0", allocatable={"cpu": 32000, GPU: 4, "pods": 110})])
    for name, parent, usage in (("dept", "", 0.0), ("a", "dept", 0.9), ("b", "dept", 0.0)):
        kai.queues.add(
            name=name,
            parent=parent,
            kai=pb.KaiQueueResources(
                quota={GPU: 0.0, "cpu": -1.0, "memory": -1.0},
                limit={GPU: -1.0, "cpu": -1.0, "memory": -1.0},
                over_quota_weight={GPU: 1.0, "cpu": 1.0, "memory": 1.0},
                usage={GPU: usage} if usage else {},
            ),
        )
        if parent:
            job = gang_job(f"job-{name}", 3, 1)
            job.gangs[0].queue = name
            kai.gangs.extend(job.gangs)
            kai.pods.extend(job.pods)
    plain = "tiers: [{plugins: [{name: gang}, {name: predicates}]}]"
    with Client(f"127.0.0.1:{port}") as client:
        by_weight = client.place_job(cluster=kai, engine="greedy", scheduler_conf=plain)
        by_usage = client.place_job(
            cluster=kai,
            engine="greedy",
            scheduler_conf="usageDBConfig: {usageParams: {windowSize: 168h}}\n" + plain,
        )
    assert [g.gang for g in by_weight.decision.gangs if g.placed] == ["default/job-a"]
    assert [g.gang for g in by_usage.decision.gangs if g.placed] == ["default/job-b"]


def test_topology_sub_groups_reach_the_server(start: Start) -> None:
    """KAI sub-groups each in one rack of their own (`Gang.topology_sub_groups`): sub-group
    b's 3 pods of 4 GPUs fit no rack of two 4-GPU nodes, so the gang waits and says which
    sub-group; without the sub-groups it is placed."""
    _, port = start()
    nodes = [
        pb.Node(name=f"n{i}", labels={"zone": "z", "rack": f"r{i // 2}"},
                allocatable={"cpu": 32000, GPU: 4, "pods": 110})
        for i in range(4)
    ]  # fmt: skip
    job = gang_job("kai", 4, 4)
    for i, p in enumerate(job.pods):
        p.labels["kai.scheduler/subgroup-name"] = "a" if i == 0 else "b"
    plain = job.gangs[0].SerializeToString()
    for leaf in ("a", "b"):
        job.gangs[0].topology_sub_groups.add(
            name=leaf, label="kai.scheduler/subgroup-name", values=[leaf], levels=["zone", "rack"]
        )
    with Client(f"127.0.0.1:{port}") as client:
        waits = client.place_job(job, cluster=pb.Cluster(nodes=nodes), engine="greedy")
        job.gangs[0].CopyFrom(pb.Gang.FromString(plain))
        placed = client.place_job(job, cluster=pb.Cluster(nodes=nodes), engine="greedy")
    assert not waits.decision.gangs[0].placed
    assert "sub-group b" in waits.decision.gangs[0].reason
    assert placed.decision.gangs[0].placed
