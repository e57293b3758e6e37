"""The nodeorder plugin as Volcano weighs and sums its scores, its conf, and its cost."""

from __future__ import annotations

import time
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from clients.cli import app
from gangplan.v1 import cluster_pb2 as pb
from solver import SCHEMA, SchedulerConf, schedule
from solver.codec import cluster_to_proto, snapshot_from_proto
from solver.compile import compile_parts
from solver.explain import explain
from solver.features.nodeorder import (
    NodeOrderWeights,
    nodeorder_weights,
    preferred_affinity_counts,
)
from solver.schedule import snapshot_of
from solver.snapshot import Snapshot, Workload
from tests.builders import model, node, pod, podgroup
from tests.features.nodeorder.cluster import (
    ENGINES,
    conf_with,
    expr,
    place,
    prefer,
    score_rows,
)

PREFER = "PreferNoSchedule"


def tug_of_war() -> Any:
    """n1 matches the pod's preference (weight 1) but has a PreferNoSchedule taint."""
    return model(
        node("n1").label("disk", "ssd").taint("noisy", "yes", PREFER).obj(),
        node("n2").obj(),
        prefer(pod("p"), (1, [expr("disk", "In", "ssd")])).obj(),
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_scores_are_weighted_and_summed_as_volcano_does(engine: str) -> None:
    # Defaults nodeaffinity.weight 2, tainttoleration.weight 3 (nodeorder.go calculateWeight):
    # n1 = 2·100 + 3·0 = 200, n2 = 2·0 + 3·100 = 300 -> n2.
    cluster = tug_of_war()
    assert score_rows(cluster) == {
        "nodeorder.nodeaffinity": {"n1": 200.0, "n2": 0.0},
        "nodeorder.tainttoleration": {"n1": 0.0, "n2": 300.0},
    }
    assert place(cluster, engine).placements["default/p"].node == "n2"
    # nodeaffinity.weight 5: n1 = 500 > n2 = 300.
    heavier = conf_with("predicates", "nodeorder", nodeorder={"nodeaffinity.weight": 5})
    assert score_rows(cluster, heavier)["nodeorder.nodeaffinity"] == {"n1": 500.0, "n2": 0.0}
    assert place(cluster, engine, heavier).placements["default/p"].node == "n1"


def test_the_protobuf_snapshot_scores_the_same() -> None:
    # Pod.preferred_node_affinity, tolerations and PreferNoSchedule taints over gRPC.
    cluster = tug_of_war()
    message = pb.Cluster.FromString(cluster_to_proto(cluster).SerializeToString())
    snapshot = snapshot_from_proto(message, "cluster", SCHEMA)
    assert score_rows(snapshot) == score_rows(cluster)
    for engine in ENGINES:
        assert place_snapshot(snapshot, engine) == "n2"


def place_snapshot(snapshot: Snapshot, engine: str) -> str | None:
    return schedule(snapshot, engine=engine, workers=1, seed=0).placements["default/p"].node


def test_a_zero_weight_turns_a_score_off_and_the_plugin_must_be_listed() -> None:
    cluster = tug_of_war()
    no_taints = conf_with("predicates", "nodeorder", nodeorder={"tainttoleration.weight": 0})
    assert list(score_rows(cluster, no_taints)) == ["nodeorder.nodeaffinity"]
    assert score_rows(cluster, conf_with("predicates", "binpack")) == {}


def test_weights_read_as_volcano_reads_them() -> None:
    assert nodeorder_weights({}) == (NodeOrderWeights(), [])
    weights, notes = nodeorder_weights(
        {"nodeaffinity.weight": "5", "tainttoleration.weight": 2.5, "podaffinity.weight": True}
    )
    assert weights == NodeOrderWeights()  # Arguments.GetInt keeps the default for non-ints
    assert len(notes) == 3 and "nodeaffinity.weight='5' is not an integer" in notes[0]
    weights, notes = nodeorder_weights({"tainttoleration.weight": -1, "nodeaffinity.weight": 0})
    assert (weights.taint_toleration, weights.node_affinity, notes) == (-1, 0, [])


def test_ignored_arguments_are_reported_as_notes() -> None:
    conf = conf_with("predicates", "nodeorder", nodeorder={"nodeaffinity.weight": "7"})
    snapshot = snapshot_of(tug_of_war())
    problem = compile_parts(snapshot, Workload.everything(snapshot), conf).problem
    assert any("nodeaffinity.weight='7'" in note for note in problem.notes)


def test_the_default_conf_lists_nodeorder_as_volcano_default_does() -> None:
    assert SchedulerConf.default().enabled("nodeorder")
    result = CliRunner().invoke(app, ["config", "show"])
    assert result.exit_code == 0, result.output
    names = [p["name"] for p in yaml.safe_load(result.stdout)["tiers"][0]["plugins"]]
    assert "nodeorder" in names


@pytest.mark.parametrize("engine", ENGINES)
def test_without_preferences_or_soft_taints_nothing_changes(engine: str) -> None:
    # No preferred terms, no PreferNoSchedule taint on a usable node: no nodeorder row, so
    # the objective has no `affinity` tier (the answer is what it was before nodeorder).
    cluster = model(
        node("n1").gpu(4).obj(),
        node("n2").gpu(4).taint("gpu", "yes", PREFER).cordon().obj(),
        *[pod(f"w-{i}").group("w").requests(gpu=1).obj() for i in range(3)],
        podgroup("w", 3),
    )
    assert score_rows(cluster) == {}
    decision = place(cluster, engine)
    assert "affinity" not in decision.tiers
    assert {p.node for p in decision.placements.values()} == {"n1"}


def test_explain_shows_each_score() -> None:
    nodes = explain(tug_of_war(), None, "default/p")["nodes"]
    assert nodes["n1"]["scores"]["nodeorder.nodeaffinity"] == 200.0
    assert nodes["n2"]["scores"]["nodeorder.tainttoleration"] == 300.0


def test_rows_are_shared_per_signature_and_raw_rows_memoised_on_the_node_table() -> None:
    # 1,000 nodes, 400 pods in 4 gangs with 2 distinct preferences: 2 nodeorder rows, raw
    # rows computed once per node generation.
    nodes = [node(f"n{i:04d}").label("zone", f"z{i % 4}").obj() for i in range(1000)]
    pods = [
        prefer(pod(f"g{g}-{i}").group(f"g{g}"), (10, [expr("zone", "In", f"z{g % 2}")])).obj()
        for g in range(4)
        for i in range(100)
    ]
    cluster = model(*nodes, *pods, *[podgroup(f"g{g}", 1) for g in range(4)])
    snapshot = snapshot_of(cluster)
    workload = Workload.everything(snapshot)
    started = time.perf_counter()
    compiled = compile_parts(snapshot, workload, SchedulerConf.default())
    first = time.perf_counter() - started
    logged = [row for plugin, _, row in compiled.score_log if plugin.startswith("nodeorder")]
    assert len({id(row) for row in logged}) == 2
    terms = cluster.pods[0].preferred_node_affinity
    assert preferred_affinity_counts(snapshot.nodes, terms) is preferred_affinity_counts(
        snapshot.nodes, terms
    )
    assert first < 5.0  # generous: a few numpy passes over 1,000 nodes per signature
