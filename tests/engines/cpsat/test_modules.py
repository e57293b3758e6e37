"""Each constraint module on 2–3-node toys: feasible and infeasible (cpsat-primer style)."""

from __future__ import annotations

from typing import Any

import pytest
from ortools.sat.python import cp_model

from solver import SchedulerConf, compile_problem
from solver.engines.cpsat import capacity, packing
from solver.features.gang import cpsat as gang
from solver.problem import Problem
from solver.sat import PlacementVars, Term, combine, node_classes
from tests.builders import groups_annotation, model, node, pod, podgroup


def problem_of(*objects: dict[str, Any]) -> Problem:
    return compile_problem(model(*objects), SchedulerConf.default())


def solve(
    problem: Problem,
    *,
    place_all: bool = False,
    modules: tuple[Any, ...] = (capacity,),
    patterns: bool = True,
) -> tuple[int, PlacementVars, cp_model.CpSolver]:
    m = cp_model.CpModel()
    v = PlacementVars.create(problem, node_classes(problem, patterns=patterns), m, tight=False)
    terms: list[Term] = []
    for module in modules:
        terms += module.build(problem, m, v)
    if place_all:
        for t, pods in enumerate(problem.type_pods):
            m.add(v.type_total(t) == len(pods))
    if terms:
        m.maximize(combine(problem, terms)[0])
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = 10
    return solver.solve(m), v, solver


def gpu_pods(prefix: str, count: int, gpu: int, group: str | None = None) -> list[dict[str, Any]]:
    out = []
    for i in range(count):
        b = pod(f"{prefix}-{i}").requests(cpu="1", gpu=gpu)
        if group:
            b.group(group)
        out.append(b.obj())
    return out


#   n1 [4 GPU]  n2 [4 GPU]
def test_capacity_aggregated_class_feasible_and_infeasible() -> None:
    nodes = [node("n1").gpu(4).obj(), node("n2").gpu(4).obj()]
    assert solve(problem_of(*nodes, *gpu_pods("p", 8, 1)), place_all=True)[0] == cp_model.OPTIMAL
    assert solve(problem_of(*nodes, *gpu_pods("p", 9, 1)), place_all=True)[0] == cp_model.INFEASIBLE


#   n1 [4 GPU]  n2 [4 GPU]    a: 2 × 3 GPU, b: 1 × 2 GPU — 8 GPUs in all, yet no packing exists
@pytest.mark.parametrize("patterns", [True, False], ids=["patterns", "virtual-nodes"])
def test_capacity_is_exact_per_node_for_mixed_types(patterns: bool) -> None:
    nodes = [node("n1").gpu(4).obj(), node("n2").gpu(4).obj()]
    p = problem_of(*nodes, *gpu_pods("a", 2, 3, "a"), podgroup("a", 2), *gpu_pods("b", 1, 2))
    (klass,) = node_classes(p, patterns=patterns)
    assert klass.mode == ("patterns" if patterns else "virtual")
    if patterns:  # a 4-GPU node holds one a (3 GPU) or one b (2 GPU), never both
        assert sorted(map(tuple, klass.patterns.tolist())) == [(0, 1), (1, 0)]
    else:
        assert klass.virtual == 2
    assert solve(p, place_all=True, patterns=patterns)[0] == cp_model.INFEASIBLE
    p = problem_of(*nodes, *gpu_pods("a", 2, 3, "a"), podgroup("a", 2), *gpu_pods("b", 1, 1))
    assert solve(p, place_all=True, patterns=patterns)[0] == cp_model.OPTIMAL


#   n1 [4 GPU]   gang of 5 × 1 GPU, minMember 5: all or nothing -> nothing
def test_gang_all_or_nothing() -> None:
    p = problem_of(node("n1").gpu(4).obj(), podgroup("g", 5), *gpu_pods("g", 5, 1, "g"))
    status, v, solver = solve(p, modules=(capacity, gang))
    assert status == cp_model.OPTIMAL
    assert solver.value(v.gang_total(0)) == 0
    # minMember 3 of 5: three or four pods go, and the gang is on.
    p = problem_of(node("n1").gpu(4).obj(), podgroup("g", 3), *gpu_pods("g", 5, 1, "g"))
    status, v, solver = solve(p, modules=(capacity, gang))
    assert solver.value(v.gang_total(0)) == 4 and solver.value(v.gang_on[0]) == 1


#   n1 [4 GPU]   master (cpu) requires workers (5 × 1 GPU, min 5): the master may not go alone
def test_gang_group_requirement() -> None:
    ids = ("default/m", "default/w")
    p = problem_of(
        node("n1").gpu(4).obj(),
        podgroup("m", 1, **groups_annotation(*ids)),
        pod("m-0").group("m").obj(),
        podgroup("w", 5, **groups_annotation(*ids)),
        *gpu_pods("w", 5, 1, "w"),
    )
    status, v, solver = solve(p, modules=(capacity, gang))
    assert status == cp_model.OPTIMAL
    assert [solver.value(v.gang_total(g)) for g in range(2)] == [0, 0]


#   e1 [4 GPU, empty]  e2 [4 GPU, empty]  u [4 GPU, 1 used]    3 one-GPU pods open no empty node
def test_packing_opens_no_empty_node_when_a_used_one_has_room() -> None:
    p = problem_of(
        node("e1").gpu(4).obj(),
        node("e2").gpu(4).obj(),
        node("u").gpu(4).obj(),
        pod("running").requests(gpu=1).on("u").obj(),
        *gpu_pods("p", 3, 1),
    )
    status, _, solver = solve(p, place_all=True, modules=(capacity, packing))
    assert status == cp_model.OPTIMAL
    assert solver.objective_value == 0  # opened_nodes = 0
    p = problem_of(node("e1").gpu(4).obj(), node("e2").gpu(4).obj(), *gpu_pods("p", 5, 1))
    _, _, solver = solve(p, place_all=True, modules=(capacity, packing))
    assert -solver.objective_value == 2


#   3 nodes × 1 GPU, three one-pod gangs of priorities 0, 0, 5: tiers in order
def test_combine_uses_the_objective_tier_specs() -> None:
    p = problem_of(
        *[node(f"n{i}").gpu(1).obj() for i in range(3)],
        pod("a").requests(gpu=1).obj(),
        pod("b").requests(gpu=1).obj(),
        pod("c").requests(gpu=1).priority(5).obj(),
    )
    m = cp_model.CpModel()
    a, b, c = (m.new_int_var(0, 3, n) for n in "abc")
    expr, weights = combine(
        p, [Term("placed_pods", b), Term("placed_groups", a), Term("opened_nodes", c)]
    )
    # ranges: opened_nodes 0..3, placed_pods 0..3, placed_groups 0..(1 + 1 + 2)
    assert weights == {"opened_nodes": 1, "placed_pods": 4, "placed_groups": 16}
    m.maximize(expr)
    m.add(a + b <= 3)
    solver = cp_model.CpSolver()
    solver.solve(m)
    assert (solver.value(a), solver.value(b), solver.value(c)) == (3, 0, 0)
