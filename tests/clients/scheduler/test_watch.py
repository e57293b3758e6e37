"""Watches: a dropped stream resumes without missing an event; a stale resourceVersion
(`410 Gone`) relists; the API server failing for a while is ridden out; a restarted
scheduler resumes from a relist without binding anything twice."""

from __future__ import annotations

from tests.clients.scheduler.conftest import Harness, gang, node, pod, wait_until


def _restarts(service: object, reason: str) -> float:
    metric = service.metrics.watch_restarts  # type: ignore[attr-defined]
    return sum(
        s.value
        for m in metric.collect()
        for s in m.samples
        if s.name.endswith("_total") and s.labels["reason"] == reason
    )


def test_a_dropped_watch_resumes_without_missing_an_event(cluster: Harness) -> None:
    cluster.create(node("a"), node("b"))
    service = cluster.scheduler()
    cluster.api.store.drop_watches()
    cluster.create(gang("g", 4))  # created while the streams are down
    wait_until(lambda: len(cluster.bound()) == 4, what="the gang bound")
    assert _restarts(service, "gone") == 0  # resumed from its version, no relist
    # the snapshot was put once and then only moved by deltas
    resyncs = sum(s.value for m in service.metrics.resyncs.collect() for s in m.samples)
    assert resyncs == 0 and service.cycle is not None and service.cycle.generation > 1
    assert cluster.api.store.counts.get("GET", 0) > 0


def test_a_stale_resource_version_relists(cluster: Harness) -> None:
    cluster.create(node("a"), node("b"), gang("g", 2))
    service = cluster.scheduler()
    wait_until(lambda: len(cluster.bound()) == 2, what="first gang")
    cluster.api.store.compact()  # the history the watches would resume from is gone
    cluster.api.store.drop_watches()
    cluster.create(gang("h", 3))
    cluster.api.store.delete("", "pods", "default", "g-0")
    wait_until(lambda: {"h-0", "h-1", "h-2"} <= set(cluster.bound()), what="second gang")
    wait_until(lambda: _restarts(service, "gone") > 0, what="a relist")
    # the relist saw g-0 deleted: the mirror forgot it
    wait_until(lambda: service.cycle.mirror.pod(("default", "g-0")) is None, what="forgotten")


def test_server_errors_are_ridden_out(cluster: Harness) -> None:
    cluster.create(node("a"))
    service = cluster.scheduler()
    cluster.api.store.faults.fail["GET /api/v1/pods"] = [500, 3]
    cluster.api.store.compact()
    cluster.api.store.drop_watches()
    cluster.create(pod("p", 1))
    wait_until(lambda: "p" in cluster.bound(), timeout=15, what="bound after the errors")
    assert _restarts(service, "http_500") >= 1


def test_a_restarted_scheduler_binds_nothing_twice(cluster: Harness) -> None:
    cluster.create(node("a"), node("b"), gang("g", 4))
    first = cluster.scheduler()
    wait_until(lambda: len(cluster.bound()) == 4, what="first gang")
    first.stop(timeout=5)
    cluster.create(gang("h", 4))
    cluster.scheduler()
    wait_until(lambda: len(cluster.bound()) == 8, what="second gang")
    binds = cluster.successful_binds()
    assert len(binds) == len(set(binds)) == 8
    assert all(code == 201 for _, _, code, _ in cluster.api.store.binds)


def test_a_kind_it_may_not_read_is_left_out_and_the_rest_is_scheduled(cluster: Harness) -> None:
    cluster.api.store.faults.fail["GET /apis/scheduling.volcano.sh/v1beta1/queues"] = [403, 99]
    cluster.create(node("a"), gang("g", 2))
    service = cluster.scheduler()  # ready, though one kind is forbidden
    wait_until(lambda: len(cluster.bound()) == 2, what="bound")
    assert _restarts(service, "http_403") == 1
