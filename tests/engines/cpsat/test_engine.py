"""The cpsat and auto engines end to end: status, bound, gap, determinism, fallback (why a
gang is left out: tests/why/)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from solver import SchedulerConf, compile_problem, schedule
from solver.decision import Decision
from solver.engines import SolveParams
from solver.engines.cpsat import solve_cpsat
from tests.builders import model, node, pod, podgroup


def run(*objects: dict[str, Any], engine: str = "cpsat", **kw: Any) -> Decision:
    kw.setdefault("workers", 1)
    return schedule(model(*objects), engine=engine, **kw)


def gang(name: str, size: int, min_member: int, **requests: Any) -> list[dict[str, Any]]:
    pods = [
        pod(f"{name}-{i}").group(name).requests(**(requests or {"cpu": 1, "gpu": 1})).obj()
        for i in range(size)
    ]
    return [podgroup(name, min_member), *pods]


#   n1 [4 GPU]  n2 [4 GPU]      a: 5 × 1 GPU (min 5) then b: 4 × 1 GPU (min 4), c: 3 × 1 GPU (min 3)
#   greedy (by name) places a, then c; b no longer fits -> 2 groups. CP-SAT also finds 2 groups
#   but proves it optimal; with a + b + c = 12 GPUs on 8 only two groups can ever go.
def test_cpsat_proves_optimality_and_reports_bound_and_gap() -> None:
    d = run(
        node("n1").gpu(4).obj(),
        node("n2").gpu(4).obj(),
        *gang("a", 5, 5),
        *gang("b", 4, 4),
        *gang("c", 3, 3),
    )
    assert d.status == "OPTIMAL" and d.bound == d.objective and d.gap == 0.0
    assert d.tiers["placed_groups"] == 2
    assert {"vars_before", "vars_after", "node_classes", "pod_types"} <= set(d.stats)


def test_aggregation_shrinks_the_model() -> None:
    nodes = [node(f"n{i:03d}").gpu(8).obj() for i in range(200)]
    busy = [pod(f"busy{i}").requests(gpu=1 + i % 7).on(f"n{i:03d}").obj() for i in range(0, 200, 3)]
    d = run(*nodes, *busy, *gang("g", 64, 64))
    assert d.status == "OPTIMAL"
    assert d.stats["vars_before"] == 64 * 200
    assert d.stats["node_classes"] <= 9 and d.stats["vars_after"] < 40


#   n1 [4 GPU]  n2 [4 GPU]    big: 5 × 1 GPU (min 5, placed first by name), then s1, s2: 4 × 1 GPU each
#   greedy: big fits (5 GPUs), then neither s1 nor s2 -> 1 group. CP-SAT: s1 + s2 -> 2 groups.
def test_cpsat_beats_the_greedy_when_order_matters() -> None:
    objs = [
        node("n1").gpu(4).obj(),
        node("n2").gpu(4).obj(),
        *gang("big", 5, 5),
        *gang("s1", 4, 4),
        *gang("s2", 4, 4),
    ]
    greedy = run(*objs, engine="greedy")
    exact = run(*objs, engine="cpsat")
    assert greedy.tiers["placed_groups"] == 1
    assert exact.tiers["placed_groups"] == 2 and exact.status == "OPTIMAL"
    assert exact.objective > greedy.objective
    assert exact.podgroups["default/big"].reason.startswith(
        "gang default/big fits on the cluster on its own"
    )
    auto = run(*objs, engine="auto")
    assert auto.engine == "auto" and auto.objective == exact.objective


def test_nothing_placeable_is_proven_infeasible() -> None:
    d = run(node("n1").gpu(4).obj(), *gang("g", 6, 6))
    assert d.status == "INFEASIBLE" and d.placed == {}


def test_same_seed_one_worker_same_decision() -> None:
    objs = (
        [node(f"n{i}").gpu(4 + i % 3).obj() for i in range(6)]
        + gang("a", 7, 5)
        + gang("b", 6, 6)
        + gang("c", 9, 2)
    )
    first = run(*objs, seed=7).to_dict()
    second = run(*objs, seed=7).to_dict()
    for d in (first, second):
        d.pop("seconds")
        d.pop("stats")
    assert first == second


def test_auto_falls_back_to_greedy_when_cpsat_finds_nothing_in_time() -> None:
    objs = [node(f"n{i:04d}").gpu(8).cpu(str(16 + i % 7)).obj() for i in range(400)]
    for g in range(30):
        objs += gang(f"g{g:02d}", 40, 40, cpu=str(1 + g % 3), gpu=1 + g % 2)
    problem = compile_problem(model(*objs), SchedulerConf.default())
    result = solve_cpsat(problem, SolveParams(time_limit=0.01, workers=1), engine="auto")
    assert result.status == "HEURISTIC" and result.engine == "auto"
    assert result.bound is None


def test_lexicographic_path_when_weights_would_overflow(monkeypatch: pytest.MonkeyPatch) -> None:
    objs = [
        node("n1").gpu(4).obj(),
        node("n2").gpu(4).obj(),
        *gang("big", 5, 5),
        *gang("s1", 4, 4),
        *gang("s2", 4, 4),
    ]
    weighted = run(*objs)
    monkeypatch.setattr("solver.sat._terms.SAFE_WEIGHT", 1)
    staged = run(*objs)
    assert staged.stats["lexicographic"] == 1 and weighted.stats["lexicographic"] == 0
    assert staged.status == "OPTIMAL" and staged.tiers == weighted.tiers
    assert staged.bound == staged.objective


def _hard_problem() -> Any:
    """400 nodes, 30 gangs of 40: CP-SAT does not prove this optimal within a minute."""
    objs = [node(f"n{i:04d}").gpu(8).cpu(str(16 + i % 7)).obj() for i in range(400)]
    for g in range(30):
        objs += gang(f"g{g:02d}", 40, 40, cpu=str(1 + g % 3), gpu=1 + g % 2)
    return compile_problem(model(*objs), SchedulerConf.default())


def test_model_building_gives_up_past_the_budget() -> None:
    result = solve_cpsat(_hard_problem(), SolveParams(time_limit=0.01, workers=1))
    assert result.status == "HEURISTIC" and result.stats["cpsat_build_abandoned"] == 1


def test_a_stop_before_building_answers_greedy_at_once() -> None:
    stop = threading.Event()
    stop.set()
    result = solve_cpsat(_hard_problem(), SolveParams(time_limit=60, workers=1, stop=stop))
    assert result.status == "HEURISTIC" and result.stats["cpsat_build_abandoned"] == 1


def test_a_stop_during_the_search_ends_it() -> None:
    stop = threading.Event()
    timer = threading.Timer(1.0, stop.set)
    timer.start()
    started = time.perf_counter()
    result = solve_cpsat(_hard_problem(), SolveParams(time_limit=60, workers=1, stop=stop))
    timer.cancel()
    # Far inside the 60 s budget: the search was stopped, not run out (it takes ~1 s).
    assert time.perf_counter() - started < 30
    assert result.status in ("HEURISTIC", "FEASIBLE")
