"""Pods nominated to a node hold its room against pods of lower or equal priority.

kube-scheduler filters a pod on a node with the pods nominated there added first, when
their priority is >= the pod's and they are not the pod itself (`addGENominatedPods`,
pkg/scheduler/framework/runtime/framework.go; the rule of `TestFilterPluginsWithNominatedPods`
in framework_test.go: "node has a high-priority nominated pod" blocks a low-priority pod, a
low-priority nominated pod does not). A nominated pod outside the call (another
namespace, or not named in a PlaceJob) keeps the room its preemption freed.

    n1 [4 cpu]  <- nominated: `held` (3 cpu, priority `held_priority`)
    n2 [8 cpu, or 1]
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from clients.cli import app
from gangplan.v1 import cluster_pb2 as pb
from solver import SCHEMA, SchedulerConf, schedule, snapshot_of
from solver.codec import cluster_to_proto, snapshot_from_proto
from solver.decision import Placement
from solver.snapshot import Snapshot, Workload
from solver.verify import verify
from tests.builders import model, node, pod

ENGINES = ("greedy", "cpsat")
runner = CliRunner()


def cluster(held_priority: int, n2_cpu: str = "8") -> list[dict[str, Any]]:
    return [
        node("n1").cpu("4").obj(),
        node("n2").cpu(n2_cpu).obj(),
        pod("held", "other").requests(cpu="3").priority(held_priority).nominated("n1").obj(),
        pod("web").requests(cpu="2").priority(100).obj(),
    ]


def place_web(objects: list[dict[str, Any]], engine: str) -> tuple[Snapshot, str | None]:
    snapshot = snapshot_of(model(*objects))
    workload = Workload.everything(snapshot).only(lambda p: p.namespace == "default")
    d = schedule(snapshot, SchedulerConf.default(), workload=workload, engine=engine, workers=1)
    return snapshot, d.placements["default/web"].node


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("held_priority", "n2_cpu", "expected"),
    [
        (1000, "8", "n2"),  # higher-priority nomination: n1 has 1 cpu left for web
        (100, "8", "n2"),  # equal priority holds too (binpack alone would pick n1)
        (10, "1", "n1"),  # lower priority does not: web takes n1 (n2 too small)
        (1000, "1", None),  # held on n1, too small n2: web stays pending
    ],
)
def test_nominated_room_is_held_against_lower_or_equal_priority(
    engine: str, held_priority: int, n2_cpu: str, expected: str | None
) -> None:
    _, where = place_web(cluster(held_priority, n2_cpu), engine)
    assert where == expected


@pytest.mark.parametrize("engine", ENGINES)
def test_pending_reason_counts_the_held_room(engine: str) -> None:
    snapshot = snapshot_of(model(*cluster(1000, "1")))
    workload = Workload.everything(snapshot).only(lambda p: p.namespace == "default")
    d = schedule(snapshot, SchedulerConf.default(), workload=workload, engine=engine, workers=1)
    assert "2 Insufficient cpu" in (d.placements["default/web"].reason or "")


@pytest.mark.parametrize("engine", ENGINES)
def test_a_nominated_pod_placed_by_the_call_holds_nothing(engine: str) -> None:
    # Both pending pods in one call: the nominated one is placed again (first, by
    # priority) and its nomination holds nothing beside its own placement: it still
    # fits n1, the only node big enough for it.
    d = schedule(model(*cluster(1000, "1")), engine=engine, workers=1)
    assert d.placements["other/held"].node == "n1"
    assert d.placements["default/web"].node is None


def test_a_nomination_to_an_unknown_node_holds_nothing() -> None:
    objects = cluster(1000, "1")
    objects[2]["status"]["nominatedNodeName"] = "gone"
    _, where = place_web(objects, "greedy")
    assert where == "n1"


def test_verify_refuses_a_decision_that_takes_the_held_room() -> None:
    snapshot = snapshot_of(model(*cluster(1000)))
    workload = Workload.everything(snapshot).only(lambda p: p.namespace == "default")
    conf = SchedulerConf.default()
    d = schedule(snapshot, conf, workload=workload, engine="greedy", workers=1)
    assert verify(snapshot, conf, d, workload) == []
    moved = replace(d, placements={**d.placements, "default/web": Placement(node="n1")})
    problems = verify(snapshot, conf, moved, workload)
    assert any("n1: cpu requested" in p and "nominated" in p for p in problems), problems


@pytest.mark.parametrize("engine", ENGINES)
def test_held_room_through_the_protobuf_snapshot(engine: str) -> None:
    message = pb.Cluster.FromString(cluster_to_proto(model(*cluster(1000))).SerializeToString())
    snapshot = snapshot_from_proto(message, "cluster", SCHEMA)
    workload = Workload.everything(snapshot).only(lambda p: p.namespace == "default")
    d = schedule(snapshot, SchedulerConf.default(), workload=workload, engine=engine, workers=1)
    assert d.placements["default/web"].node == "n2"


def test_cli_namespace_selection_keeps_the_others_nominated_room(tmp_path: Any) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(cluster(1000)))
    result = runner.invoke(app, ["schedule", "-f", str(path), "-n", "default", "-o", "json"])
    assert result.exit_code == 0, result.output
    assert '"default/web"' in result.output
    assert '"node": "n2"' in result.output
    assert "left pending, not ours to place: 1 (namespace other)" in result.output
