"""Volcano's `pdb` plugin, translated from upstream's test, and gangplan's one budget per cycle.

Source: volcano-sh/volcano `pkg/scheduler/plugins/pdb/pdb_test.go`,
`TestPreemptableAndReclaimableFn`: two pods of job-1 (label `volcano.sh/job-name`), a
budget selecting them with `disruptionsAllowed` 0, 1, or no budget. Upstream calls the
plugin's filter directly; here a pending pod of higher priority needs the room of one of
them (or of both), so the filter shows in the victims.

    n0 (4 cpu): test-pod1 (2 cpu), test-pod2 (2 cpu)        pending: urgent (priority 100)
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from gangplan.v1 import placement_service_pb2 as spb
from solver import schedule, verify
from solver.codec import ConvertError, cluster_to_proto, delta_from_proto, snapshot_from_proto
from solver.config import conf_from_text
from solver.errors import ManifestError
from solver.kube import load_objects
from solver.model import DisruptionBudget, allowed_disruptions
from solver.snapshot import PodSchema
from tests.builders import node, pod, raw
from tests.features.kaishare.test_kai_reclaim import CASES, objects

CONF = conf_from_text(
    "actions: 'enqueue, allocate, preempt'\n"
    "tiers: [{plugins: [{name: gang}, {name: predicates}, {name: pdb}]}]",
    "conf.yaml",
)
WITHOUT = conf_from_text(
    "actions: 'enqueue, allocate, preempt'\ntiers: [{plugins: [{name: gang}, {name: predicates}]}]",
    "conf.yaml",
)
JOB = {"volcano.sh/job-name": "job-1"}


def budget(allowed: int | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "test-pdb", "namespace": "default"},
        "spec": {"selector": {"matchLabels": JOB}, **spec},
    }  # fmt: skip
    if allowed is not None:
        body["status"] = {"disruptionsAllowed": allowed}
    return body


def cluster(*extra: dict[str, Any], urgent_cpu: int = 2, nodes: int = 1) -> list[dict[str, Any]]:
    objs = [node(f"n{i}").cpu(4).obj() for i in range(nodes)]
    for i in range(2):
        p = pod(f"test-pod{i + 1}").requests(cpu=2).on(f"n{i % nodes}").priority(1)
        for k, v in JOB.items():
            p = p.label(k, v)
        objs.append(p.obj())
    objs.append(pod("urgent").requests(cpu=urgent_cpu).priority(100).obj())
    return [*objs, *extra]


def victims(objs: list[dict[str, Any]], conf: Any = CONF, engine: str = "greedy") -> list[str]:
    d = schedule(load_objects(raw(*objs)), conf, engine=engine, workers=1)  # verified
    return sorted(v.pod.split("/")[1] for v in d.victims)


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
@pytest.mark.parametrize(
    ("name", "pdbs", "one", "both"),
    [
        ("test without pdbs", [], 1, 2),
        ("test with pdbs(can evict 0 pod)", [budget(0)], 0, 0),
        ("test with pdbs(can evict 1 pod)", [budget(1)], 1, 0),
    ],
)
def test_preemptable_and_reclaimable_fn(
    engine: str, name: str, pdbs: list[dict[str, Any]], one: int, both: int
) -> None:
    """`one`: victims when the urgent pod needs one pod's room; `both`: when it needs the
    whole node (with one allowed, evicting both would break the budget: nothing)."""
    assert len(victims(cluster(*pdbs), engine=engine)) == one
    assert len(victims(cluster(*pdbs, urgent_cpu=4), engine=engine)) == both


def test_without_the_plugin_the_budget_is_noted_not_acted_on() -> None:
    d = schedule(load_objects(raw(*cluster(budget(0)))), WITHOUT, engine="greedy")
    assert len(d.victims) == 1
    assert any("PodDisruptionBudget(s) not acted on" in n for n in d.notes)


def test_the_reason_names_the_budget() -> None:
    d = schedule(load_objects(raw(*cluster(budget(0)))), CONF, engine="greedy")
    assert "kept by PodDisruptionBudgets" in d.placements["default/urgent"].reason


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_one_budget_holds_across_nodes(engine: str) -> None:
    """Volcano filters each node's victims against a fresh copy of the budgets, so two
    nodes could each give up a pod of a budget allowing one; gangplan's budget holds for
    the whole cycle: of two urgent pods needing a node each, one preempts."""
    objs = cluster(budget(1), urgent_cpu=4, nodes=2)
    second = copy.deepcopy(objs[-2])
    second["metadata"]["name"] = "urgent-2"
    d = schedule(load_objects(raw(*objs, second)), CONF, engine=engine, workers=1)
    assert len(d.victims) == 1
    assert sum(1 for p in d.placements.values() if p.nominated) == 1


@pytest.mark.parametrize(
    ("spec", "healthy", "allowed"),
    [
        ({"min_available": "1"}, 2, 1),
        ({"min_available": "50%"}, 3, 1),  # ceil(1.5) = 2 must stay
        ({"min_available": "100%"}, 3, 0),
        ({"max_unavailable": "0"}, 2, 0),
        ({"max_unavailable": "50%"}, 3, 2),  # ceil(1.5) = 2 may go
        ({"max_unavailable": "1"}, 0, 0),
        ({}, 2, 2),  # neither: desiredHealthy stays 0
        ({"min_available": "5", "disruptions_allowed": 3}, 2, 3),  # the status wins
    ],
)
def test_allowance_from_the_spec_as_the_disruption_controller(
    spec: dict[str, Any], healthy: int, allowed: int
) -> None:
    b = DisruptionBudget(namespace="default", name="b", **spec)
    assert allowed_disruptions(b, healthy) == allowed


def test_a_manifest_without_status_derives_its_allowance() -> None:
    assert len(victims(cluster(budget(minAvailable=1), urgent_cpu=4))) == 0
    assert len(victims(cluster(budget(minAvailable=1)))) == 1
    assert len(victims(cluster(budget(maxUnavailable="100%"), urgent_cpu=4))) == 2


def test_a_pod_already_disrupted_does_not_count_again() -> None:
    pdb = budget(1)
    pdb["status"]["disruptedPods"] = {"test-pod1": "2026-01-01T00:00:00Z"}
    assert len(victims(cluster(pdb, urgent_cpu=4))) == 2 - 0  # test-pod1 free, test-pod2 allowed


def test_an_empty_selector_selects_nothing_as_volcano_reads_it() -> None:
    pdb = budget(0)
    pdb["spec"]["selector"] = {}
    assert len(victims(cluster(pdb))) == 1


def test_the_verifier_counts_victims_against_the_budget() -> None:
    model = load_objects(raw(*cluster(budget(1), urgent_cpu=4)))
    d = schedule(model, WITHOUT, engine="greedy")
    assert len(d.victims) == 2
    problems = verify(model, CONF, d)
    assert any("PodDisruptionBudget default/test-pdb: 2 pod(s) evicted" in p for p in problems)
    one = dataclasses.replace(d, victims=d.victims[:1])
    assert not any("PodDisruptionBudget" in p for p in verify(model, CONF, one))


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"minAvailable": 1, "maxUnavailable": 1}, "spec.maxUnavailable"),
        ({"minAvailable": "half"}, "spec.minAvailable"),
        ({"maxUnavailable": -1}, "spec.maxUnavailable"),
    ],
)
def test_a_bad_budget_names_its_field(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(ManifestError) as err:
        load_objects(raw(budget(**spec)))
    assert err.value.field == field


def test_budgets_travel_over_grpc_and_in_deltas() -> None:
    model = load_objects(raw(*cluster(budget(1))))
    msg = cluster_to_proto(model)
    snapshot = snapshot_from_proto(msg, "cluster", PodSchema())
    assert snapshot.budgets == model.disruption_budgets
    req = spb.UpdateSnapshotRequest(remove_disruption_budgets=["default/test-pdb"])
    assert not snapshot.apply(delta_from_proto(req, PodSchema())).budgets
    bad = spb.UpdateSnapshotRequest()
    bad.upsert_disruption_budgets.add(name="b", min_available="1", max_unavailable="half")
    with pytest.raises(ConvertError) as err:
        delta_from_proto(bad, PodSchema())
    assert "upsert_disruption_budgets[0].max_unavailable" in str(err.value)


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_a_budget_turns_preemption_to_another_victim(engine: str) -> None:
    """Without the budget the lowest-priority pod (test-pod1) goes; with none allowed the
    plan takes a pod the budget does not select, of higher priority, instead."""
    objs = [
        node("n0").cpu(4).obj(),
        pod("test-pod1").requests(cpu=2).on("n0").priority(1).label(*next(iter(JOB.items()))).obj(),
        pod("other").requests(cpu=2).on("n0").priority(5).obj(),
        pod("urgent").requests(cpu=2).priority(100).obj(),
    ]
    assert victims(objs, WITHOUT, engine) == ["test-pod1"]
    assert victims([*objs, budget(0)], CONF, engine) == ["other"]


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_reclaim_keeps_the_budget(engine: str) -> None:
    """KAI's first reclaim case (queue1's job reclaims queue0's running job) with a budget
    allowing none of queue0's pods: no reclaim, the job waits."""
    objs = objects(CASES[0])
    running = next(o for o in objs if o["kind"] == "Pod" and o["spec"].get("nodeName"))
    running["metadata"]["labels"] = dict(JOB)
    conf = conf_from_text(
        "actions: 'enqueue, allocate, reclaim'\n"
        "tiers: [{plugins: [{name: gang}, {name: predicates}, {name: pdb}]}]",
        "c",
    )
    assert len(victims(objs, WITHOUT.model_copy(update={"actions": conf.actions}), engine)) == 1
    assert victims([*objs, budget(0)], conf, engine) == []


def test_the_unhealthy_pod_eviction_policy_is_noted() -> None:
    pdb = budget(1)
    pdb["spec"]["unhealthyPodEvictionPolicy"] = "AlwaysAllow"
    notes = load_objects(raw(*cluster(pdb))).notes
    assert any("unhealthyPodEvictionPolicy 'AlwaysAllow' not acted on" in n for n in notes)
