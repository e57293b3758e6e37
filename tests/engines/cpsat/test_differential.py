"""Differential property tests: CP-SAT vs greedy vs brute force on small random instances.

* cpsat returns OPTIMAL (or INFEASIBLE: proven that nothing can be placed);
* its Decision passes `verify` and its objective is never below the greedy's;
* on tiny instances its objective equals the brute-force optimum over every assignment
  `verify` accepts, so INFEASIBLE agrees with brute force too.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver import SchedulerConf, compile_problem, schedule, solve, verify
from solver.decision import Decision, Placement
from solver.model import ClusterModel
from solver.problem import evaluate
from tests.builders import groups_annotation, model, node, pod, podgroup

CONF = SchedulerConf.default()


@st.composite
def instances(draw: st.DrawFn, max_nodes: int = 3, max_pods: int = 6) -> ClusterModel:
    objects: list[dict[str, Any]] = []
    num_nodes = draw(st.integers(1, max_nodes))
    names = [f"n{i}" for i in range(num_nodes)]
    for name in names:
        b = node(name).cpu(str(draw(st.integers(1, 6)))).gpu(draw(st.sampled_from([0, 1, 2, 4])))
        if draw(st.integers(0, 3)) == 0:
            b.taint("dedicated", "x")
        if draw(st.booleans()):
            b.label("zone", draw(st.sampled_from(["a", "b"])))
        objects.append(b.obj())
    budget = max_pods
    num_gangs = draw(st.integers(1, 3))
    gang_ids = [f"default/g{i}" for i in range(num_gangs)]
    for i in range(num_gangs):
        size = draw(st.integers(1, max(1, min(3, budget))))
        budget -= size
        annotations: dict[str, str] = {}
        if num_gangs > 1 and draw(st.integers(0, 2)) == 0:
            annotations.update(groups_annotation(f"default/g{i}", draw(st.sampled_from(gang_ids))))
        objects.append(podgroup(f"g{i}", draw(st.integers(1, size)), **annotations))
        for j in range(size):
            p = (
                pod(f"g{i}-{j}")
                .group(f"g{i}")
                .requests(cpu=draw(st.integers(1, 3)), gpu=draw(st.integers(0, 2)))
            )
            p.priority(draw(st.integers(0, 1)))
            if draw(st.booleans()):
                p.tolerate("dedicated", "x", "NoSchedule")
            if draw(st.integers(0, 3)) == 0:
                p.selector(zone=draw(st.sampled_from(["a", "b"])))
            objects.append(p.obj())
        if budget <= 0:
            break
    if draw(st.booleans()):
        objects.append(pod("busy").requests(cpu=1, gpu=1).on(names[0]).obj())
    return model(*objects)


def brute_force_best(cluster: ClusterModel) -> int:
    """The best objective over every assignment verify accepts."""
    problem = compile_problem(cluster, CONF)
    pods = [(t, i, key) for t, keys in enumerate(problem.type_pods) for i, key in enumerate(keys)]
    best = -(10**18)
    for choice in itertools.product(range(-1, problem.num_nodes), repeat=len(pods)):
        placements = {
            key: Placement(node=problem.node_names[n] if n >= 0 else None)
            for (_, _, key), n in zip(pods, choice, strict=True)
        }
        candidate = Decision(
            placements=placements,
            podgroups={},
            engine="bf",
            status="",
            objective=0,
            tiers={},
            seconds=0,
        )
        if verify(cluster, CONF, candidate):
            continue
        pod_node = [np.full(len(keys), -1, dtype=np.int64) for keys in problem.type_pods]
        for (t, i, _), n in zip(pods, choice, strict=True):
            pod_node[t][i] = n
        best = max(best, evaluate(problem, pod_node)["objective"])
    return best


@given(instances())
@settings(max_examples=40)
def test_cpsat_is_optimal_verified_and_never_worse_than_greedy(cluster: ClusterModel) -> None:
    greedy = schedule(cluster, CONF, engine="greedy")
    exact = solve(cluster, CONF, engine="cpsat", workers=1, time_limit=20)
    assert exact.status in ("OPTIMAL", "INFEASIBLE")
    assert verify(cluster, CONF, exact) == []
    assert exact.objective >= greedy.objective
    if cluster.pending_pods:
        assert (exact.status == "INFEASIBLE") == (exact.placed == {})


@given(instances(max_nodes=2, max_pods=4))
@settings(max_examples=25)
def test_cpsat_matches_brute_force_on_tiny_instances(cluster: ClusterModel) -> None:
    exact = schedule(cluster, CONF, engine="cpsat", workers=1, time_limit=20)
    assert exact.objective == brute_force_best(cluster)


@pytest.mark.slow
@given(instances(max_nodes=4, max_pods=8))
@settings(max_examples=500)
def test_cpsat_never_worse_than_greedy_long(cluster: ClusterModel) -> None:
    greedy = schedule(cluster, CONF, engine="greedy")
    exact = solve(cluster, CONF, engine="cpsat", workers=1, time_limit=20)
    assert exact.status in ("OPTIMAL", "INFEASIBLE") and verify(cluster, CONF, exact) == []
    assert exact.objective >= greedy.objective
