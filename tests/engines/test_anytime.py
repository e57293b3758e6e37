"""The greedy as an anytime step: a call's time limit ends the cycle, the gang groups not
reached wait with a reason saying so, and the first one is always tried (so a stream of
calls with tight deadlines still makes progress)."""

from __future__ import annotations

import threading
import time

from solver import SchedulerConf, schedule
from solver.compile import compile_problem
from solver.engines import solve_greedy
from tests.builders import model, pod
from tests.engines.test_greedy import gang, gpu_nodes

#   n1 [4 GPU]   n2 [4 GPU]      gangs a, b, c of 2 × 1 GPU each: all fit
OBJECTS = [*gpu_nodes(4, 4), *gang("a", 2, 2), *gang("b", 2, 2), *gang("c", 2, 2)]


def test_without_a_deadline_every_gang_group_is_tried() -> None:
    result = solve_greedy(compile_problem(model(*OBJECTS), SchedulerConf.default()))
    assert result.stats["units_unreached"] == 0 and not result.gang_reason


def test_a_passed_deadline_tries_the_first_gang_group_only() -> None:
    problem = compile_problem(model(*OBJECTS), SchedulerConf.default())
    result = solve_greedy(problem, deadline=time.perf_counter() - 1)
    assert result.stats["units_unreached"] == 2
    placed = {
        problem.gang_ids[g]
        for g, t in enumerate(problem.type_gang)
        if (result.pod_node[t] >= 0).all()
    }
    assert placed == {"default/a"}
    assert set(result.gang_reason) == {1, 2}
    assert all(
        "time limit ran out after 1 of 3 gang group(s)" in r for r in result.gang_reason.values()
    )


def test_a_set_stop_ends_the_cycle_like_a_deadline() -> None:
    stop = threading.Event()
    stop.set()
    problem = compile_problem(model(*OBJECTS), SchedulerConf.default())
    assert solve_greedy(problem, stop=stop).stats["units_unreached"] == 2


def test_a_user_sees_the_gangs_not_reached_pending_with_the_reason() -> None:
    decision = schedule(model(*OBJECTS), engine="greedy", time_limit=0.0)  # verified
    outcomes = decision.podgroups
    assert outcomes["default/a"].placed
    for gid in ("default/b", "default/c"):
        assert not outcomes[gid].placed
        assert "waits for the next cycle" in outcomes[gid].reason


def test_auto_out_of_time_answers_with_the_greedy() -> None:
    decision = schedule(model(*OBJECTS), engine="auto", time_limit=0.0)
    assert decision.status == "HEURISTIC" and decision.stats["cpsat_build_abandoned"] == 1


def test_gang_groups_not_tried_get_no_preemption_plan() -> None:
    """Preemption after a cut-short placement would nominate gang groups that were never
    tried (and may fit as they are): it is not planned, and a note says why."""
    objects = [*OBJECTS, pod("low").requests(cpu="1", gpu=2).on("n2").priority(0).obj()]
    decision = schedule(model(*objects), engine="greedy", time_limit=0.0, preempt=True)
    assert not decision.victims
    assert all(p.nominated is None for p in decision.placements.values())
    assert any(n.startswith("preemption not planned") for n in decision.notes)
    assert "not tried" in decision.podgroups["default/b"].reason
