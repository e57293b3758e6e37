"""The Kueue quota rule of `verify` (`solver/verify/_kueue_quotas.py`) catches what breaks
Kueue's arithmetic, written without the feature: each test spoils a verified Decision."""

from __future__ import annotations

import dataclasses

from solver import SchedulerConf, schedule
from solver.decision import Placement
from solver.kube import load_objects
from solver.schedule import snapshot_of
from solver.verify import verify
from tests.builders import raw
from tests.features.kueueshare.test_schedule_upstream import BASE, running, workload


def _cluster():
    objects = [workload("new", "eng-alpha", "main", 45, 1, cpu="1"),
               workload("new", "eng-beta", "main", 56, 2, cpu="1")]  # fmt: skip
    return snapshot_of(load_objects(raw(*BASE, *objects)))


def test_the_flavor_an_answer_names_is_the_one_checked() -> None:
    """eng-beta's 56 CPUs fit only in spot; said to be on-demand, the cohort is over."""
    snapshot, conf = _cluster(), SchedulerConf.default()
    decision = schedule(snapshot, conf, engine="greedy")
    assert verify(snapshot, conf, decision) == []
    spoiled = tuple(
        dataclasses.replace(a, flavors=(("cpu", "on-demand"),))
        if a.podgroup == "eng-beta/new" else a
        for a in decision.flavor_assignments
    )  # fmt: skip
    problems = verify(snapshot, conf, dataclasses.replace(decision, flavor_assignments=spoiled))
    assert problems == ["Cohort eng: on-demand/cpu used 101000 > subtree quota 100000"]


def test_a_flavor_the_node_does_not_carry_is_refused() -> None:
    objects = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu", "labels": {"pool": "a"}},
         "status": {"allocatable": {"cpu": "64", "pods": "110"}}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
         "metadata": {"name": "pool-a"}, "spec": {"nodeLabels": {"pool": "a"}}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
         "metadata": {"name": "pool-b"}, "spec": {"nodeLabels": {"pool": "b"}}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "q"},
         "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
             {"name": "pool-a", "resources": [{"name": "cpu", "nominalQuota": 8}]},
             {"name": "pool-b", "resources": [{"name": "cpu", "nominalQuota": 8}]}]}]}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
         "metadata": {"name": "main", "namespace": "t"}, "spec": {"clusterQueue": "q"}},
        workload("w", "t", "main", 2, 1, cpu="1"),
    ]  # fmt: skip
    snapshot, conf = snapshot_of(load_objects(raw(*objects))), SchedulerConf.default()
    decision = schedule(snapshot, conf, engine="greedy")
    assert [a.flavors for a in decision.flavor_assignments] == [(("cpu", "pool-a"),)]
    spoiled = tuple(
        dataclasses.replace(a, flavors=(("cpu", "pool-b"),)) for a in decision.flavor_assignments
    )
    problems = verify(snapshot, conf, dataclasses.replace(decision, flavor_assignments=spoiled))
    assert problems and all("lacks the nodeLabels of its flavor pool-b" in p for p in problems)


def test_running_pods_count_against_the_quota() -> None:
    """lend-b's running 2 CPUs and a refused 3-CPU workload: placed anyway (spoiled), the
    cohort's lending limits are broken, and the rule says so from the running pods."""
    objects = [running("a", "lend", "lend-b-queue", cpu="2"),
               workload("b", "lend", "lend-b-queue", 1, 1, cpu="3")]  # fmt: skip
    snapshot, conf = snapshot_of(load_objects(raw(*BASE, *objects))), SchedulerConf.default()
    decision = schedule(snapshot, conf, engine="greedy")
    assert not decision.placed
    placements = {k: Placement(node="big") for k in decision.placements}
    problems = verify(snapshot, conf, dataclasses.replace(decision, placements=placements))
    assert any(p.startswith("Cohort lend: default/cpu used") for p in problems), problems
