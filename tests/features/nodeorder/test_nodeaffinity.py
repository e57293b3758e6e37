"""NodeAffinity's score (preferred node affinity), from kube-scheduler's own table tests.

Each case cites kube-scheduler's test and case name
(pkg/scheduler/framework/plugins/nodeaffinity/node_affinity_test.go, TestNodeAffinityPriority)
and checks three things: the normalised scores exactly as upstream expects them, the node
both engines pick (the highest score), and the row gangplan adds: `nodeaffinity.weight`
(2) × the score, less its minimum over the usable nodes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from solver.features.nodeorder import node_affinity_scores
from solver.schedule import snapshot_of
from tests.builders import model, node, pod
from tests.features.nodeorder.cluster import ENGINES, expr, place, prefer, score_rows

LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}

AFFINITY1 = [(2, [expr("foo", "In", "bar")])]
AFFINITY2 = [
    (2, [expr("foo", "In", "bar")]),
    (4, [expr("key", "In", "value")]),
    (5, [expr("foo", "In", "bar"), expr("key", "In", "value"), expr("az", "In", "az1")]),
]

# (nodes as name -> labels, preferred terms, expected NodeScoreList by node name)
Case = tuple[dict[str, dict[str, str]], list[tuple[int, list[dict[str, Any]]]], dict[str, int]]
CASES: dict[str, Case] = {
    # TestNodeAffinityPriority: "all nodes are same priority as NodeAffinity is nil"
    # (and "Skip is returned in PreScore when NodeAffinity is nil": no row at all)
    "all nodes are same priority as NodeAffinity is nil": (
        {"node1": LABEL1, "node2": LABEL2, "node3": LABEL3},
        [],
        {"node1": 0, "node2": 0, "node3": 0},
    ),
    # TestNodeAffinityPriority: "no node matches preferred scheduling requirements in
    # NodeAffinity of pod so all nodes' priority is zero"
    "no node matches preferred scheduling requirements": (
        {"node1": LABEL4, "node2": LABEL2, "node3": LABEL3},
        AFFINITY1,
        {"node1": 0, "node2": 0, "node3": 0},
    ),
    # TestNodeAffinityPriority: "only node1 matches the preferred scheduling requirements of pod"
    "only node1 matches the preferred scheduling requirements of pod": (
        {"node1": LABEL1, "node2": LABEL2, "node3": LABEL3},
        AFFINITY1,
        {"node1": 100, "node2": 0, "node3": 0},
    ),
    # TestNodeAffinityPriority: "all nodes matches the preferred scheduling requirements of
    # pod but with different priorities " (and "calculate the priorities correctly even if
    # PreScore is not called", the same numbers): 2, 11, 4 of 11 -> 18, 100, 36
    "all nodes match with different priorities": (
        {"node1": LABEL1, "node5": LABEL5, "node2": LABEL2},
        AFFINITY2,
        {"node1": 18, "node5": 100, "node2": 36},
    ),
}
# Not translated: "added affinity" and "added affinity and pod has default affinity" set
# NodeAffinityArgs.addedAffinity, a kube-scheduler profile argument; Volcano's nodeorder
# builds the plugin with an empty one.


def cluster_of(case: Case, pod_name: str = "p") -> Any:
    nodes, terms, _ = case
    objects = []
    for name, labels in nodes.items():
        builder = node(name)
        for key, value in labels.items():
            builder.label(key, value)
        objects.append(builder.obj())
    return model(*objects, prefer(pod(pod_name), *terms).obj())


def kube_scores(case: Case) -> dict[str, int]:
    """NodeAffinity's normalised scores over every node, by node name."""
    cluster = cluster_of(case)
    nodes = snapshot_of(cluster).nodes
    scores = node_affinity_scores(nodes, cluster.pods[0], np.ones(len(nodes), dtype=bool))
    return dict(zip(nodes.names, scores.tolist(), strict=True))


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_scores_as_kube_scheduler_computes_them(case: Case) -> None:
    assert kube_scores(case) == case[2]


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_the_row_is_the_weighted_score_relative_to_the_lowest(case: Case) -> None:
    expected = case[2]
    lowest = min(expected.values())
    row = score_rows(cluster_of(case)).get("nodeorder.nodeaffinity")
    if lowest == max(expected.values()):
        assert row is None  # a constant per pod decides nothing: no row
    else:
        assert row == {name: 2.0 * (score - lowest) for name, score in expected.items()}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_engines_place_the_pod_on_the_highest_score(case: Case, engine: str) -> None:
    expected = case[2]
    best = max(expected.values())
    chosen = place(cluster_of(case), engine).placements["default/p"].node
    assert chosen is not None and expected[chosen] == best


def test_an_unparsable_preferred_term_counts_nowhere() -> None:
    # TestNodeAffinityPriority: "PreScore returns error when an incoming Pod has a broken
    # affinity" (key "invalid key"). Upstream the pod's scheduling cycle fails; gangplan
    # lets a preference that cannot be parsed match no node instead (README, nodeorder).
    case: Case = ({"node1": LABEL1}, [(2, [expr("invalid key", "In", "bar")])], {"node1": 0})
    assert kube_scores(case) == {"node1": 0}
    assert "nodeorder.nodeaffinity" not in score_rows(cluster_of(case))
    for engine in ENGINES:
        assert place(cluster_of(case), engine).placements["default/p"].node == "node1"


OPERATOR_CASES: dict[str, tuple[list[dict[str, Any]], str]] = {
    # The requirement operators through the same parser as the filter (labels.Requirement)
    "Gt": ([expr("cores", "Gt", "32")], "big"),
    "Lt": ([expr("cores", "Lt", "32")], "small"),
    "DoesNotExist": ([expr("cores", "DoesNotExist")], "bare"),
    "NotIn matches a node without the label": ([expr("cores", "NotIn", "16", "64")], "bare"),
    "Exists": ([expr("spot", "Exists")], "small"),
    "In": ([expr("cores", "In", "64", "128")], "big"),
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", OPERATOR_CASES.values(), ids=OPERATOR_CASES.keys())
def test_each_operator_prefers_its_node(
    case: tuple[list[dict[str, Any]], str], engine: str
) -> None:
    terms, wanted = case
    cluster = model(
        node("bare").obj(),
        node("big").label("cores", "64").obj(),
        node("small").label("cores", "16").label("spot", "yes").obj(),
        prefer(pod("p"), (10, terms)).obj(),
    )
    row = score_rows(cluster)["nodeorder.nodeaffinity"]
    assert max(row, key=lambda n: row[n]) == wanted and row[wanted] == 200.0
    assert place(cluster, engine).placements["default/p"].node == wanted


@pytest.mark.parametrize("engine", ENGINES)
def test_match_fields_metadata_name_in_a_preference(engine: str) -> None:
    p = pod("p").obj()
    p["spec"]["affinity"] = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 7, "preference": {"matchFields": [expr("metadata.name", "In", "n2")]}}
            ]
        }
    }
    cluster = model(node("n1").obj(), node("n2").obj(), node("n3").obj(), p)
    assert score_rows(cluster)["nodeorder.nodeaffinity"] == {"n1": 0.0, "n2": 200.0, "n3": 0.0}
    assert place(cluster, engine).placements["default/p"].node == "n2"


@pytest.mark.parametrize("engine", ENGINES)
def test_scores_are_normalised_over_the_nodes_the_pod_can_use(engine: str) -> None:
    # big matches weight 4 but has an untolerated NoSchedule taint: among the usable nodes
    # mid (weight 2) is the best and scores 100 (not 50, as over every node).
    cluster = model(
        node("big").label("tier", "gold").label("zone", "a").taint("dedicated", "x").obj(),
        node("mid").label("zone", "a").obj(),
        node("none").obj(),
        prefer(pod("p"), (4, [expr("tier", "In", "gold")]), (2, [expr("zone", "In", "a")])).obj(),
    )
    assert score_rows(cluster)["nodeorder.nodeaffinity"] == {
        "big": 0.0,
        "mid": 200.0,
        "none": 0.0,
    }
    assert place(cluster, engine).placements["default/p"].node == "mid"


@pytest.mark.parametrize("engine", ENGINES)
def test_a_gang_follows_its_preference_while_it_fits(engine: str) -> None:
    # Two zones of two 2-CPU nodes; a 6-pod gang of 1 CPU prefers zone a: four pods fill
    # zone a, the other two go to zone b.
    nodes = [node(f"{zone}{i}").cpu("2").label("zone", zone).obj() for zone in "ba" for i in (1, 2)]
    pods = [
        prefer(pod(f"w-{i}").group("train"), (50, [expr("zone", "In", "a")])).obj()
        for i in range(6)
    ]
    group = {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "train", "namespace": "default"},
        "spec": {"minMember": 6},
    }
    decision = place(model(*nodes, group, *pods), engine)
    zones = sorted(str(p.node)[0] for p in decision.placements.values())
    assert zones == ["a", "a", "a", "a", "b", "b"]
