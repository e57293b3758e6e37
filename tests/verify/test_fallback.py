"""A decision never fails verification in front of a user: when an engine's answer fails
`verify`, `schedule` answers with the next engine's verified answer (status HEURISTIC, a
note, `stats["verify_fallback"]`), and raises only when no engine's answer passes."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from server.metrics import Metrics
from solver import InternalError, SchedulerConf, schedule
from solver.engines import ENGINES, EngineResult, SolveParams
from solver.problem import Problem
from tests.builders import model, node, pod, podgroup

# Two 4-cpu nodes, a gang of two 3-cpu pods: one pod per node.
CLUSTER = (
    node("a").cpu("4").obj(),
    node("b").cpu("4").obj(),
    podgroup("g", 2),
    pod("g-0").requests(cpu="3").group("g").obj(),
    pod("g-1").requests(cpu="3").group("g").obj(),
)


def crowded(problem: Problem, params: SolveParams) -> EngineResult:
    """A broken engine: every pod on the first node, whatever its room."""
    pod_node = [np.zeros(len(pods), dtype=np.int64) for pods in problem.type_pods]
    return EngineResult(engine="cpsat", status="OPTIMAL", pod_node=pod_node, bound=0.0)


@pytest.mark.parametrize("engine", ["cpsat", "auto"])
def test_a_failed_answer_gives_way_to_the_greedys_verified_one(
    engine: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(ENGINES, engine, crowded)
    d = schedule(model(*CLUSTER), SchedulerConf.default(), engine=engine, workers=1)
    assert d.status == "HEURISTIC" and d.bound is None
    assert sorted(p.node or "" for p in d.placements.values()) == ["a", "b"]
    assert d.stats["verify_fallback"] == 1
    assert any("failed verification" in n and "greedy" in n for n in d.notes)
    assert "failed verification" in caplog.text


def test_the_greedy_failing_gives_way_to_cpsat(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(ENGINES, "greedy", crowded)
    d = schedule(model(*CLUSTER), SchedulerConf.default(), engine="greedy", workers=1)
    assert sorted(p.node or "" for p in d.placements.values()) == ["a", "b"]
    assert d.stats["verify_fallback"] == 1


def test_no_engine_passing_is_an_internal_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENGINES:
        monkeypatch.setitem(ENGINES, name, crowded)
    with pytest.raises(InternalError, match="failed verification"):
        schedule(model(*CLUSTER), SchedulerConf.default(), engine="auto", workers=1)


def test_a_verified_answer_is_returned_as_it_is() -> None:
    d = schedule(model(*CLUSTER), SchedulerConf.default(), engine="cpsat", workers=1)
    assert d.status == "OPTIMAL" and "verify_fallback" not in d.stats


def test_the_service_counts_fallbacks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(ENGINES, "cpsat", crowded)
    d = schedule(model(*CLUSTER), SchedulerConf.default(), engine="cpsat", workers=1)
    metrics = Metrics()
    metrics.solved(d, 0.01)
    sample = metrics.registry.get_sample_value(
        "gangplan_verify_fallbacks_total", {"engine": "greedy"}
    )
    assert sample == 1


def test_a_failed_preemption_plan_gives_way_to_the_placement_alone(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A broken preemption step in every engine: its victims are not on the nodes it
    # names, so verify refuses it; the answer is the placement with nobody evicted.
    schedule_module = sys.modules["solver.schedule"]  # (`solver.schedule` is the function)
    real = schedule_module.verify

    def refuses_victims(*args: object, **kwargs: object) -> list[str]:
        decision = args[2]
        problems: list[str] = real(*args, **kwargs)
        return problems + (["victim batch/low: broken"] if decision.victims else [])  # type: ignore[attr-defined]

    monkeypatch.setattr(schedule_module, "verify", refuses_victims)
    cluster = [
        node("a").cpu("4").obj(),
        pod("low", "batch").requests(cpu="4").priority(1).on("a").obj(),
        podgroup("hi", 1),
        pod("hi-0").requests(cpu="4").priority(100).group("hi").obj(),
    ]
    d = schedule(model(*cluster), SchedulerConf.default(), engine="greedy", preempt=True)
    assert d.victims == ()
    assert d.stats["verify_fallback"] == 1
    assert any("preemption plan failed verification" in n for n in d.notes)
    assert "nothing evicted" in caplog.text
