"""Kueue pod-set groups through every door: annotations checked as Kueue's webhook checks
them (CLI field names, gRPC field paths), a Workload's `podSetGroupName`, groups the webhook
would refuse (reader error or gang refused with its message), and verify's own check."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from gangplan.v1 import cluster_pb2 as pb
from solver import SCHEMA, schedule, verify
from solver.codec import ConvertError, snapshot_from_proto
from solver.decision import Placement
from solver.errors import ManifestError
from solver.kube.convert import build_model
from solver.kube.workloads import expand_workloads
from tests.builders import model, node, pod, podgroup, raw
from tests.features.topology.kueue.helpers import (
    BLOCK,
    CONF,
    HOST,
    PREFERRED,
    RACK,
    REQUIRED,
    topology,
)
from tests.features.topology.kueue.test_groups import GROUP, THREE, by_pod_set

SLICE_LEVEL = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"


def _pod(name: str, annotations: dict[str, str], pod_set: str = "main") -> dict[str, Any]:
    b = pod(name).requests(cpu="1").label("scheduling.x-k8s.io/pod-group", "job")
    b = b.label("kueue.x-k8s.io/podset", pod_set)
    for key, value in annotations.items():
        b = b.annotate(key, value)
    return b.obj()


@pytest.mark.parametrize(
    ("annotations", "message"),
    [
        ({GROUP: "g"}, "neither"),
        ({GROUP: "42", REQUIRED: BLOCK}, "must not be a number"),
        ({GROUP: "g", REQUIRED: BLOCK, SLICE_LEVEL: HOST, SLICE_SIZE: "1"}, "may not be set"),
    ],
)
def test_bad_group_annotations_name_their_field(annotations: dict[str, str], message: str) -> None:
    with pytest.raises(ManifestError) as err:
        build_model(expand_workloads(raw(podgroup("job", 1), _pod("p", annotations)))[0])
    assert err.value.field == f"metadata.annotations[{GROUP}]"
    assert message in str(err.value)
    msg = pb.Cluster(pods=[pb.Pod(name="p", annotations=annotations)])
    with pytest.raises(ConvertError) as convert:
        snapshot_from_proto(msg, "cluster", SCHEMA)
    assert [f for f, _ in convert.value.violations] == [f"cluster.pods[0].annotations[{GROUP}]"]


def _nodes() -> list[dict[str, Any]]:
    out = []
    for block, rack, host in (("b1", "r1", "x1"), ("b1", "r1", "x2"), ("b2", "r1", "x3")):
        b = node(host).cpu("2").memory("4Gi").pods(10).label("node-group", "tas")
        out.append(b.label(BLOCK, block).label(RACK, rack).label(HOST, host).obj())
    return out


def _workload(*pod_sets: tuple[str, int, dict[str, str]]) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {
            "podSets": [
                {
                    "name": name,
                    "count": count,
                    "topologyRequest": request,
                    "template": {
                        "spec": {
                            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]
                        }
                    },
                }
                for name, count, request in pod_sets
            ]
        },
    }


def test_a_workload_group_places_leader_and_workers_in_one_block() -> None:
    request = {"required": BLOCK, "podSetGroupName": "lws"}
    workload = _workload(("leader", 1, request), ("workers", 3, request))
    expanded, _ = expand_workloads(raw(*_nodes(), *topology(THREE), workload))
    question = build_model(expanded)
    for engine in ("greedy", "cpsat"):
        decision = schedule(question, CONF, engine=engine, workers=1, seed=0, time_limit=10)
        assert decision.podgroups["default/w"].placed, engine
        got = by_pod_set(decision)
        assert set(got) == {"leader", "workers"} and sum(got["workers"].values()) == 3
        # 4 pods of 1 cpu: only block b1 (x1, x2: 2 cpu each) holds the group
        assert {*got["leader"], *got["workers"]} <= {"x1", "x2"}, got


@pytest.mark.parametrize(
    ("pod_sets", "message"),
    [
        ((("a", 1, {"required": BLOCK}), ("b", 2, {"required": BLOCK})), "exactly 2"),
        ((("a", 2, {"required": BLOCK}), ("b", 2, {"required": BLOCK})), "only 1 replica"),
        ((("a", 1, {"required": BLOCK}), ("b", 2, {"required": RACK})), "consistent"),
        ((("a", 1, {"required": BLOCK}), ("b", 2, {"preferred": BLOCK})), "consistent"),
    ],
)
def test_a_workload_group_kueue_refuses_names_its_field(
    pod_sets: tuple[tuple[str, int, dict[str, str]], ...], message: str
) -> None:
    named = [(n, c, {**r, "podSetGroupName": "g"}) for n, c, r in pod_sets]
    if message == "exactly 2":
        named = named[:1]
    with pytest.raises(ManifestError) as err:
        build_model(expand_workloads(raw(_workload(*named)))[0])
    assert err.value.field == "spec.podSets[0].topologyRequest.podSetGroupName"
    assert message in str(err.value)


def test_annotated_pods_of_a_bad_group_are_refused_with_kueue_message() -> None:
    three = [_pod(f"p{i}", {GROUP: "g", PREFERRED: BLOCK}, pod_set=f"s{i}") for i in range(3)]
    question = model(*_nodes(), *topology(THREE), podgroup("job", 3), *three)
    for engine in ("greedy", "cpsat"):
        decision = schedule(question, CONF, engine=engine, workers=1, seed=0, time_limit=10)
        assert not decision.podgroups["default/job"].placed
        assert "exactly 2 pod sets" in decision.podgroups["default/job"].reason


def test_verify_checks_the_group_domain_on_its_own() -> None:
    leader = _pod("leader-0", {GROUP: "g", REQUIRED: BLOCK}, pod_set="leader")
    workers = [_pod(f"w-{i}", {GROUP: "g", REQUIRED: BLOCK}, pod_set="workers") for i in range(2)]
    question = model(*_nodes(), *topology(THREE), podgroup("job", 3), leader, *workers)
    decision = schedule(question, CONF, engine="greedy")
    assert decision.podgroups["default/job"].placed
    assert not verify(question, CONF, decision)
    moved = {**decision.placements, "default/leader-0": Placement(node="x3")}
    problems = verify(question, CONF, replace(decision, placements=moved))
    assert any("leader and workers span" in p for p in problems), problems
