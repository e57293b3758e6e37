"""Volcano's `minTaskMember`: per task role, how many pods must run or be placed for the gang
to be placed (`features/gang`, `Problem.gang_minimums`, `verify._gangs.task_minimums`).

Upstream's rules (`pkg/scheduler/api/job_info.go`): `CheckTaskValid` (a role with fewer
pods than its minimum makes the job invalid), `CheckTaskReady` (the job is ready only with
each role's minimum allocated or running), both skipped when minMember is below the roles'
sum. Upstream's own allocate case is in `tests/features/queues/test_allocate_upstream.py`
("master's min member can not be allocated, break from allocating").

    n1  2 cpu (no role label)     job: worker-0, worker-1, master-0 (1 cpu each)
    minMember 2, minTaskMember {master: 1, worker: 1}
    the workers sort first: a greedy taking the first two pods would place two workers and
    fail the master's minimum; the roles' minimums go first, so master-0 + one worker.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import assume, given, settings

from gangplan.v1 import cluster_pb2 as pb
from solver import SCHEMA, SchedulerConf, schedule, verify
from solver.codec import Violations, cluster_to_proto, gang_from_proto, snapshot_from_proto
from solver.decision import Placement
from solver.kube import load_objects
from solver.model import ClusterModel
from tests.builders import model, node, pod, podgroup, queue, raw, workload_podgroup
from tests.features.topology.hypernode.fixtures import conf as hypernode_conf
from tests.features.topology.hypernode.fixtures import hypernode
from tests.test_properties import check_decision, clusters

ROLE = "volcano.sh/task-spec"
CONF = SchedulerConf.default()
ENGINES = ["greedy", "cpsat"]


def job(min_member: int, tasks: dict[str, int], ns: str = "default") -> dict[str, Any]:
    pg = podgroup("job", min_member, "volcano", namespace=ns)
    pg["spec"]["minTaskMember"] = tasks
    pg["spec"]["queue"] = "default"
    return pg


def member(
    name: str, role: str, *, on: str = "", selector: str = "", as_label: bool = False
) -> Any:
    """A pod of the job in task `role` (annotation, as the job controller writes it, or
    label); `selector`: the node label `role` it needs."""
    b = pod(name).annotate("scheduling.k8s.io/group-name", "job").requests(cpu="1")
    b = b.label(ROLE, role) if as_label else b.annotate(ROLE, role)
    if selector:
        b = b.selector(role=selector)
    if on:
        b = b.on(on)
    return b.obj()


def workers_first() -> list[Any]:
    """The module docstring's job: two workers sorting before the master, on 2 cpu."""
    return [
        job(2, {"master": 1, "worker": 1}),
        member("a-worker-0", "worker"),
        member("a-worker-1", "worker"),
        member("b-master-0", "master"),
        node("n1").cpu("2").obj(),
        queue("default", weight=1),
    ]


def two_masters_one_master_slot() -> list[Any]:
    """Two masters required (and one worker); the one master node takes one master."""
    return [
        job(3, {"master": 2, "worker": 1}),
        member("m0", "master", selector="master"),
        member("m1", "master", selector="master"),
        member("w0", "worker", selector="worker"),
        member("w1", "worker", selector="worker"),
        node("n1").cpu("1").label("role", "master").obj(),
        node("n2").cpu("4").label("role", "worker").obj(),
        queue("default", weight=1),
    ]


def placed(
    objects: list[Any], engine: str, conf: SchedulerConf = CONF
) -> tuple[dict[str, str], Any]:
    cluster = model(*objects)
    decision = schedule(cluster, conf, engine=engine, workers=1)
    assert verify(cluster, conf, decision) == []
    return decision.placed, decision


@pytest.mark.parametrize("engine", ENGINES)
def test_roles_minimums_are_placed_first(engine: str) -> None:
    objects = workers_first()
    got, _ = placed(objects, engine)
    assert sorted(got) == ["default/a-worker-0", "default/b-master-0"]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_role_short_of_its_minimum_places_nothing(engine: str) -> None:
    """Two masters required, the one master node takes one: nothing (CheckTaskReady)."""
    objects = two_masters_one_master_slot()
    got, decision = placed(objects, engine)
    assert got == {}
    assert "task master" in decision.podgroups["default/job"].reason


@pytest.mark.parametrize("engine", ENGINES)
def test_below_the_roles_sum_minmember_alone_counts(engine: str) -> None:
    """minMember 1 < 2 = the roles' sum: Volcano skips the roles' checks."""
    objects = [
        job(1, {"master": 1, "worker": 1}),
        member("m0", "master", selector="master"),
        member("w0", "worker"),
        node("n1").cpu("2").obj(),
        queue("default", weight=1),
    ]
    got, _ = placed(objects, engine)
    assert got == {"default/w0": "n1"}


def test_a_role_with_too_few_pods_blocks_the_gang() -> None:
    """CheckTaskValid: "Not enough valid pods of each task for gang-scheduling"."""
    objects = [
        job(2, {"master": 2}),
        member("m0", "master"),
        member("w0", "worker"),
        node("n1").cpu("4").obj(),
        queue("default", weight=1),
    ]
    got, decision = placed(objects, "greedy")
    assert got == {}
    assert (
        "task master has 1 pod(s), its minTaskMember is 2"
        in decision.podgroups["default/job"].reason
    )


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("as_label", [False, True])
def test_running_pods_count_toward_their_role(engine: str, as_label: bool) -> None:
    """A running master (annotation or label) meets the master's minimum: the worker alone
    is placed; with two running workers and none running as master, the master must be."""
    objects = [
        job(2, {"master": 1, "worker": 1}),
        member("m0", "master", on="n1", as_label=as_label),
        member("w0", "worker", as_label=as_label),
        node("n1").cpu("2").obj(),
        queue("default", weight=1),
    ]
    got, _ = placed(objects, engine)
    assert got == {"default/w0": "n1"}
    objects = [
        job(2, {"master": 1, "worker": 1}),
        member("w0", "worker", on="n1", as_label=as_label),
        member("w1", "worker", on="n1", as_label=as_label),
        member("m0", "master", selector="master", as_label=as_label),
        member("w2", "worker", as_label=as_label),
        node("n1").cpu("3").obj(),
        queue("default", weight=1),
    ]
    got, decision = placed(objects, engine)
    assert got == {}, "the master fits nowhere, so the optional worker waits with it"
    assert "task master" in decision.podgroups["default/job"].reason


@pytest.mark.parametrize("engine", ENGINES)
def test_a_hypernode_is_chosen_for_the_roles(engine: str) -> None:
    """
        s0 (tier 1): w1, w2 (workers only)     s1 (tier 1): m1 (master), w3
    A hard tier-1 job needs its master: only s1 holds both roles' minimums.
    """
    group = job(2, {"master": 1, "worker": 1}, ns="c1")
    group["spec"]["networkTopology"] = {"mode": "hard", "highestTierAllowed": 1}
    objects = [
        group,
        *(
            pod(name, "c1")
            .annotate("scheduling.k8s.io/group-name", "job")
            .annotate(ROLE, role)
            .selector(role=role)
            .requests(cpu="1")
            .obj()
            for name, role in (("a-w0", "worker"), ("a-w1", "worker"), ("b-m0", "master"))
        ),
        *(node(n).cpu("1").label("role", "worker").obj() for n in ("w1", "w2", "w3")),
        node("m1").cpu("1").label("role", "master").obj(),
        hypernode("s0", 1, ("w1", "w2")),
        hypernode("s1", 1, ("m1", "w3")),
        queue("default", weight=1),
    ]
    got, _ = placed(objects, engine, hypernode_conf())
    assert got == {"c1/b-m0": "m1", "c1/a-w0": "w3"}


def test_verify_catches_a_role_left_short() -> None:
    objects = workers_first()
    cluster = model(*objects)
    decision = schedule(cluster, CONF, engine="greedy")
    spoiled = replace(
        decision,
        placements={
            **decision.placements,
            "default/b-master-0": Placement(node=None, reason="x"),
            "default/a-worker-1": Placement(node="n1"),
        },
    )
    problems = verify(cluster, CONF, spoiled)
    assert any("task master" in p and "minTaskMember is 1" in p for p in problems), problems


def test_a_volcano_job_reads_its_tasks_minimums() -> None:
    """A `batch.volcano.sh` Job of a master (1) and workers (2): its PodGroup's
    minTaskMember, and its pods' task annotation; the master fits nowhere, so nothing."""

    def task(name: str, replicas: int, cpu: str) -> dict[str, Any]:
        container = {"name": "c", "resources": {"requests": {"cpu": cpu}}}
        return {
            "name": name,
            "replicas": replicas,
            "template": {"spec": {"containers": [container]}},
        }

    volcano_job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "pt", "namespace": "default"},
        "spec": {
            "minAvailable": 3,
            "queue": "default",
            "tasks": [task("master", 1, "8"), task("worker", 2, "1")],
        },
    }
    cluster = load_objects(raw(volcano_job, node("n1").cpu("4").obj(), queue("default", weight=1)))
    gang = next(g for g in cluster.gangs.values() if not g.implicit)
    assert gang.min_task_member == {"master": 1, "worker": 2}
    for engine in ENGINES:
        decision = schedule(cluster, CONF, engine=engine, workers=1)
        assert verify(cluster, CONF, decision) == []
        assert decision.placed == {}
        assert "task master" in decision.podgroups[gang.id].reason


def test_min_task_member_round_trips_the_wire() -> None:
    objects = workers_first()
    cluster = model(*objects)
    message = pb.Cluster.FromString(cluster_to_proto(cluster).SerializeToString())
    assert dict(message.gangs[0].min_task_member) == {"master": 1, "worker": 1}
    rebuilt = snapshot_from_proto(message, "cluster", SCHEMA)
    assert (
        schedule(rebuilt, CONF, engine="greedy").placed
        == schedule(cluster, CONF, engine="greedy").placed
    )


@pytest.mark.parametrize(
    ("tasks", "path"),
    [({"": 1}, "gangs[0].min_task_member['']"), ({"m": -1}, "gangs[0].min_task_member['m']")],
)
def test_bad_min_task_member_names_its_field(tasks: dict[str, int], path: str) -> None:
    out = Violations()
    gang_from_proto(pb.Gang(name="g", min_member=1, min_task_member=tasks), "gangs[0]", out)
    assert any(field == path for field, _ in out.items), out.items


def test_too_many_roles_name_their_field() -> None:
    out = Violations()
    tasks = {f"r{i}": 0 for i in range(257)}
    gang_from_proto(pb.Gang(name="g", min_member=1, min_task_member=tasks), "gangs[0]", out)
    assert any(field == "gangs[0].min_task_member" for field, _ in out.items), out.items


@pytest.mark.parametrize("engine", ENGINES)
def test_a_topology_unit_left_short_of_a_role_is_taken_back(engine: str) -> None:
    """A Workload API gang (one rack) with task roles on the wire: its placer fills the
    rack in type order, so the greedy's answer without the master is taken back (`_Undo`)
    with the role's words; CP-SAT finds none either (the master fits in no rack with a
    worker).

        rack r1: n1 (1 cpu)     rack r2: n2 (1 cpu)     master needs 2 cpu
    """
    base = model(
        workload_podgroup("job", 2, topology="rack"),
        *(
            pod(name).scheduling_group("job").annotate(ROLE, role).requests(cpu=cpu).obj()
            for name, role, cpu in (
                ("a-w0", "worker", "1"),
                ("a-w1", "worker", "1"),
                ("b-m0", "master", "2"),
            )
        ),
        node("n1").cpu("1").label("rack", "r1").obj(),
        node("n2").cpu("1").label("rack", "r2").obj(),
        node("n3").cpu("1").label("rack", "r1").obj(),
    )
    gang = base.gangs["default/job"].model_copy(
        update={"min_task_member": {"master": 1, "worker": 1}}
    )
    cluster = base.model_copy(update={"gangs": {**base.gangs, gang.id: gang}})
    decision = schedule(cluster, CONF, engine=engine, workers=1)
    assert verify(cluster, CONF, decision) == []
    assert decision.placed == {}
    assert "task master" in decision.podgroups[gang.id].reason


@pytest.mark.parametrize("engine", ["greedy", "cpsat", "auto"])
def test_why_names_the_role_that_cannot_be_held(engine: str) -> None:
    """The proof names the master's minimum and its own nodes' room, not the gang's total
    (3 cpu of 5, which proves nothing)."""
    objects = two_masters_one_master_slot()
    decision = schedule(model(*objects), CONF, engine=engine, workers=1)
    cert = decision.certificates["default/job"]
    assert cert.proven
    assert "task master of gang default/job needs 2 × 1 cpu, its eligible nodes offer 1" in (
        cert.sentence
    )


@settings(max_examples=25, deadline=None)
@given(clusters())
def test_both_engines_keep_every_role_at_its_minimum(cluster: ClusterModel) -> None:
    """Random clusters (a quarter of the gangs Volcano jobs with task roles): every answer
    of both engines passes `verify` (which re-counts the roles) and the greedy's checks."""
    assume(any(g.min_task_member for g in cluster.gangs.values()))
    check_decision(cluster, CONF)
    decision = schedule(cluster, CONF, engine="cpsat", workers=1, time_limit=5)
    assert verify(cluster, CONF, decision) == []
