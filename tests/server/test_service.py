"""End to end over loopback: a real server on 127.0.0.1:0 and the typed client."""

from __future__ import annotations

import threading
import time
from typing import Any

import grpc
import pytest

from clients.client import Client, ClientError
from gangplan.v1 import cluster_pb2 as pb
from gangplan.v1 import placement_service_pb2 as spb
from gangplan.v1 import placement_service_pb2_grpc as spb_grpc
from server import Settings
from solver import schedule
from tests.server.conftest import gang_job, gpu_node, gpu_pod, small_cluster

Code = grpc.StatusCode


def _client(port: int, **kw: Any) -> Client:
    return Client(f"127.0.0.1:{port}", **kw)


def _nodes(response: spb.PlaceJobResponse) -> dict[str, str]:
    return {p.pod: p.node for p in response.decision.placements}


# ----------------------------------------------------------------------------- placement


def test_place_job_on_a_snapshot_and_inline_agree(start: Any) -> None:
    _, port = start()
    with _client(port) as client:
        put = client.put_snapshot(small_cluster(), "prod")
        assert (put.snapshot_id, put.generation) == ("prod", 1)
        on_snapshot = client.place_job(gang_job("train", 3, gpus=4), snapshot="prod")
        inline = client.place_job(gang_job("train", 3, gpus=4), cluster=small_cluster())
    assert on_snapshot.placed and inline.placed
    assert on_snapshot.generation == 1 and inline.generation == 0
    assert sorted(_nodes(on_snapshot).values()) == ["n0", "n1", "n2"]
    assert _nodes(on_snapshot) == _nodes(inline)
    assert [g.gang for g in on_snapshot.decision.gangs] == ["default/train"]
    assert on_snapshot.decision.status == "HEURISTIC"


def test_place_job_is_read_only_and_only_reports_the_job(start: Any) -> None:
    srv, port = start()
    cluster = small_cluster()
    cluster.gangs.append(pb.Gang(name="running", min_member=1))
    cluster.pods.append(gpu_pod("r-0", gang="default/running", gpus=4, node="n0"))
    cluster.pods.append(gpu_pod("someone-elses", gpus=1))  # pending, not part of the job
    with _client(port) as client:
        client.put_snapshot(cluster, "s")
        answer = client.place_job(gang_job("train", 2, gpus=4), snapshot="s")
        again = client.place_job(gang_job("train", 2, gpus=4), snapshot="s")
    assert answer.placed
    assert set(_nodes(answer)) == {"default/train-0", "default/train-1"}
    assert "n0" not in _nodes(answer).values()  # n0's GPUs are held by the running pod
    assert [g.gang for g in answer.decision.gangs] == ["default/train"]
    assert _nodes(again) == _nodes(answer)  # nothing was stored by the first call
    assert srv.store.get("s").generation == 1


def test_unschedulable_is_an_answer_with_reasons(start: Any) -> None:
    _, port = start()
    with _client(port) as client:
        answer = client.place_job(gang_job("big", 4, gpus=4), cluster=small_cluster())
    assert not answer.placed
    (gang,) = answer.decision.gangs
    assert not gang.placed
    assert "3 of 4 required pod(s) fit" in gang.reason
    assert "Insufficient nvidia.com/gpu" in answer.decision.placements[0].reason


def test_empty_job_places_every_pending_pod(start: Any) -> None:
    _, port = start()
    cluster = small_cluster()
    cluster.pods.extend([gpu_pod("a"), gpu_pod("b")])
    with _client(port) as client:
        answer = client.place_job(cluster=cluster)
    assert set(_nodes(answer)) == {"default/a", "default/b"}
    assert answer.placed


def test_gang_ids_place_pending_pods_already_in_the_snapshot(start: Any) -> None:
    _, port = start()
    cluster = small_cluster()
    job = gang_job("train", 2)
    cluster.gangs.extend(job.gangs)
    cluster.pods.extend(job.pods)
    with _client(port) as client:
        client.put_snapshot(cluster, "s")
        answer = client.place_job(pb.Job(gang_ids=["default/train"]), snapshot="s")
    assert answer.placed and set(_nodes(answer)) == {"default/train-0", "default/train-1"}


def test_gang_group_members_are_placed_together(start: Any) -> None:
    _, port = start()
    job = pb.Job(
        gangs=[
            pb.Gang(name="master", min_member=1, groups=["default/worker"]),
            pb.Gang(name="worker", min_member=4, groups=["default/master"]),
        ],
        pods=[gpu_pod("m-0", gang="default/master", gpus=0)]
        + [gpu_pod(f"w-{i}", gang="default/worker", gpus=4) for i in range(4)],
    )
    with _client(port) as client:
        answer = client.place_job(job, cluster=small_cluster())
    assert not answer.placed  # 4 workers need 16 GPUs, 12 exist: the master waits too
    assert {g.gang: g.placed for g in answer.decision.gangs} == {
        "default/master": False,
        "default/worker": False,
    }


def test_preempt_evicts_lower_priority_pods_or_says_why_not(start: Any) -> None:
    _, port = start()
    cluster = small_cluster(nodes=1)
    cluster.pods.append(gpu_pod("low", gpus=4, node="n0", priority=1))
    job = gang_job("hi", 2, gpus=2)
    for p in job.pods:
        p.priority = 100
    with _client(port) as client:
        answer = client.preempt(job, cluster=cluster)
        fits = client.preempt(gang_job("small", 2), cluster=small_cluster())
        too_big = client.preempt(gang_job("big", 2, gpus=8), cluster=cluster)
    assert answer.placed and answer.reason == ""
    (victim,) = answer.decision.victims
    assert victim.pod == "default/low" and victim.node == "n0"
    assert "preempting to accommodate higher priority pods, preemptor: default/hi" in victim.message
    assert {p.nominated_node for p in answer.decision.placements} == {"n0"}
    assert fits.placed and not fits.decision.victims
    assert not too_big.placed and not too_big.decision.victims and too_big.reason


def test_enqueue_checks_the_queue(start: Any) -> None:
    _, port = start()
    job = gang_job("big", 4, gpus=4)
    job.gangs[0].queue = "team-a"
    with _client(port) as client:
        client.put_snapshot(small_cluster(), "s")
        answer = client.enqueue(job, snapshot="s")
    (admission,) = answer.admissions
    assert admission.gang == "default/big" and not admission.admitted
    assert admission.reason == "not enqueued: queue team-a does not exist"
    assert answer.generation == 1


def test_validate_queues(start: Any) -> None:
    _, port = start()
    cluster = pb.Cluster(
        queues=[
            pb.Queue(name="root", guarantee={"cpu": 4000}),
            pb.Queue(name="a", parent="root", guarantee={"cpu": 3000}, deserved={"cpu": 2000}),
            pb.Queue(name="b", parent="root", guarantee={"cpu": 2000}),
            pb.Queue(name="orphan", parent="nowhere"),
        ]
    )
    cycle = pb.Cluster(queues=[pb.Queue(name="x", parent="y"), pb.Queue(name="y", parent="x")])
    with _client(port) as client:
        bad = client.validate_queues(cluster=cluster)
        good = client.validate_queues(cluster=pb.Cluster(queues=[pb.Queue(name="root")]))
        with pytest.raises(ClientError) as refused:
            client.validate_queues(cluster=cycle)
    assert refused.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "cluster.queues[0].parent" in str(refused.value)
    assert good.valid and not good.violations
    found = {(v.queue, v.field) for v in bad.violations}
    assert not bad.valid
    assert found == {
        ("a", "spec.deserved.cpu"),
        ("b", "spec.guarantee.resource.cpu"),
        ("orphan", "spec.parent"),
        ("root", "spec.guarantee.resource.cpu"),
    }


# ----------------------------------------------------------------------------- snapshots


def test_update_snapshot_deltas_are_reflected_in_the_next_placement(start: Any) -> None:
    _, port = start()
    with _client(port) as client:
        client.put_snapshot(small_cluster(nodes=2), "s")
        assert client.place_job(gang_job("j", 2, gpus=4), snapshot="s").placed

        # A running pod takes n0's GPUs: the 2 x 4-GPU gang no longer fits.
        r = client.update_snapshot(
            spb.UpdateSnapshotRequest(
                snapshot_id="s",
                expected_generation=1,
                upsert_pods=[gpu_pod("hog", gpus=4, node="n0")],
            )
        )
        assert (r.generation, r.node_count, r.pod_count) == (2, 2, 1)
        assert not client.place_job(gang_job("j", 2, gpus=4), snapshot="s").placed

        # A new node makes room again, and the answer uses it.
        client.update_snapshot(
            spb.UpdateSnapshotRequest(snapshot_id="s", upsert_nodes=[gpu_node("n9")])
        )
        answer = client.place_job(gang_job("j", 2, gpus=4), snapshot="s")
        assert answer.placed and answer.generation == 3
        assert sorted(_nodes(answer).values()) == ["n1", "n9"]

        # A pending pod bound by the front end holds resources from then on.
        client.update_snapshot(
            spb.UpdateSnapshotRequest(
                snapshot_id="s",
                upsert_pods=[gpu_pod("late", gpus=4)],
                bindings=[spb.Binding(pod="default/late", node="n9")],
            )
        )
        assert not client.place_job(gang_job("j", 2, gpus=4), snapshot="s").placed

        # Removing the hog frees n0.
        client.update_snapshot(
            spb.UpdateSnapshotRequest(snapshot_id="s", remove_pods=["default/hog"])
        )
        answer = client.place_job(gang_job("j", 2, gpus=4), snapshot="s")
        assert sorted(_nodes(answer).values()) == ["n0", "n1"]


def test_stale_generation_is_failed_precondition(start: Any) -> None:
    _, port = start()
    with _client(port) as client:
        client.put_snapshot(small_cluster(), "s")
        client.put_snapshot(small_cluster(), "s")  # generation 2
        with pytest.raises(ClientError) as err:
            client.place_job(gang_job("j", 1), snapshot="s", expected_generation=1)
        assert err.value.code is Code.FAILED_PRECONDITION
        assert "generation 2" in err.value.details
        assert client.place_job(gang_job("j", 1), snapshot="s", expected_generation=2).placed
        with pytest.raises(ClientError) as err:
            client.update_snapshot(
                spb.UpdateSnapshotRequest(
                    snapshot_id="s", expected_generation=1, remove_nodes=["n0"]
                )
            )
        assert err.value.code is Code.FAILED_PRECONDITION


def test_unknown_snapshot_is_not_found(start: Any) -> None:
    _, port = start()
    with _client(port) as client:
        for call in (
            lambda: client.place_job(gang_job("j", 1), snapshot="nope"),
            lambda: client.update_snapshot(spb.UpdateSnapshotRequest(snapshot_id="nope")),
            lambda: client.delete_snapshot("nope"),
        ):
            with pytest.raises(ClientError) as err:
                call()
            assert err.value.code is Code.NOT_FOUND
        client.put_snapshot(small_cluster(), "gone")
        client.delete_snapshot("gone")
        with pytest.raises(ClientError) as err:
            client.place_job(gang_job("j", 1), snapshot="gone")
        assert err.value.code is Code.NOT_FOUND


def test_a_rejected_update_changes_nothing(start: Any) -> None:
    srv, port = start()
    with _client(port) as client:
        client.put_snapshot(small_cluster(), "s")
        with pytest.raises(ClientError) as err:
            client.update_snapshot(
                spb.UpdateSnapshotRequest(
                    snapshot_id="s",
                    remove_nodes=["n0"],
                    bindings=[spb.Binding(pod="default/ghost", node="n1")],
                )
            )
    assert err.value.code is Code.INVALID_ARGUMENT
    assert err.value.violations == [
        ("bindings[0].pod", "pod 'default/ghost' is not in the snapshot")
    ]
    snap = srv.store.get("s")
    assert snap.generation == 1 and "n0" in snap.snapshot.nodes.index


# ----------------------------------------------------------------------------- errors


def test_invalid_argument_names_every_field(start: Any) -> None:
    _, port = start()
    cluster = pb.Cluster(
        nodes=[
            pb.Node(name="", allocatable={"cpu": 1000}),
            pb.Node(name="n1", allocatable={"cpu": -5}, taints=[pb.Taint(key="k")]),
            pb.Node(name="n1"),
        ],
        pods=[
            pb.Pod(
                name="p",
                gang="default/missing",
                required_node_affinity=[
                    pb.NodeSelectorTerm(
                        match_expressions=[
                            pb.NodeSelectorRequirement(
                                key="x", operator=pb.SELECTOR_OPERATOR_GT, values=["a"]
                            )
                        ]
                    )
                ],
            )
        ],
    )
    with _client(port) as client, pytest.raises(ClientError) as err:
        client.place_job(cluster=cluster)
    assert err.value.code is Code.INVALID_ARGUMENT
    fields = [f for f, _ in err.value.violations]
    assert fields == [
        "cluster.nodes[0].name",
        'cluster.nodes[1].allocatable["cpu"]',
        "cluster.nodes[1].taints[0].effect",
        "cluster.nodes[2].name",
        "cluster.pods[0].required_node_affinity[0].match_expressions[0].values",
        "cluster.pods[0].gang",
    ]


def test_invalid_options_and_missing_cluster(start: Any) -> None:
    _, port = start()
    with _client(port) as client:
        with pytest.raises(ClientError) as err:
            client.place_job(gang_job("j", 1), cluster=small_cluster(), engine="magic")
        assert err.value.code is Code.INVALID_ARGUMENT
        assert err.value.violations[0][0] == "options.engine"
        with pytest.raises(ClientError) as err:
            client.place_job(
                gang_job("j", 1), cluster=small_cluster(), scheduler_conf="actions: nope"
            )
        assert err.value.violations[0][0] == "options.scheduler_conf.actions[0]"
        stub = spb_grpc.PlacementServiceStub(client.channel)
        with pytest.raises(grpc.RpcError) as raw:
            stub.PlaceJob(spb.PlaceJobRequest(job=gang_job("j", 1)), timeout=5)
        assert raw.value.code() is Code.INVALID_ARGUMENT


def test_a_scheduler_conf_in_the_request_is_used(start: Any) -> None:
    _, port = start()
    conf = "actions: enqueue, allocate\ntiers:\n- plugins:\n  - name: predicates\n  - name: sla\n"
    with _client(port) as client:
        # Without the gang plugin, members of an oversized gang are placed one by one.
        answer = client.place_job(
            gang_job("big", 4, gpus=4), cluster=small_cluster(), scheduler_conf=conf
        )
    assert len([p for p in answer.decision.placements if p.node]) == 3
    assert any("sla" in n and "options.scheduler_conf" in n for n in answer.decision.notes)


def test_proportion_over_grpc_shares_by_weight_and_reports_the_queues(start: Any) -> None:
    """The fair share through the gRPC door: queue weights on the wire, Volcano's
    proportion in the request's conf, each queue's limit and placed GPUs in the answer."""
    _, port = start()
    conf = "actions: enqueue, allocate\ntiers:\n- plugins:\n  - name: gang\n  - name: proportion\n"
    cluster = small_cluster(nodes=2, gpus=4)  # 8 GPUs
    cluster.queues.extend([pb.Queue(name="a", weight=1), pb.Queue(name="b", weight=3)])
    job = pb.Job()
    for q in "ab":
        for i in range(4):
            name = f"{q}{i}"
            job.gangs.append(pb.Gang(namespace="default", name=name, min_member=2, queue=q))
            job.pods.extend(gpu_pod(f"{name}-{k}", gang=f"default/{name}") for k in range(2))
    with _client(port) as client:
        answer = client.place_job(job, cluster=cluster, scheduler_conf=conf)
    uses = {q.queue: q for q in answer.decision.queues}
    assert uses["a"].limit["nvidia.com/gpu"] == 2 and uses["b"].limit["nvidia.com/gpu"] == 6
    assert uses["a"].placed["nvidia.com/gpu"] == 2 and uses["b"].placed["nvidia.com/gpu"] == 6


def test_oversized_message_is_refused_and_the_server_lives_on(start: Any) -> None:
    _, port = start(max_message_mb=1)
    huge = pb.Cluster(
        nodes=[gpu_node(f"node-{i:06d}", **{"label": "x" * 200}) for i in range(6000)]
    )
    with _client(port, retries=0) as client:
        with pytest.raises(ClientError) as err:
            client.put_snapshot(huge, "big")
        assert err.value.code is Code.RESOURCE_EXHAUSTED
        assert client.place_job(gang_job("j", 1), cluster=small_cluster()).placed


# ----------------------------------------------------------------------------- deadlines, load


def test_too_short_deadline_fails_fast_and_server_stays_healthy(start: Any) -> None:
    _, port = start()
    with _client(port) as client:
        with pytest.raises(ClientError) as err:
            client.place_job(gang_job("j", 2), cluster=small_cluster(), timeout=0.0005)
        assert err.value.code is Code.DEADLINE_EXCEEDED
        assert client.health() == "SERVING"
        assert client.place_job(gang_job("j", 2), cluster=small_cluster()).placed


def test_a_short_deadline_gets_the_greedy_answer_on_time(start: Any) -> None:
    _, port = start()
    cluster = pb.Cluster(nodes=[gpu_node(f"n{i:03d}", 8) for i in range(64)])
    with _client(port) as client:
        started = time.perf_counter()
        answer = client.place_job(
            gang_job("j", 32, gpus=4), cluster=cluster, engine="cpsat", timeout=0.08
        )
        elapsed = time.perf_counter() - started
    assert answer.placed
    assert elapsed < 0.08
    assert answer.decision.engine == "greedy" and answer.decision.status == "HEURISTIC"
    assert any("greedy answered" in n for n in answer.decision.notes)


def test_the_deadline_is_the_solver_budget(start: Any) -> None:
    seen: dict[str, Any] = {}

    def spy(snapshot: Any, conf: Any, *, workload: Any, engine: str, **kw: Any) -> Any:
        seen.update(engine=engine, **kw)
        return schedule(snapshot, conf, workload=workload, engine="greedy")

    _, port = start(schedule_fn=spy, solver_workers=1, seed=7)
    with _client(port) as client:
        client.place_job(gang_job("j", 1), cluster=small_cluster(), engine="auto", timeout=2.0)
    assert seen["engine"] == "auto" and seen["workers"] == 1 and seen["seed"] == 7
    assert 1.5 < seen["time_limit"] < 2.0


def test_a_call_that_cannot_be_answered_in_time_is_refused_at_once(start: Any) -> None:
    """`answer_ratio` so high that no deadline leaves enough after decoding: the server says
    so at once (its own DEADLINE_EXCEEDED, well before the deadline), and never solves."""
    called: list[int] = []

    def spy(*a: Any, **kw: Any) -> Any:
        called.append(1)
        return schedule(*a, **kw)

    _, port = start(schedule_fn=spy, answer_ratio=1e9)
    with _client(port, retries=0) as client:
        client.health(timeout=5)
        started = time.perf_counter()
        with pytest.raises(ClientError) as err:
            client.place_job(gang_job("j", 2), cluster=small_cluster(), timeout=5.0)
        assert time.perf_counter() - started < 1.0
    with _client(port, retries=0, timeout=None) as client:  # no deadline: nothing to refuse
        client.place_job(gang_job("j", 2), cluster=small_cluster())
    assert err.value.code is grpc.StatusCode.DEADLINE_EXCEEDED
    assert "the deadline left" in err.value.details and "needs about" in err.value.details
    assert called == [1]


def test_the_answer_floor_follows_decoding_and_the_call_size() -> None:
    settings = Settings(answer_ratio=1.5, deadline_per_pod=15e-6)
    assert settings.answer_floor(0.010, 100) == pytest.approx(0.005 + 0.015)
    assert settings.answer_floor(0.0, 2_000) == pytest.approx(0.005 + 0.030)


def test_overload_is_resource_exhausted(start: Any) -> None:
    entered, release = threading.Event(), threading.Event()

    def slow(model: Any, conf: Any, **kw: Any) -> Any:
        entered.set()
        release.wait(10)
        return schedule(model, conf, **kw)

    _, port = start(schedule_fn=slow, workers=1, max_queued=0)
    results: list[Any] = []
    with _client(port, retries=0) as client:
        first = threading.Thread(
            target=lambda: results.append(
                client.place_job(gang_job("j", 1), cluster=small_cluster(), engine="greedy")
            )
        )
        first.start()
        assert entered.wait(5)
        with pytest.raises(ClientError) as err:
            client.place_job(gang_job("k", 1), cluster=small_cluster())
        assert err.value.code is Code.RESOURCE_EXHAUSTED
        release.set()
        first.join(10)
    assert results and results[0].placed


# ----------------------------------------------------------------------------- security


def test_bearer_token(start: Any) -> None:
    srv, port = start(token="s3cret")
    for token in (None, "wrong"):
        with _client(port, token=token, retries=0) as client:
            with pytest.raises(ClientError) as err:
                client.put_snapshot(small_cluster(), "s")
            assert err.value.code is Code.UNAUTHENTICATED
            assert client.health() == "SERVING"  # health needs no token
    assert len(srv.store) == 0  # the rejected calls touched no state
    with _client(port, token="s3cret") as client:
        client.put_snapshot(small_cluster(), "s")
        assert client.place_job(gang_job("j", 1), snapshot="s").placed


def test_tls(start: Any, certs: Any) -> None:
    _, port = start(tls_cert=certs.server_cert, tls_key=certs.server_key)
    with _client(port, ca_cert=certs.ca) as client:
        assert client.place_job(gang_job("j", 1), cluster=small_cluster()).placed
    with _client(port, retries=0, timeout=2) as plaintext, pytest.raises(ClientError) as err:
        plaintext.place_job(gang_job("j", 1), cluster=small_cluster())
    assert err.value.code is Code.UNAVAILABLE


def test_mutual_tls(start: Any, certs: Any) -> None:
    _, port = start(tls_cert=certs.server_cert, tls_key=certs.server_key, client_ca=certs.ca)
    ok = {"ca_cert": certs.ca, "client_cert": certs.client_cert, "client_key": certs.client_key}
    with _client(port, **ok) as client:
        assert client.place_job(gang_job("j", 1), cluster=small_cluster()).placed
    rogue = {"ca_cert": certs.ca, "client_cert": certs.rogue_cert, "client_key": certs.rogue_key}
    for kw in ({"ca_cert": certs.ca}, rogue):
        with _client(port, retries=0, timeout=2, **kw) as client, pytest.raises(ClientError) as err:
            client.place_job(gang_job("j", 1), cluster=small_cluster())
        assert err.value.code is Code.UNAVAILABLE
