"""One scheduling cycle, end to end: model -> Problem -> engine -> Decision -> verify."""

from __future__ import annotations

import time

from solver.compile import compile_problem
from solver.config import SchedulerConf
from solver.decision import Decision, decide
from solver.engines import ENGINES
from solver.errors import InputError
from solver.model import ClusterModel
from solver.verify import check

__all__ = ["schedule"]


def schedule(
    model: ClusterModel, conf: SchedulerConf | None = None, *, engine: str = "greedy"
) -> Decision:
    """Place every pending pod of `model`; the Decision returned has passed `verify`."""
    conf = conf or SchedulerConf.default()
    if engine not in ENGINES:
        raise InputError(f"unknown engine {engine!r} (available: {', '.join(sorted(ENGINES))})")
    started = time.perf_counter()
    problem = compile_problem(model, conf)
    result = ENGINES[engine](problem)
    decision = decide(problem, model, result, time.perf_counter() - started)
    check(model, conf, decision)
    return decision
