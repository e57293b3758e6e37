"""One scheduling cycle, end to end: model -> Problem -> engine -> Decision -> verify."""

from __future__ import annotations

import time

from solver.compile import compile_problem
from solver.config import SchedulerConf
from solver.decision import Decision, decide
from solver.engines import ENGINES, SolveParams
from solver.errors import InputError
from solver.model import ClusterModel
from solver.verify import check

__all__ = ["schedule"]


def schedule(
    model: ClusterModel,
    conf: SchedulerConf | None = None,
    *,
    engine: str = "auto",
    time_limit: float = 10.0,
    workers: int = 0,
    seed: int = 0,
) -> Decision:
    """Place every pending pod of `model`; the Decision returned has passed `verify`.

    `time_limit` bounds the engine (seconds), `workers` is CP-SAT's num_workers (0: the
    machine's cores, capped) and `seed` its random_seed; one worker and a fixed seed give
    the same Decision for the same input.
    """
    conf = conf or SchedulerConf.default()
    if engine not in ENGINES:
        raise InputError(f"unknown engine {engine!r} (available: {', '.join(sorted(ENGINES))})")
    started = time.perf_counter()
    problem = compile_problem(model, conf)
    params = SolveParams(
        time_limit=max(0.05, time_limit - (time.perf_counter() - started)),
        workers=workers,
        seed=seed,
    )
    result = ENGINES[engine](problem, params)
    decision = decide(problem, model, result, time.perf_counter() - started)
    check(model, conf, decision)
    return decision
