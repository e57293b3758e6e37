"""Leader election (`--leader-elect`): of two replicas against one API server only the
Lease's holder writes; the other takes over when it stops; a leader whose Lease is taken
stops writing within its renew deadline. Requests are told apart by the replica's
user agent in the fake's audit counts."""

from __future__ import annotations

import time
from typing import Any

import pytest
from typer.testing import CliRunner

from clients.cli import app
from clients.scheduler import CycleOptions, SchedulerService
from clients.scheduler.binder import Assignment, Binder, BindResult
from clients.scheduler.kinds import KINDS
from clients.scheduler.leader import Gate, LeaseOptions
from clients.scheduler.mirror import Mirror
from clients.scheduler.report import Reporter
from tests.clients.scheduler.conftest import Harness, gang, node, wait_until

FAST = LeaseOptions(
    namespace="gangplan", name="sched", lease_duration=3.0, renew_deadline=1.0, retry_period=0.2
)
LEASE = "/apis/coordination.k8s.io/v1/namespaces/gangplan/leases/sched"


def _replica(cluster: Harness, name: str, lease: LeaseOptions = FAST) -> SchedulerService:
    kube = cluster.kube()
    kube.api_client.user_agent = name
    service = SchedulerService(
        kube, CycleOptions(), http_port=0, bind_workers=4, lease=lease, identity=name
    )
    service.start()
    cluster.services.append(service)
    return service


def _writes_by(cluster: Harness, agent: str) -> int:
    return sum(
        n
        for (who, verb, _, resource), n in cluster.api.store.audit.items()
        if who == agent and verb in ("create", "update", "patch") and resource != "leases"
    )


def _holder(cluster: Harness) -> Any:
    lease = cluster.api.store.get("coordination.k8s.io", "leases", "gangplan", "sched")
    return lease["spec"]["holderIdentity"]


def test_of_two_replicas_only_the_lease_holder_binds(cluster: Harness) -> None:
    cluster.create(node("n1"), node("n2"))
    a, b = _replica(cluster, "a"), _replica(cluster, "b")
    leader = wait_until(
        lambda: next((s for s in (a, b) if s.metrics.leader._value.get() == 1), None),
        what="a leader",
    )
    follower = b if leader is a else a
    assert _holder(cluster) == leader.identity
    cluster.create(gang("g", 4))
    wait_until(lambda: len(cluster.bound()) == 4, what="the gang bound")
    binds = {
        who: n
        for (who, verb, _, resource), n in cluster.api.store.audit.items()
        if resource == "pods/binding"
    }
    assert binds == {leader.identity: 4}
    assert _writes_by(cluster, follower.identity) == 0  # no status, no Event either
    assert follower.metrics.leader._value.get() == 0
    # the follower kept its snapshot warm, and never decided (nor would it bind)
    cycle = follower.cycle
    assert cycle is not None
    wait_until(lambda: cycle.generation > 0, what="the follower's snapshot put")
    assert cycle._last_asked is None


def test_the_follower_takes_over_when_the_leader_stops(cluster: Harness) -> None:
    cluster.create(node("n1"), node("n2"))
    a = _replica(cluster, "a")
    wait_until(lambda: a.metrics.leader._value.get() == 1, what="a leads")
    b = _replica(cluster, "b")
    time.sleep(0.5)
    assert b.metrics.leader._value.get() == 0
    a.stop(timeout=5)  # graceful: releases the Lease
    cluster.services.remove(a)
    started = time.monotonic()
    wait_until(lambda: b.metrics.leader._value.get() == 1, timeout=5, what="b leads")
    assert time.monotonic() - started < FAST.lease_duration  # released: no need to wait out
    cluster.create(gang("g", 2))
    wait_until(lambda: len(cluster.bound()) == 2, what="bound by the new leader")
    assert _writes_by(cluster, "a") == 0 and _writes_by(cluster, "b") > 0


def test_a_leader_whose_lease_is_taken_stops_writing_within_its_renew_deadline(
    cluster: Harness,
) -> None:
    cluster.create(node("n1"))
    a = _replica(cluster, "a")
    wait_until(lambda: a.metrics.leader._value.get() == 1, what="a leads")
    lease = cluster.api.store.get("coordination.k8s.io", "leases", "gangplan", "sched")
    lease["spec"] = {**lease["spec"], "holderIdentity": "someone-else"}
    cluster.api.store.update("coordination.k8s.io", "leases", "gangplan", "sched", lease)
    started = time.monotonic()
    wait_until(lambda: a.metrics.leader._value.get() == 0, timeout=5, what="a stops")
    lost_after = time.monotonic() - started
    assert lost_after < FAST.renew_deadline + 2 * FAST.retry_period + 0.5
    assert a.cycle is not None and not a.cycle.gate.is_open()
    cluster.create(gang("g", 1))
    time.sleep(0.5)
    assert cluster.bound() == {}  # nobody may write: someone-else holds it


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--dry-run"], "--leader-elect writes a Lease; --dry-run writes nothing"),
        (
            ["--leader-elect-lease-duration", "5", "--leader-elect-renew-deadline", "6"],
            "lease-duration must be greater than the renew deadline",
        ),
    ],
)
def test_leader_election_flags_that_cannot_work_are_one_line(
    flags: list[str], message: str, tmp_path: Any
) -> None:
    result = CliRunner().invoke(app, ["scheduler", "--leader-elect", *flags])
    assert result.exit_code == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_a_closed_gate_sends_no_bind_and_no_report(cluster: Harness) -> None:
    # the lease lost between a decision and its binds: nothing more is written
    cluster.create(node("n1"), gang("g", 2))
    kube = cluster.kube()
    mirror = Mirror(KINDS)
    mirror.replace(next(k for k in KINDS if k.kind == "Pod"), list(cluster.pods().values()))
    gate = Gate(open_=False)
    results: list[BindResult] = []
    binder = Binder(kube, mirror, 2, gate)
    binder.submit("g", [Assignment(("default", f"g-{i}"), "n1") for i in range(2)], results.append)
    binder.close()
    assert [len(r.skipped) for r in results] == [2] and cluster.bound() == {}
    reporter = Reporter(kube, gate=gate)
    reporter.unschedulable(cluster.pods()["g-0"], "why")
    reporter.drain()
    reporter.close()
    assert cluster.events() == [] and cluster.condition("g-0") is None
