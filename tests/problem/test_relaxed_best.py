"""`auto` returns the greedy's answer as OPTIMAL, without a model, when it reaches every
tier's relaxed bound (`relaxed_best`). The oracle is CP-SAT itself: on random clusters
and gang jobs, whenever the bound proves the greedy's answer, a CP-SAT run that proves its
own optimum finds nothing better — and the bound is never beaten by CP-SAT's answer."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from solver import SchedulerConf, compile_problem, snapshot_of, solve
from solver.engines import ENGINES, SolveParams
from solver.model import ClusterModel
from solver.problem import IntArray, Problem, evaluate, proven_optimal, relaxed_best, tier_specs
from tests.builders import model, node, pod, podgroup
from tests.test_properties import CONFS, clusters


def _cpsat(cluster: ClusterModel, conf: SchedulerConf) -> dict[str, int] | None:
    """CP-SAT's own answer, by tier, when it proves it optimal (None otherwise)."""
    problem = compile_problem(snapshot_of(cluster), conf)
    result = ENGINES["cpsat"](problem, SolveParams(time_limit=10, workers=1, seed=0))
    return evaluate(problem, result.pod_node) if result.status == "OPTIMAL" else None


@given(clusters(), st.sampled_from(CONFS))
def test_no_answer_beats_the_relaxed_bound_and_a_proof_is_never_wrong(
    cluster: ClusterModel, conf: SchedulerConf
) -> None:
    problem = compile_problem(snapshot_of(cluster), conf)
    best = relaxed_best(problem)
    exact = _cpsat(cluster, conf)
    if exact is None:
        return
    for spec in tier_specs(problem):
        if exact[spec.name] != best[spec.name]:  # the first tier where they differ
            better = exact[spec.name] > best[spec.name]
            assert better != spec.maximize, (spec.name, exact, best)
            break
    decision = solve(cluster, conf, engine="auto", workers=1, seed=0)
    if decision.stats.get("proven_by_bound"):
        assert decision.status == "OPTIMAL"
        assert decision.objective == exact["objective"]


@pytest.mark.parametrize(
    ("running", "proven"),
    [
        ("n0", True),  # a used node with room: the pod goes there, nothing is opened
        (None, True),  # every node empty: one must open, and one does
    ],
)
def test_a_single_pod_is_proven_on_a_busy_and_on_an_empty_cluster(
    running: str | None, proven: bool
) -> None:
    objects = [node(f"n{i}").cpu("8").obj() for i in range(3)]
    if running:
        objects.append(pod("busy").requests(cpu="1").on(running).obj())
    objects.append(pod("web").requests(cpu="2").obj())
    decision = solve(model(*objects), engine="auto", workers=1, seed=0)
    assert decision.status == "OPTIMAL"
    assert bool(decision.stats.get("proven_by_bound")) is proven


def test_the_pods_of_one_shape_open_as_many_nodes_as_their_slots_need() -> None:
    """Two 5-CPU pods on empty 8-CPU nodes: one per node, so two nodes open, and the bound
    (⌈2 pods / 1 slot⌉) says so: proven without a model."""
    objects = [node(f"n{i}").cpu("8").obj() for i in range(3)]
    objects += [pod(f"p{i}").requests(cpu="5").obj() for i in range(2)]
    cluster = model(*objects)
    problem = compile_problem(snapshot_of(cluster), SchedulerConf.default())
    assert relaxed_best(problem)["opened_nodes"] == 2
    decision = solve(cluster, engine="auto", workers=1, seed=0)
    assert decision.status == "OPTIMAL" and decision.stats.get("proven_by_bound") == 1


def test_a_gang_left_out_is_proven_impossible_without_a_model() -> None:
    """6 cpu asked of a 4-cpu node: the relaxed bound alone cannot prove the empty answer
    (it counts every group placed), the room bound proves the gang impossible
    (`solver.engines.bounds`), so `auto` answers INFEASIBLE without building a model."""
    objects = [node("n0").cpu("4").obj(), podgroup("g", 3)]
    objects += [pod(f"g-{i}").group("g").requests(cpu="2").obj() for i in range(3)]
    cluster = model(*objects)
    problem = compile_problem(snapshot_of(cluster), SchedulerConf.default())
    decision = solve(cluster, engine="auto", workers=1, seed=0)
    assert decision.stats.get("impossible_gangs") == 1 and "vars_after" not in decision.stats
    assert decision.status == "INFEASIBLE"
    assert not proven_optimal(problem, evaluate(problem, [row * 0 - 1 for row in _rows(problem)]))


def _rows(problem: Problem) -> list[IntArray]:
    return [np.zeros(len(pods), dtype=np.int64) for pods in problem.type_pods]
