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

import contextlib
import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import grpc

from gangplan.v1 import placement_service_pb2 as spb
from gangplan.v1 import placement_service_pb2_grpc as spb_grpc
from server.drain import Drain
from server.metrics import Metrics
from server.plan import catalog_of, plan_capacity
from server.settings import Settings
from server.status import Abort, check_id, check_search_options, conf_from_text_cached, guard
from server.store import (
    SnapshotStore,
    collector_paused,
)
from server.why import clock, why_answer
from solver import (
    SCHEMA,
    Decision,
    load_conf,
)
from solver import schedule as solver_schedule
from solver.codec import (
    decision_to_proto,
    delta_from_proto,
    goal_from_proto,
    job_from_proto,
    plan_to_proto,
    snapshot_from_proto,
)
from solver.consolidate import consolidation_wanted, schedule_moving
from solver.defrag import ENGINES as DEFRAG_ENGINES
from solver.defrag import defragment
from solver.engines import ENGINES
from solver.model import PodSelection
from solver.snapshot import Snapshot, Workload
from solver.views import validate_queues

__all__ = ["PlacementServicer", "ScheduleFn"]

log = logging.getLogger("gangplan.server")

ScheduleFn = Callable[..., Decision]  # `solver.schedule`'s signature; tests pass spies
NO_DEADLINE = 1e6  # grpc reports a call without a deadline as ~infinite time remaining
DRAIN_FLOOR = 0.05  # s: a call starting as the drain ends still gets the greedy's answer


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

    @guard
    def PutSnapshot(
        self, request: spb.PutSnapshotRequest, context: grpc.ServicerContext
    ) -> spb.PutSnapshotResponse:
        check_id(request.snapshot_id, "snapshot_id")
        with collector_paused(len(request.cluster.pods)):
            snapshot = snapshot_from_proto(request.cluster, "cluster", SCHEMA)
            stored = self.store.put(snapshot, request.snapshot_id)
        self._snapshot_sizes()
        return spb.PutSnapshotResponse(snapshot_id=stored.id, generation=stored.generation)

    @guard
    def UpdateSnapshot(
        self, request: spb.UpdateSnapshotRequest, context: grpc.ServicerContext
    ) -> spb.UpdateSnapshotResponse:
        check_id(request.snapshot_id, "snapshot_id")
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

    @guard
    def DeleteSnapshot(
        self, request: spb.DeleteSnapshotRequest, context: grpc.ServicerContext
    ) -> spb.DeleteSnapshotResponse:
        check_id(request.snapshot_id, "snapshot_id")
        self.store.delete(request.snapshot_id)
        self._snapshot_sizes()
        return spb.DeleteSnapshotResponse()

    def _snapshot_sizes(self) -> None:
        nodes, pods = self.store.sizes()
        self.metrics.snapshot_sizes(len(self.store), nodes, pods)

    # ------------------------------------------------------------------------- placement

    @guard
    def PlaceJob(
        self, request: spb.PlaceJobRequest, context: grpc.ServicerContext
    ) -> spb.PlaceJobResponse:
        answer = self._solve(request, context)
        return spb.PlaceJobResponse(
            decision=self._decision(answer),
            placed=_placed(answer),
            generation=answer.generation,
        )

    @guard
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

    @guard
    def Enqueue(
        self, request: spb.EnqueueRequest, context: grpc.ServicerContext
    ) -> spb.EnqueueResponse:
        answer = self._solve(request, context, moving=False)
        admissions = []
        for gid, outcome in sorted(answer.decision.podgroups.items()):
            if answer.gangs is not None and gid not in answer.gangs:
                continue
            reason = "" if outcome.enqueued else outcome.reason
            admissions.append(spb.Admission(gang=gid, admitted=outcome.enqueued, reason=reason))
        return spb.EnqueueResponse(admissions=admissions, generation=answer.generation)

    @guard
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

    @guard
    def PlanCapacity(
        self, request: spb.PlanCapacityRequest, context: grpc.ServicerContext
    ) -> spb.PlanCapacityResponse:
        """Capacity planning (`solver.plan`); the deadline less the margin is the time limit."""
        snapshot = (
            Snapshot.build((), schema=SCHEMA)
            if request.WhichOneof("cluster_source") is None
            else self._cluster(request)[0]
        )
        budget = self._call_budget(context, "plan")
        check_search_options(request.options)
        workers = request.options.workers or self.settings.solver_workers or 1
        seed = request.options.seed or self.settings.seed
        return plan_capacity(snapshot, request, budget, workers, seed)

    @guard
    def Defragment(
        self, request: spb.DefragmentRequest, context: grpc.ServicerContext
    ) -> spb.DefragmentResponse:
        """A migration plan (`solver.defrag`): the deadline less the margin is its time
        limit; a cancelled call or the drain's end stops CP-SAT with its best plan."""
        goal = goal_from_proto(request.goal)
        check_search_options(request.options)
        engine = request.options.engine or "auto"
        if engine not in DEFRAG_ENGINES:
            message = f"unknown engine {engine!r} (available: {', '.join(DEFRAG_ENGINES)})"
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, message, [("options.engine", message)])
        snapshot, generation = self._cluster(request)
        budget = self._call_budget(context, "plan")
        text = request.options.scheduler_conf
        conf = conf_from_text_cached(text) if text else self.default_conf
        with self._stoppable(context) as stop:
            plan = defragment(
                snapshot, goal, engine=engine, time_limit=budget,
                workers=request.options.workers or self.settings.solver_workers or 1,
                seed=request.options.seed or self.settings.seed, stop=stop, conf=conf,
            )  # fmt: skip
        return plan_to_proto(plan, generation)

    @guard
    def Why(self, request: spb.WhyRequest, context: grpc.ServicerContext) -> spb.WhyResponse:
        """The cycle PlaceJob runs, then the asked gang's certificate, changes and start
        estimate (`server.why`) within what is left of the deadline."""
        if not request.gang or "/" not in request.gang:
            message = "required: the gang as namespace/name (a pod's key for a pod alone)"
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, message, [("gang", message)])
        started = time.perf_counter()
        clock(request)  # a bad `now`, runtime or catalogue is refused before any work
        catalog = catalog_of(request.node_types) if request.node_types else None
        answer = self._solve(request, context)
        snapshot, _ = self._cluster(request)
        if (
            request.gang not in answer.decision.podgroups
            and request.gang not in answer.decision.placements
        ):
            message = f"no gang or pending pod {request.gang[:64]!r} in the call"
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, message, [("gang", message)])
        budget = self._call_budget(context)
        conf = (
            conf_from_text_cached(request.options.scheduler_conf)
            if request.options.scheduler_conf
            else None
        ) or self.default_conf
        with self._stoppable(context) as stop:
            _, response = why_answer(
                snapshot,
                request,
                answer.decision,
                conf,
                started + max(0.05, budget),
                stop,
                catalog=catalog,
            )
        response.decision.CopyFrom(self._decision(answer))
        response.generation = answer.generation
        return response

    # ------------------------------------------------------------------------- the pipeline

    @contextlib.contextmanager
    def _stoppable(self, context: grpc.ServicerContext) -> Iterator[threading.Event]:
        """An event set when the RPC ends for any reason (a cancelled or disconnected call
        stops its solver — CP-SAT's stop_search — instead of running out its budget) or when
        the drain ends (its best answer goes out); a call no longer active is CANCELLED."""
        stop = threading.Event()
        context.add_callback(stop.set)
        self.drain.watch(stop)
        try:
            yield stop
        finally:
            self.drain.forget(stop)
        if not context.is_active():
            raise Abort(grpc.StatusCode.CANCELLED, "the client cancelled the call")

    def _call_budget(self, context: grpc.ServicerContext, work: str = "") -> float:
        """The solver's time for a call that is not a placement: the server's time limit,
        or less what the deadline leaves; with `work` named, too little is DEADLINE_EXCEEDED."""
        remaining = context.time_remaining()
        budget = self.settings.time_limit
        if remaining is not None and remaining < NO_DEADLINE:
            budget = min(budget, self.settings.budget(remaining))
            if work and budget <= 0.05:
                message = f"the deadline left no time to {work}"
                raise Abort(grpc.StatusCode.DEADLINE_EXCEEDED, message)
        return budget

    def _cluster(self, request: Any) -> tuple[Snapshot, int]:
        which = request.WhichOneof("cluster_source")
        if which == "snapshot":
            check_id(request.snapshot.id, "snapshot.id")
            stored = self.store.get(request.snapshot.id, request.snapshot.expected_generation)
            return stored.snapshot, stored.generation
        if which == "cluster":
            return snapshot_from_proto(request.cluster, "cluster", SCHEMA), 0
        raise Abort(
            grpc.StatusCode.INVALID_ARGUMENT,
            "name a snapshot or send a cluster",
            [("cluster_source", "set `snapshot` or `cluster`")],
        )

    def _solve(
        self,
        request: Any,
        context: grpc.ServicerContext,
        *,
        preempt: bool = False,
        moving: bool = True,
    ) -> _Answer:
        """The call's Decision; `moving`: consolidation when the call or conf asks for it
        (Enqueue answers admission only: moves change no queue's verdict)."""
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
        conf = conf_from_text_cached(options.scheduler_conf) if options.scheduler_conf else None
        conf = conf or self.default_conf
        engine, kwargs, notes = self._budget(
            options, context, len(workload.pods), time.perf_counter() - started
        )
        if not context.is_active():
            raise Abort(grpc.StatusCode.CANCELLED, "the client cancelled the call")
        if preempt:
            kwargs["preempt"] = True
        with self._stoppable(context) as kwargs["stop"]:
            if moving and consolidation_wanted(conf, options.consolidate):
                decision = schedule_moving(
                    snapshot,
                    conf,
                    workload=workload,
                    engine=engine,
                    schedule_fn=self.schedule_fn,
                    **kwargs,
                )
            else:
                decision = self.schedule_fn(
                    snapshot, conf, workload=workload, engine=engine, **kwargs
                )
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
        check_search_options(options)
        engine = options.engine or self.settings.engine
        if engine not in ENGINES:
            message = f"unknown engine {engine!r} (available: {', '.join(sorted(ENGINES))})"
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, message, [("options.engine", message)])
        remaining = context.time_remaining()
        if remaining is None or remaining > NO_DEADLINE:
            budget = self.settings.time_limit
        else:
            budget = self.settings.budget(remaining, pods)
            floor = self.settings.answer_floor(decoded, pods)
            if remaining < floor:
                # compiling, verifying and encoding this many pods would outlast the
                # deadline: refused at once, with why, rather than cut off by it
                raise Abort(
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
