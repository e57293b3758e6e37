"""One scheduling cycle, end to end: model -> Problem -> engine -> Decision -> verify."""

from __future__ import annotations

import time
from dataclasses import replace

from solver.compile import compile_problem
from solver.config import SchedulerConf
from solver.decision import Decision, Preemption, Victim, decide
from solver.engines import ENGINES, EngineResult, SolveParams
from solver.engines.preempt import preempt as run_preemption
from solver.errors import InputError
from solver.model import ClusterModel
from solver.policies.preemption import compile_preemption, preemption_enabled
from solver.policies.reclaim import reclaim_planner
from solver.problem import Problem
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
    preempt: bool = False,
) -> Decision:
    """Place every pending pod of `model`; the Decision returned has passed `verify`.

    `time_limit` bounds the engine (seconds), `workers` is CP-SAT's num_workers (0: the
    machine's cores, capped) and `seed` its random_seed; one worker and a fixed seed give
    the same Decision for the same input. Preemption runs when `preempt` is set or the conf
    lists the `preempt` or `reclaim` action (solver/engines/preempt.py).
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
    preemption = None
    if preemption_enabled(conf, preempt):
        left = max(0.05, time_limit - (time.perf_counter() - started))
        preemption = _preempt(
            problem, model, conf, result, replace(params, time_limit=left), engine
        )
    decision = decide(problem, model, result, time.perf_counter() - started, preemption)
    check(model, conf, decision)
    return decision


def _preempt(
    problem: Problem,
    model: ClusterModel,
    conf: SchedulerConf,
    result: EngineResult,
    params: SolveParams,
    engine: str,
) -> Preemption:
    pre = compile_preemption(model, problem)
    planner = reclaim_planner(model, conf)
    outcome = run_preemption(problem, pre, result.pod_node, params, engine, planner)
    victims: list[Victim] = []
    nominated: dict[str, str] = {}
    cost = evicted = 0
    for plan in outcome.plans:
        unit_id = problem.unit_ids[plan.unit]
        gangs = unit_id.split(",")
        trigger = min((pre.trigger[g][0] for g in gangs if g in pre.trigger), default="")
        scheduler = next((pre.scheduler_name[g] for g in gangs if g in pre.scheduler_name), "")
        if plan.engine == "reclaim":
            message = (
                f"{scheduler}: reclaiming for queue {plan.queue}, "
                f"preemptor: {unit_id}, triggerpod: {trigger}"
            )
        else:
            message = (
                f"{scheduler}: preempting to accommodate higher priority pods, "
                f"preemptor: {unit_id}, triggerpod: {trigger}"
            )
        for v in plan.victims:
            victims.append(
                Victim(
                    pod=pre.victim_keys[v],
                    node=problem.node_names[pre.victim_node[v]],
                    message=message,
                )
            )
        for t, nodes in plan.nominated.items():
            for pod, n in zip(problem.type_pods[t], nodes, strict=False):
                nominated[pod] = problem.node_names[n]
        cost += plan.cost
        evicted += len(plan.victims)
    result.stats["preemption_seconds"] = outcome.seconds
    return Preemption(tuple(victims), nominated, outcome.reasons, cost, evicted)
