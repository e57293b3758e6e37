"""TaintToleration's score (PreferNoSchedule taints), from kube-scheduler's own table tests.

Each case cites pkg/scheduler/framework/plugins/tainttoleration/taint_toleration_test.go,
TestTaintTolerationScore, by case name, and checks the normalised scores exactly as
upstream expects them, the node both engines pick, and gangplan's row:
`tainttoleration.weight` (3) × the score, less its minimum over the usable nodes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from solver.features.nodeorder import taint_toleration_scores
from solver.schedule import snapshot_of
from tests.builders import model, node, pod
from tests.features.nodeorder.cluster import ENGINES, place, score_rows

PREFER = "PreferNoSchedule"
Taint = tuple[str, str, str]  # key, value, effect
Toleration = tuple[str, str, str]  # key, value, effect (operator Equal)

# (pod tolerations, node name -> taints, expected NodeScoreList by node name)
Case = tuple[list[Toleration], dict[str, list[Taint]], dict[str, int]]
CASES: dict[str, Case] = {
    # TestTaintTolerationScore: "node with taints tolerated by the pod, gets a higher score
    # than those node with intolerable taints"
    "tolerated taints score higher than intolerable ones": (
        [("foo", "bar", PREFER)],
        {"nodeA": [("foo", "bar", PREFER)], "nodeB": [("foo", "blah", PREFER)]},
        {"nodeA": 100, "nodeB": 0},
    ),
    # TestTaintTolerationScore: "the nodes that all of their taints are tolerated by the
    # pod, get the same score, no matter how many tolerable taints a node has"
    "all tolerated: same score however many taints": (
        [("cpu-type", "arm64", PREFER), ("disk-type", "ssd", PREFER)],
        {
            "nodeA": [],
            "nodeB": [("cpu-type", "arm64", PREFER)],
            "nodeC": [("cpu-type", "arm64", PREFER), ("disk-type", "ssd", PREFER)],
        },
        {"nodeA": 100, "nodeB": 100, "nodeC": 100},
    ),
    # TestTaintTolerationScore: "the more intolerable taints a node has, the lower score it
    # gets."
    "the more intolerable taints, the lower the score": (
        [("foo", "bar", PREFER)],
        {
            "nodeA": [],
            "nodeB": [("cpu-type", "arm64", PREFER)],
            "nodeC": [("cpu-type", "arm64", PREFER), ("disk-type", "ssd", PREFER)],
        },
        {"nodeA": 100, "nodeB": 50, "nodeC": 0},
    ),
    # TestTaintTolerationScore: "only taints and tolerations that have effect
    # PreferNoSchedule are checked by taints-tolerations priority function"
    "only PreferNoSchedule taints and tolerations count": (
        [("cpu-type", "arm64", "NoSchedule"), ("disk-type", "ssd", "NoSchedule")],
        {
            "nodeA": [],
            "nodeB": [("cpu-type", "arm64", "NoSchedule")],
            "nodeC": [("cpu-type", "arm64", PREFER), ("disk-type", "ssd", PREFER)],
        },
        {"nodeA": 100, "nodeB": 100, "nodeC": 0},
    ),
    # TestTaintTolerationScore: "Default behaviour No taints and tolerations, lands on node
    # with no taints"
    "no tolerations: lands on the node without taints": (
        [],
        {"nodeA": [], "nodeB": [("cpu-type", "arm64", PREFER)]},
        {"nodeA": 100, "nodeB": 0},
    ),
}


def nodes_of(nodes: dict[str, list[Taint]]) -> list[dict[str, Any]]:
    out = []
    for name, taints in nodes.items():
        builder = node(name)
        for key, value, effect in taints:
            builder.taint(key, value, effect)
        out.append(builder.obj())
    return out


def cluster_of(case: Case) -> Any:
    tolerations, nodes, _ = case
    builder = pod("p")
    for key, value, effect in tolerations:
        builder.tolerate(key, value, effect)
    return model(*nodes_of(nodes), builder.obj())


def kube_scores(case: Case) -> dict[str, int]:
    cluster = cluster_of(case)
    nodes = snapshot_of(cluster).nodes
    scores = taint_toleration_scores(nodes, cluster.pods[0], np.ones(len(nodes), dtype=bool))
    return dict(zip(nodes.names, scores.tolist(), strict=True))


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_scores_as_kube_scheduler_computes_them(case: Case) -> None:
    assert kube_scores(case) == case[2]


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_the_row_is_the_weighted_score_relative_to_the_lowest(case: Case) -> None:
    expected = case[2]
    lowest = min(expected.values())
    row = score_rows(cluster_of(case)).get("nodeorder.tainttoleration")
    if lowest == max(expected.values()):
        assert row is None  # every node 100: a constant, no row
    else:
        assert row == {name: 3.0 * (score - lowest) for name, score in expected.items()}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_engines_place_the_pod_on_the_highest_score(case: Case, engine: str) -> None:
    expected = case[2]
    chosen = place(cluster_of(case), engine).placements["default/p"].node
    assert chosen is not None and expected[chosen] == max(expected.values())


def test_a_toleration_without_effect_counts_and_exists_tolerates_any_value() -> None:
    # getAllTolerationPreferNoSchedule keeps tolerations with effect "" too; Exists ignores
    # the value (v1 Toleration.ToleratesTaint).
    nodes = {"a": [("gpu", "x", PREFER)], "b": [("spot", "y", PREFER)], "c": []}
    assert kube_scores(([("gpu", "x", "")], nodes, {})) == {"a": 100, "b": 0, "c": 100}
    cluster = model(*nodes_of(nodes), pod("p").tolerate("spot", operator="Exists").obj())
    everywhere = np.ones(3, dtype=bool)
    scores = taint_toleration_scores(snapshot_of(cluster).nodes, cluster.pods[0], everywhere)
    assert scores.tolist() == [0, 100, 100]


@pytest.mark.parametrize("engine", ENGINES)
def test_only_usable_nodes_are_normalised_over(engine: str) -> None:
    # worst has two untolerated PreferNoSchedule taints but is cordoned: among the usable
    # nodes one taint is the most, so `one` scores 0 and `clean` 100 (×3).
    cluster = model(
        node("worst").cordon().taint("a", "1", PREFER).taint("b", "2", PREFER).obj(),
        node("one").taint("a", "1", PREFER).obj(),
        node("clean").obj(),
        pod("p").obj(),
    )
    assert score_rows(cluster)["nodeorder.tainttoleration"] == {
        "worst": 0.0,
        "one": 0.0,
        "clean": 300.0,
    }
    assert place(cluster, engine).placements["default/p"].node == "clean"
