"""One scheduling cycle, end to end: snapshot + workload -> Problem -> engine -> Decision -> verify.

    schedule(model, conf)                         # a whole input (`gangplan schedule`)
    schedule(snapshot, conf, workload=workload)   # one call on a stored snapshot (gRPC)

`SCHEMA` is what a snapshot must keep of running pods for the features and the verifier.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import replace

from solver.collector import full_collections_held
from solver.compile import compile_problem
from solver.config import SchedulerConf
from solver.decide import decide
from solver.decision import Decision
from solver.engines import ENGINES, SolveParams
from solver.errors import InputError, InternalError
from solver.features import FACTS, FEATURES
from solver.model import EXPECTED_END, EXPECTED_RUNTIME, PRIORITY_CLASS, ClusterModel
from solver.snapshot import PodSchema, Snapshot, Workload
from solver.verify import ANNOTATIONS, verify
from solver.why import certify

__all__ = ["AFTER_ENGINE_PER_POD", "SCHEMA", "schedule", "snapshot_of", "solve"]

SCHEMA = PodSchema(FACTS, keep=ANNOTATIONS | {EXPECTED_END, EXPECTED_RUNTIME, PRIORITY_CLASS})
LOG = logging.getLogger("gangplan")
LOG.addHandler(logging.NullHandler())  # a library's logger: the service or caller configures it
AFTER_ENGINE_PER_POD = 30e-6
"""Seconds per pod of a call that the work after the engine takes (the Decision, verify, and
the caller's encoding: 25-35 us a placed pod on a busy 2-core machine, benchmarks/deadlines):
callers with a deadline keep it back from the engine's time limit."""
PREEMPTION_SKIPPED = (
    "preemption not planned: the call's time limit ran out while placing (the gang groups "
    "not tried wait for the next cycle)"
)
FALLBACK = ("greedy", "cpsat")
"""The engines tried, in order, when an answer fails verification (the failed one skipped)."""
AFTER_PLACEMENT = tuple(f.after for f in FEATURES if f.after is not None)
"""Steps on the engine's answer (preemption and reclaim), in registry order."""


def snapshot_of(model: ClusterModel) -> Snapshot:
    """The snapshot of a whole input, keeping what the features and the verifier read."""
    return Snapshot.from_model(model, SCHEMA)


def solve(
    question: ClusterModel | Snapshot,
    conf: SchedulerConf | None = None,
    *,
    workload: Workload | None = None,
    engine: str = "auto",
    time_limit: float = 10.0,
    workers: int = 0,
    seed: int = 0,
    preempt: bool = False,
    stop: threading.Event | None = None,
    after: bool = True,
) -> Decision:
    """Place every pending pod of the workload (default: every pending pod of the input).
    The Decision is NOT verified: `schedule` is this plus `verify`; property tests call
    this and use `verify` as their oracle.

    `time_limit` bounds the engine (seconds), `workers` is CP-SAT's num_workers (0: the
    machine's cores, capped) and `seed` its random_seed; one worker and a fixed seed give
    the same Decision for the same input. Preemption runs when `preempt` is set or the conf
    lists the `preempt` or `reclaim` action (`solver/features/preemption`); `after=False`
    runs no step after the placement (nobody evicted, whatever the conf). Setting `stop`
    (the caller has gone) ends CP-SAT's model building or search at once with the best
    answer so far.
    """
    conf = conf or SchedulerConf.default()
    if engine not in ENGINES:
        raise InputError(f"unknown engine {engine!r} (available: {', '.join(sorted(ENGINES))})")
    started = time.perf_counter()
    snapshot = question if isinstance(question, Snapshot) else snapshot_of(question)
    workload = workload or Workload.everything(snapshot)
    problem = compile_problem(snapshot, conf, workload)
    params = SolveParams(
        # what compiling left: the greedy stops at the limit (trying one gang group at
        # least), CP-SAT is not built without time for it
        time_limit=max(0.0, time_limit - (time.perf_counter() - started)),
        workers=workers,
        seed=seed,
        stop=stop,
    )
    result = ENGINES[engine](problem, params)
    preemption = None
    skipped: list[str] = []
    for step in AFTER_PLACEMENT if after else ():
        if not step.wanted(conf, preempt):
            continue
        if result.stats.get("units_unreached"):
            # placement used the call's whole time: gang groups it did not try must not
            # get victims (they may fit as they are), and there is no time to plan any
            skipped.append(PREEMPTION_SKIPPED)
            continue
        left = max(0.05, time_limit - (time.perf_counter() - started))
        params = replace(params, time_limit=left)
        preemption, seconds = step.run(
            problem,
            snapshot,
            workload,
            conf,
            result.pod_node,
            exact=engine != "greedy",
            workers=params.num_workers,
            seed=params.seed,
            deadline=time.perf_counter() + left,
        )
        result.stats["preemption_seconds"] = seconds
    certifying = time.perf_counter()
    certified = certify(
        problem,
        result.pod_node,
        result.gang_reason,
        preempted=preemption is not None,
        deadline=started + time_limit,
    )
    if certified:
        result.stats["why_seconds"] = time.perf_counter() - certifying
    decision = decide(
        problem, snapshot, workload, result, time.perf_counter() - started, preemption, certified
    )
    extra = [*result.notes, *skipped]
    return replace(decision, notes=(*decision.notes, *extra)) if extra else decision


def schedule(
    question: ClusterModel | Snapshot,
    conf: SchedulerConf | None = None,
    *,
    workload: Workload | None = None,
    engine: str = "auto",
    time_limit: float = 10.0,
    workers: int = 0,
    seed: int = 0,
    preempt: bool = False,
    stop: threading.Event | None = None,
) -> Decision:
    """`solve` (same parameters), then `verify`: the Decision returned has passed it.

    A decision never fails verification in front of a user: when the engine's answer
    fails, the other engines' answers are tried in turn (`FALLBACK`, within what is left
    of `time_limit`) and the first that passes is returned with status HEURISTIC, a note
    naming the first violation, and `stats["verify_fallback"] = 1` (logged; the service
    counts it). Only when none passes is InternalError raised, naming what failed."""
    with full_collections_held():  # a full collection alone can outlast a short time limit
        return _schedule(question, conf, workload, engine, time_limit, workers, seed, preempt, stop)


def _schedule(
    question: ClusterModel | Snapshot,
    conf: SchedulerConf | None,
    workload: Workload | None,
    engine: str,
    time_limit: float,
    workers: int,
    seed: int,
    preempt: bool,
    stop: threading.Event | None,
) -> Decision:
    conf = conf or SchedulerConf.default()
    started = time.perf_counter()
    snapshot = question if isinstance(question, Snapshot) else snapshot_of(question)
    workload = workload or Workload.everything(snapshot)

    def run(name: str, limit: float, evict: bool = True) -> Decision:
        return solve(
            snapshot,
            conf,
            workload=workload,
            engine=name,
            time_limit=limit,
            workers=workers,
            seed=seed,
            preempt=preempt,
            stop=stop,
            after=evict,
        )

    decision = run(engine, time_limit)
    problems = verify(snapshot, conf, decision, workload)
    if not problems:
        return decision
    for other in (e for e in FALLBACK if e != engine):
        left = max(0.05, time_limit - (time.perf_counter() - started))
        again = run(other, left)
        if verify(snapshot, conf, again, workload):
            continue
        LOG.warning(
            "the %s engine's decision failed verification (%d): %s; returning the %s "
            "engine's verified decision",
            engine,
            len(problems),
            problems[0],
            other,
        )
        return _fallen_back(
            again,
            f"the {engine} engine's answer failed verification ({problems[0]}); the {other} "
            "engine's verified answer is given instead (please report this)",
        )
    if any(after.wanted(conf, preempt) for after in AFTER_PLACEMENT):
        # the placement alone, evicting nobody
        left = max(0.05, time_limit - (time.perf_counter() - started))
        again = run(engine, left, evict=False)
        if not verify(snapshot, conf, again, workload):
            LOG.warning("preemption's plan failed verification: %s; nothing evicted", problems[0])
            return _fallen_back(
                again,
                f"the preemption plan failed verification ({problems[0]}); nothing is "
                "evicted (please report this)",
            )
    listed = "\n  ".join(problems[:20])
    raise InternalError(f"decision failed verification ({len(problems)}):\n  {listed}")


def _fallen_back(decision: Decision, note: str) -> Decision:
    """A verified answer given instead of one that failed: heuristic, with the note."""
    return replace(
        decision,
        status="HEURISTIC",
        bound=None,
        notes=(*decision.notes, note),
        stats={**decision.stats, "verify_fallback": 1},
    )
