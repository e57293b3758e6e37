"""`gangplan.v1.PlacementService`: snapshots in, verified Decisions out.

Every placement call runs the same pipeline as `gangplan schedule`: the cluster (a stored
snapshot, or an inline one built for the call) plus the job's workload -> `solver.schedule`
(compile, engine, verify) -> `Decision` -> protobuf. A call on a stored snapshot pays for
its nodes and its own pods, never for the pods already running. Status codes:

    request bytes that do not parse       -> INVALID_ARGUMENT (server/lenient.py)
    ConvertError, DeltaError, InputError,
    ConfigError                           -> INVALID_ARGUMENT (google.rpc.BadRequest details)
    NotFound                              -> NOT_FOUND
    StaleGeneration                       -> FAILED_PRECONDITION
    TooManySnapshots                      -> RESOURCE_EXHAUSTED
    no time left to answer (answer_floor) -> DEADLINE_EXCEEDED, at once
    InternalError and anything unexpected -> INTERNAL (logged; never UNKNOWN)

Deadlines: the solver budget is the call's time remaining after decoding, less
`deadline_share` of it, `deadline_margin` and `deadline_per_pod` for each pod of the call
(`Settings.budget`); the greedy stops at that budget (the gang groups it has not reached
wait, with a reason saying so), and CP-SAT's model building checks it and answers greedy
when it is gone. A non-greedy engine gets greedy
instead (with a note) when the budget is under `min_cpsat_budget`. Cancellation: the RPC's
end (cancelled, disconnected, or done) sets the call's stop event; CP-SAT's building and
search stop at once (`stop_search`), and a cancelled call's answer is dropped.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from gangplan.v1 import placement_service_pb2 as spb
from gangplan.v1 import placement_service_pb2_grpc as spb_grpc
from server.drain import Drain
from server.metrics import Metrics
from server.plan import plan_capacity
from server.settings import Settings
from server.store import (
    NotFound,
    SnapshotStore,
    StaleGeneration,
    TooManySnapshots,
    collector_paused,
)
from server.why import clock, why_answer
from solver import (
    SCHEMA,
    ConfigError,
    Decision,
    InputError,
    InternalError,
    SchedulerConf,
    conf_from_text,
    load_conf,
)
from solver import schedule as solver_schedule
from solver.codec import (
    ConvertError,
    decision_to_proto,
    delta_from_proto,
    job_from_proto,
    snapshot_from_proto,
)
from solver.engines import ENGINES
from solver.model import PodSelection
from solver.snapshot import DeltaError, Snapshot, Workload
from solver.views import validate_queues

__all__ = ["PlacementServicer", "ScheduleFn"]

log = logging.getLogger("gangplan.server")

ScheduleFn = Callable[..., Decision]  # `solver.schedule`'s signature; tests pass spies
MAX_SNAPSHOT_ID = 253  # a Kubernetes object name's limit: ids are echoed in errors
NO_DEADLINE = 1e6  # grpc reports a call without a deadline as ~infinite time remaining
DRAIN_FLOOR = 0.05  # s: a call starting as the drain ends still gets the greedy's answer


def _check_id(snapshot_id: str, field: str) -> None:
    """An id no snapshot can have is INVALID_ARGUMENT in every method, not NOT_FOUND."""
    if len(snapshot_id) > MAX_SNAPSHOT_ID:
        message = f"longer than {MAX_SNAPSHOT_ID} characters"
        raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, message, [(field, message)])


class _Abort(Exception):
    """Raised inside the servicer; turned into a status by `_guard`."""

    def __init__(
        self, code: grpc.StatusCode, message: str, violations: list[tuple[str, str]] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.violations = violations or []


def _abort(context: grpc.ServicerContext, err: _Abort) -> NoReturn:
    if not err.violations:
        context.abort(err.code, err.message)
    bad = error_details_pb2.BadRequest(
        field_violations=[
            error_details_pb2.BadRequest.FieldViolation(field=f, description=d)
            for f, d in err.violations
        ]
    )
    detail = any_pb2.Any()
    detail.Pack(bad)
    status = status_pb2.Status(code=err.code.value[0], message=err.message, details=[detail])
    context.abort_with_status(rpc_status.to_status(status))
    raise AssertionError("unreachable")  # abort raises


MAX_SOLVER_WORKERS = 64  # CP-SAT num_workers
MAX_SEED = 2**31 - 1  # CP-SAT random_seed is an int32


def _check_search_options(options: Any) -> None:
    """`options.workers` and `options.seed` within what CP-SAT takes (INVALID_ARGUMENT)."""
    violations = []
    if not 0 <= options.workers <= MAX_SOLVER_WORKERS:
        violations.append(("options.workers", f"must be 0..{MAX_SOLVER_WORKERS}"))
    if not 0 <= options.seed <= MAX_SEED:
        violations.append(("options.seed", f"must be 0..{MAX_SEED}"))
    if violations:
        raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, "invalid search options", violations)


def _guard(method: Callable[..., Any]) -> Callable[..., Any]:
    """Maps the servicer's exceptions to status codes (see the module docstring)."""

    @functools.wraps(method)
    def wrapper(self: PlacementServicer, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            return method(self, request, context)
        except _Abort as err:
            _abort(context, err)
        except (ConvertError, DeltaError) as err:
            _abort(context, _Abort(grpc.StatusCode.INVALID_ARGUMENT, str(err), err.violations))
        except NotFound as err:
            _abort(context, _Abort(grpc.StatusCode.NOT_FOUND, str(err)))
        except StaleGeneration as err:
            _abort(context, _Abort(grpc.StatusCode.FAILED_PRECONDITION, str(err)))
        except TooManySnapshots as err:
            _abort(context, _Abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(err)))
        except InputError as err:
            _abort(context, _Abort(grpc.StatusCode.INVALID_ARGUMENT, str(err), [("", str(err))]))
        except InternalError as err:
            log.exception("internal error")
            _abort(context, _Abort(grpc.StatusCode.INTERNAL, str(err)))
        except Exception:
            if context.code() is not None:  # type: ignore[attr-defined]  # grpc's abort
                raise
            # A bug, not the client's fault: INTERNAL with a log line, never UNKNOWN.
            log.exception("unexpected error in %s", method.__name__)
            _abort(
                context,
                _Abort(grpc.StatusCode.INTERNAL, "internal error; the server log has details"),
            )

    return wrapper


@functools.lru_cache(maxsize=32)
def _conf_from_text(text: str) -> SchedulerConf:
    """Parse a Volcano conf sent in a request (cached: front ends resend the same text)."""
    source = "options.scheduler_conf"
    try:
        return conf_from_text(text, source)
    except ConfigError as err:
        where = source + (f".{err.field}" if err.field else "")
        raise _Abort(
            grpc.StatusCode.INVALID_ARGUMENT, f"{where}: {err.message}", [(where, err.message)]
        ) from None


@dataclass(frozen=True)
class _Answer:
    decision: Decision
    gangs: set[str] | None  # the job's gangs (closed over GangGroups); None: every gang
    generation: int
    singles: frozenset[str]  # pending pods that are a gang of one


class PlacementServicer(spb_grpc.PlacementServiceServicer):
    def __init__(
        self,
        settings: Settings,
        store: SnapshotStore,
        metrics: Metrics,
        schedule_fn: ScheduleFn | None = None,
        drain: Drain | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.metrics = metrics
        self.drain = drain or Drain()
        self.schedule_fn: ScheduleFn = schedule_fn or solver_schedule
        self.default_conf = load_conf(settings.scheduler_conf)

    # ------------------------------------------------------------------------- snapshots

    @_guard
    def PutSnapshot(
        self, request: spb.PutSnapshotRequest, context: grpc.ServicerContext
    ) -> spb.PutSnapshotResponse:
        _check_id(request.snapshot_id, "snapshot_id")
        with collector_paused(len(request.cluster.pods)):
            snapshot = snapshot_from_proto(request.cluster, "cluster", SCHEMA)
            stored = self.store.put(snapshot, request.snapshot_id)
        self._snapshot_sizes()
        return spb.PutSnapshotResponse(snapshot_id=stored.id, generation=stored.generation)

    @_guard
    def UpdateSnapshot(
        self, request: spb.UpdateSnapshotRequest, context: grpc.ServicerContext
    ) -> spb.UpdateSnapshotResponse:
        _check_id(request.snapshot_id, "snapshot_id")
        with collector_paused(
            len(request.upsert_pods) + len(request.remove_pods) + len(request.bindings)
        ):
            delta = delta_from_proto(request, SCHEMA)
            stored = self.store.update(request.snapshot_id, request.expected_generation, delta)
        self._snapshot_sizes()
        return spb.UpdateSnapshotResponse(
            snapshot_id=stored.id,
            generation=stored.generation,
            node_count=len(stored.snapshot.nodes),
            pod_count=len(stored.snapshot),
        )

    @_guard
    def DeleteSnapshot(
        self, request: spb.DeleteSnapshotRequest, context: grpc.ServicerContext
    ) -> spb.DeleteSnapshotResponse:
        _check_id(request.snapshot_id, "snapshot_id")
        self.store.delete(request.snapshot_id)
        self._snapshot_sizes()
        return spb.DeleteSnapshotResponse()

    def _snapshot_sizes(self) -> None:
        nodes, pods = self.store.sizes()
        self.metrics.snapshot_sizes(len(self.store), nodes, pods)

    # ------------------------------------------------------------------------- placement

    @_guard
    def PlaceJob(
        self, request: spb.PlaceJobRequest, context: grpc.ServicerContext
    ) -> spb.PlaceJobResponse:
        answer = self._solve(request, context)
        return spb.PlaceJobResponse(
            decision=self._decision(answer),
            placed=_placed(answer),
            generation=answer.generation,
        )

    @_guard
    def Preempt(
        self, request: spb.PreemptRequest, context: grpc.ServicerContext
    ) -> spb.PreemptResponse:
        answer = self._solve(request, context, preempt=True)
        reasons = sorted(
            {
                g.reason
                for gid, g in answer.decision.podgroups.items()
                if (answer.gangs is None or gid in answer.gangs) and not g.placed
            }
        )
        return spb.PreemptResponse(
            decision=self._decision(answer),
            placed=_placed(answer, nominated=True),
            reason="" if answer.decision.victims else "; ".join(reasons),
            generation=answer.generation,
        )

    @_guard
    def Enqueue(
        self, request: spb.EnqueueRequest, context: grpc.ServicerContext
    ) -> spb.EnqueueResponse:
        answer = self._solve(request, context)
        admissions = []
        for gid, outcome in sorted(answer.decision.podgroups.items()):
            if answer.gangs is not None and gid not in answer.gangs:
                continue
            reason = "" if outcome.enqueued else outcome.reason
            admissions.append(spb.Admission(gang=gid, admitted=outcome.enqueued, reason=reason))
        return spb.EnqueueResponse(admissions=admissions, generation=answer.generation)

    @_guard
    def ValidateQueues(
        self, request: spb.ValidateQueuesRequest, context: grpc.ServicerContext
    ) -> spb.ValidateQueuesResponse:
        snapshot, _ = self._cluster(request)
        verdicts = validate_queues(snapshot)
        return spb.ValidateQueuesResponse(
            valid=all(v.valid for v in verdicts.values()),
            violations=[
                spb.QueueViolation(queue=name, field=path, description=message)
                for name, v in verdicts.items()
                for path, message in v.problems
            ],
        )

    @_guard
    def PlanCapacity(
        self, request: spb.PlanCapacityRequest, context: grpc.ServicerContext
    ) -> spb.PlanCapacityResponse:
        """Capacity planning (`solver.plan`); the deadline less the margin is the time limit."""
        snapshot = (
            Snapshot.build((), schema=SCHEMA)
            if request.WhichOneof("cluster_source") is None
            else self._cluster(request)[0]
        )
        remaining = context.time_remaining()
        budget = self.settings.time_limit
        if remaining is not None and remaining < NO_DEADLINE:
            budget = min(budget, self.settings.budget(remaining))
            if budget <= 0.05:
                raise _Abort(grpc.StatusCode.DEADLINE_EXCEEDED, "the deadline left no time to plan")
        _check_search_options(request.options)
        workers = request.options.workers or self.settings.solver_workers or 1
        seed = request.options.seed or self.settings.seed
        return plan_capacity(snapshot, request, budget, workers, seed)

    @_guard
    def Why(self, request: spb.WhyRequest, context: grpc.ServicerContext) -> spb.WhyResponse:
        """The cycle PlaceJob runs, then the asked gang's certificate, changes and start
        estimate (`server.why`) within what is left of the deadline."""
        if not request.gang or "/" not in request.gang:
            message = "required: the gang as namespace/name (a pod's key for a pod alone)"
            raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, message, [("gang", message)])
        started = time.perf_counter()
        clock(request)  # a bad `now` or runtime is refused before any work
        answer = self._solve(request, context)
        snapshot, _ = self._cluster(request)
        if (
            request.gang not in answer.decision.podgroups
            and request.gang not in answer.decision.placements
        ):
            message = f"no gang or pending pod {request.gang[:64]!r} in the call"
            raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, message, [("gang", message)])
        remaining = context.time_remaining()
        budget = self.settings.time_limit
        if remaining is not None and remaining < NO_DEADLINE:
            budget = min(budget, self.settings.budget(remaining))
        conf = (
            _conf_from_text(request.options.scheduler_conf)
            if request.options.scheduler_conf
            else None
        ) or self.default_conf
        stop = threading.Event()  # the client gone or the drain over: stop searching
        context.add_callback(stop.set)
        self.drain.watch(stop)
        try:
            _, response = why_answer(
                snapshot, request, answer.decision, conf, started + max(0.05, budget), stop
            )
        finally:
            self.drain.forget(stop)
        if not context.is_active():
            raise _Abort(grpc.StatusCode.CANCELLED, "the client cancelled the call")
        response.decision.CopyFrom(self._decision(answer))
        response.generation = answer.generation
        return response

    # ------------------------------------------------------------------------- the pipeline

    def _cluster(self, request: Any) -> tuple[Snapshot, int]:
        which = request.WhichOneof("cluster_source")
        if which == "snapshot":
            _check_id(request.snapshot.id, "snapshot.id")
            stored = self.store.get(request.snapshot.id, request.snapshot.expected_generation)
            return stored.snapshot, stored.generation
        if which == "cluster":
            return snapshot_from_proto(request.cluster, "cluster", SCHEMA), 0
        raise _Abort(
            grpc.StatusCode.INVALID_ARGUMENT,
            "name a snapshot or send a cluster",
            [("cluster_source", "set `snapshot` or `cluster`")],
        )

    def _solve(
        self, request: Any, context: grpc.ServicerContext, *, preempt: bool = False
    ) -> _Answer:
        started = time.perf_counter()
        snapshot, generation = self._cluster(request)
        job = request.job
        if job.gangs or job.pods or job.gang_ids:
            pods, given, named = job_from_proto(job, "job", snapshot)
            workload = Workload.of(snapshot, pods, named, given)
            closed: set[str] | None = set(workload.gangs)
        else:
            workload, closed = Workload.everything(snapshot), None
        options = request.options
        left = None
        if options.scheduler_names or options.namespaces:
            selection = PodSelection(
                scheduler_names=frozenset(options.scheduler_names) or None,
                namespaces=frozenset(options.namespaces) or None,
            )
            workload, left = workload.select(selection)
        conf = _conf_from_text(options.scheduler_conf) if options.scheduler_conf else None
        conf = conf or self.default_conf
        engine, kwargs, notes = self._budget(
            options, context, len(workload.pods), time.perf_counter() - started
        )
        if not context.is_active():
            raise _Abort(grpc.StatusCode.CANCELLED, "the client cancelled the call")
        if preempt:
            kwargs["preempt"] = True
        # Set when the RPC ends for any reason: a cancelled or disconnected call stops its
        # solver (CP-SAT's stop_search) instead of running out its budget.
        stop = threading.Event()
        context.add_callback(stop.set)
        kwargs["stop"] = stop
        self.drain.watch(stop)  # the drain's end stops the solver: its best answer goes out
        try:
            decision = self.schedule_fn(snapshot, conf, workload=workload, engine=engine, **kwargs)
        finally:
            self.drain.forget(stop)
        if not context.is_active():
            raise _Abort(grpc.StatusCode.CANCELLED, "the client cancelled the call")
        if left is not None:
            notes.append(left)
        if notes:
            decision = _with_notes(decision, notes)
        self.metrics.solved(decision, time.perf_counter() - started)
        singles = frozenset(p.key for p in workload.pods if workload.gangs[p.gang].implicit)
        return _Answer(decision, closed, generation, singles)

    def _budget(
        self, options: spb.SolveOptions, context: grpc.ServicerContext, pods: int, decoded: float
    ) -> tuple[str, dict[str, Any], list[str]]:
        """(engine, extra schedule() arguments, notes) for the time this call has left to
        place `pods` pods, decoding having taken `decoded` seconds."""
        _check_search_options(options)
        engine = options.engine or self.settings.engine
        if engine not in ENGINES:
            message = f"unknown engine {engine!r} (available: {', '.join(sorted(ENGINES))})"
            raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, message, [("options.engine", message)])
        remaining = context.time_remaining()
        if remaining is None or remaining > NO_DEADLINE:
            budget = self.settings.time_limit
        else:
            budget = self.settings.budget(remaining, pods)
            floor = self.settings.answer_floor(decoded, pods)
            if remaining < floor:
                # compiling, verifying and encoding this many pods would outlast the
                # deadline: refused at once, with why, rather than cut off by it
                raise _Abort(
                    grpc.StatusCode.DEADLINE_EXCEEDED,
                    f"the deadline left {remaining * 1000:.0f} ms after decoding; answering "
                    f"a call of {pods} pod(s) needs about {floor * 1000:.0f} ms",
                )
            # less left than the margin it keeps, yet time to answer: the greedy with no
            # time of its own (it tries the first gang group in queue order; the others
            # wait, with a reason saying so)
            budget = max(0.0, budget)
        notes = []
        draining = self.drain.remaining()
        if draining is not None and draining < budget:
            # an admitted call is answered before the drain ends: the greedy's answer
            # at least, however little is left
            budget = max(DRAIN_FLOOR, draining)
            notes.append(f"the server is draining: {budget * 1000:.0f} ms for this call")
        if engine != "greedy" and budget < self.settings.min_cpsat_budget:
            notes.append(
                f"deadline left {budget * 1000:.0f} ms, under the "
                f"{self.settings.min_cpsat_budget * 1000:.0f} ms engine {engine!r} "
                "needs: greedy answered"
            )
            engine = "greedy"
        kwargs: dict[str, Any] = {
            "time_limit": budget,
            "workers": options.workers or self.settings.solver_workers,
            "seed": options.seed or self.settings.seed,
        }
        return engine, kwargs, notes

    def _decision(self, answer: _Answer) -> spb.Decision:
        msg = decision_to_proto(answer.decision)
        if answer.gangs is not None:
            # Only the job's gangs: bound pods of other gangs were in the model as load.
            gangs = [g for g in msg.gangs if g.gang in answer.gangs]
            del msg.gangs[:]
            msg.gangs.extend(gangs)
        return msg


def _placed(answer: _Answer, *, nominated: bool = False) -> bool:
    """Every named gang of the job placed (or, with `nominated`, nominated after preemption),
    and every pending pod of a gang of one."""
    d = answer.decision

    def taken(key: str) -> bool:
        p = d.placements[key]
        return p.node is not None or (nominated and p.nominated is not None)

    for gid, outcome in d.podgroups.items():
        waiting = nominated and outcome.reason.startswith("nominated after preemption")
        if (answer.gangs is None or gid in answer.gangs) and not outcome.placed and not waiting:
            return False
    return all(taken(k) for k in answer.singles if k in d.placements)


def _with_notes(decision: Decision, notes: list[str]) -> Decision:
    return dataclasses.replace(decision, notes=(*decision.notes, *notes))
