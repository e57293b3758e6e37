"""Koordinator topology behaviours beyond the gather itself, on both engines:

* single-pod scoring by `network-topology-selector` (`reference/koordinator.md` §3.5);
* late or recreated members of a MustGather gang stay in their bound members' domain
  (gangplan's improvement: Koordinator PR #3181, which would have done it, was closed).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from solver import SchedulerConf, schedule, verify
from solver.compile import compile_problem
from solver.decision import Decision, Placement
from solver.features.topology.koordinator.selector import selector_scores
from solver.features.topology.tree import build_tree
from solver.model import ClusterModel
from tests.builders import BLOCK, SPINE, gather, model, node, pod, podgroup, spine_block_topology

CONF = SchedulerConf.default()
ENGINES = ["greedy", "cpsat"]
SELECTOR = "scheduling.koordinator.sh/network-topology-selector"
Objects = list[dict[str, Any]]


def run(cluster: ClusterModel, engine: str) -> Decision:
    return schedule(cluster, CONF, engine=engine, workers=1, seed=0)  # verified inside


def tree_nodes(layout: dict[str, dict[str, list[str]]]) -> Objects:
    return [
        node(n).cpu("16").label(SPINE, s).label(BLOCK, b).obj()
        for s, blocks in layout.items()
        for b, names in blocks.items()
        for n in names
    ]


# ----------------------------------------------------------------------------- selector score

# Upstream network_topology_workflow_test.go TestPodGroupManager_PreScore, "scheduled, all pods
# to one node": FakeClusterNetworkTopology plus node-9 in b1; pods with selector
# "test-selector" run on node-8 (b1), node-7 (b2), node-6 (b3); the candidates are node-1,
# node-9, node-2, node-3, node-5, node-4 (the three busy nodes are full here, so Filter drops
# them as upstream's test leaves them out). Upstream's positions: node-2 0, node-1 1,
# node-9 2, node-3 3, node-4 4, node-5 5; NormalizeScore(reverse) makes them 100 − 100·p/5.
PRESCORE = {
    "s1": {"b1": ["node-8", "node-1", "node-9"], "b2": ["node-7", "node-2"]},
    "s2": {"b3": ["node-6", "node-3"], "b4": ["node-5", "node-4"]},
}
PRESCORE_WANT = {
    "node-2": 100, "node-1": 80, "node-9": 60, "node-3": 40, "node-4": 20, "node-5": 0,
    "node-6": 0, "node-7": 0, "node-8": 0,
}  # fmt: skip


def prescore_cluster(*pending: dict[str, Any]) -> ClusterModel:
    existing = [
        pod(f"existing-pod-{i}").requests(cpu="16").annotate(SELECTOR, "test-selector").on(n).obj()
        for i, n in ((1, "node-8"), (3, "node-7"), (2, "node-6"))
    ]
    return model(spine_block_topology(), *tree_nodes(PRESCORE), *existing, *pending)


def pending_pod(name: str = "pending-pod-1") -> dict[str, Any]:
    return pod(name).requests(cpu="1").annotate(SELECTOR, "test-selector").obj()


def test_selector_score_matches_upstream_prescore() -> None:
    problem = compile_problem(prescore_cluster(pending_pod()), CONF)
    row = np.asarray(problem.static_score[0])
    got = {n: round(float(row[i])) for i, n in enumerate(problem.node_names)}
    assert got == PRESCORE_WANT


@pytest.mark.parametrize("engine", ENGINES)
def test_selector_pod_goes_to_the_best_scored_node(engine: str) -> None:
    d = run(prescore_cluster(pending_pod()), engine)
    assert d.placed == {"default/pending-pod-1": "node-2"}


def test_selector_scores_unit_cases() -> None:
    cluster = prescore_cluster()
    tree = build_tree(cluster.topology, tuple(sorted(cluster.nodes, key=lambda n: n.name)))
    names = [n.name for n in sorted(cluster.nodes, key=lambda n: n.name)]
    # a peer on a candidate node itself decides first (ExistingPodNum at the node level)
    peers = np.zeros(len(names), dtype=np.int64)
    peers[names.index("node-5")] = 1
    candidate = np.isin(names, ["node-1", "node-5"])
    scores = selector_scores(tree, candidate, peers)
    assert scores[names.index("node-5")] == 100 and scores[names.index("node-1")] == 0
    # one candidate: the maximum; no candidate: nothing
    one = selector_scores(tree, np.isin(names, ["node-3"]), peers)
    assert one.tolist() == [100.0 if n == "node-3" else 0.0 for n in names]
    assert not selector_scores(tree, np.zeros(len(names), dtype=bool), peers).any()


def test_gathered_and_unannotated_pods_are_not_selector_scored() -> None:
    # a topology-aware gang is placed by the gather (FindOneNode), which leaves nothing to score
    gang = [
        podgroup("job", 1, **gather(("SpineLayer", "MustGather"))),
        pod("job-1").group("job").requests(cpu="1").annotate(SELECTOR, "test-selector").obj(),
    ]
    problem = compile_problem(prescore_cluster(*gang, pod("plain").requests(cpu="1").obj()), CONF)
    assert not np.asarray(problem.static_score.rows).any()


# ----------------------------------------------------------------------------- late members

# FakeClusterNetworkTopology: s1{b1{node-1,node-8}, b2{node-2,node-7}},
# s2{b3{node-3,node-6}, b4{node-4,node-5}}; one 16-cpu slot per node.
FAKE = {
    "s1": {"b1": ["node-1", "node-8"], "b2": ["node-2", "node-7"]},
    "s2": {"b3": ["node-3", "node-6"], "b4": ["node-4", "node-5"]},
}
MUST_SPINE = gather(("SpineLayer", "MustGather"))


def busy(*nodes: str) -> Objects:
    return [pod(f"other-{n}", "batch").requests(cpu="16").on(n).obj() for n in nodes]


def late_member_cluster(bound_on: tuple[str, ...], *extra: dict[str, Any]) -> ClusterModel:
    """Gang `job` (MustGather SpineLayer) with members bound on `bound_on` and job-0 pending
    again (recreated after the group was once satisfied)."""
    members = [
        pod(f"job-{i}").group("job").requests(cpu="16").on(n).obj()
        for i, n in enumerate(bound_on, start=1)
    ]
    size = len(bound_on) + 1
    return model(
        spine_block_topology(),
        *tree_nodes(FAKE),
        podgroup("job", size, **MUST_SPINE),
        *members,
        pod("job-0").group("job").requests(cpu="16").obj(),
        *extra,
    )


# job-1 runs on node-3 (s2). Free: node-1 (s1: 1 slot), node-6 and node-4 (s2: 2 slots). As
# a new job, both engines take node-1 (the tightest spine: Koordinator's binpack); the
# recreated member must stay in s2, where its gang runs.
@pytest.mark.parametrize("engine", ENGINES)
def test_late_member_stays_in_its_bound_members_domain(engine: str) -> None:
    cluster = late_member_cluster(("node-3",), *busy("node-8", "node-2", "node-7", "node-5"))
    d = run(cluster, engine)
    assert d.placed.get("default/job-0") in {"node-4", "node-6"}


@pytest.mark.parametrize("engine", ENGINES)
def test_late_member_waits_when_its_domain_is_full(engine: str) -> None:
    cluster = late_member_cluster(("node-3",), *busy("node-6", "node-4", "node-5"))
    d = run(cluster, engine)
    assert d.placed == {}
    reason = d.placements["default/job-0"].reason
    assert "outside the MustGather SpineLayer domain of the gang group's bound members" in reason


@pytest.mark.parametrize("engine", ENGINES)
def test_late_member_of_a_group_spanning_domains_is_not_placed(engine: str) -> None:
    # PR #3181 rejects late members whose domain "cannot be uniquely determined"
    d = run(late_member_cluster(("node-3", "node-1")), engine)
    assert d.placed == {}
    assert "bound members of the gang group run in SpineLayer domains ['s1', 's2']" in (
        d.podgroups["default/job"].reason
    )


def test_verify_rejects_a_late_member_outside_its_domain() -> None:
    cluster = late_member_cluster(("node-3",), *busy("node-8", "node-2", "node-7", "node-5"))
    good = run(cluster, "greedy")
    bad = replace(good, placements={"default/job-0": Placement(node="node-1")})
    problems = verify(cluster, CONF, bad)
    assert any(
        "away from the SpineLayer domain(s) of its bound members ['s2']" in p for p in problems
    )
    assert verify(cluster, CONF, good) == []
