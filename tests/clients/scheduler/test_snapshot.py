"""The snapshot on the service: put once, then moved by deltas; another writer or a lost
snapshot makes the front end put it again whole, and scheduling goes on; a separate
`gangplan serve` (`--server`) works as the embedded one does."""

from __future__ import annotations

from clients.client import Client
from clients.scheduler import CycleOptions, SchedulerService
from gangplan.v1 import placement_service_pb2 as spb
from server.app import create_server
from server.settings import Settings
from tests.clients.scheduler.conftest import Harness, gang, node, pod, wait_until


def _resyncs(service: SchedulerService, reason: str) -> float:
    return sum(
        s.value
        for m in service.metrics.resyncs.collect()
        for s in m.samples
        if s.name.endswith("_total") and s.labels["reason"] == reason
    )


def _client(service: SchedulerService) -> Client:
    assert service.cycle is not None
    return service.cycle.client


def test_another_writer_or_a_lost_snapshot_puts_it_again(cluster: Harness) -> None:
    cluster.create(node("a"), node("b"), gang("g", 2))
    service = cluster.scheduler()
    wait_until(lambda: len(cluster.bound()) == 2, what="first gang")
    snapshot = service.options.snapshot_id
    # someone else moves the snapshot on: our next delta's expected generation is stale
    _client(service).update_snapshot(spb.UpdateSnapshotRequest(snapshot_id=snapshot))
    cluster.create(gang("h", 2))
    wait_until(lambda: len(cluster.bound()) == 4, what="second gang")
    assert _resyncs(service, "FAILED_PRECONDITION") >= 1
    # the service forgets it (a restart, or its memory budget)
    _client(service).delete_snapshot(snapshot)
    cluster.create(gang("k", 2))
    wait_until(lambda: len(cluster.bound()) == 6, what="third gang")
    assert _resyncs(service, "NOT_FOUND") >= 1
    binds = cluster.successful_binds()
    assert len(binds) == len(set(binds)) == 6


def test_a_separate_gangplan_service(cluster: Harness) -> None:
    srv, port = create_server(Settings(host="127.0.0.1", port=0, metrics_port=None))
    srv.start()
    try:
        cluster.create(node("a"), gang("g", 3))
        service = SchedulerService(
            cluster.kube(), CycleOptions(), server=f"127.0.0.1:{port}", http_port=None
        )
        cluster.services.append(service.start())
        wait_until(lambda: len(cluster.bound()) == 3, what="bound through --server")
        assert service.embedded is None
        assert [s for s, _, _ in srv.store.listing()] == [service.options.snapshot_id]
    finally:
        srv.stop(grace=0)


def test_a_refused_object_deleted_later_is_no_removal_the_service_refuses(
    cluster: Harness,
) -> None:
    bad = pod("bad", 1)
    bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    cluster.create(node("a"), bad)
    service = cluster.scheduler()
    wait_until(lambda: cluster.events("FailedValidation"), what="refused")
    cluster.api.store.delete("", "pods", "default", "bad")
    cluster.create(gang("g", 2))
    wait_until(lambda: len(cluster.bound()) == 2, what="the next gang")
    assert sum(s.value for m in service.metrics.resyncs.collect() for s in m.samples) == 0


def test_a_pending_pod_turned_invalid_leaves_the_snapshot(cluster: Harness) -> None:
    cluster.create(node("a", gpus=1), pod("p", 2))  # waits: 2 GPUs on a 1-GPU node
    service = cluster.scheduler()
    wait_until(lambda: cluster.condition("p"), what="waiting")
    current = cluster.api.store.get("", "pods", "default", "p")
    broken = {**current, "spec": {**current["spec"], "priority": "high"}}
    cluster.api.store.update("", "pods", "default", "p", broken)
    wait_until(lambda: cluster.events("FailedValidation"), what="refused")
    assert service.cycle is not None
    wait_until(lambda: "default/p" not in service.cycle.gang_of, what="left the snapshot")
    cluster.create(node("b", gpus=4))  # room now, but the invalid pod is not placed
    cluster.create(pod("q", 2))
    wait_until(lambda: "q" in cluster.bound(), what="q bound")
    assert "p" not in cluster.bound()
