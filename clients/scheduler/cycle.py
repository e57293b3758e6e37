"""The scheduling cycle: bring the snapshot up to date, decide, bind, say why.

One cycle:

1. **sync** — what the watches changed since the last cycle becomes one UpdateSnapshot
   delta (`translate`); the first cycle, and any cycle after the server lost the snapshot
   (NOT_FOUND) or saw another writer (FAILED_PRECONDITION), puts it whole.
2. **decide** — one PlaceJob for every pending pod of the scheduler's names (an empty job:
   the server's own pod selection), at the generation the sync returned
   (`expected_generation`; a stale generation re-syncs and asks again).
3. **bind** — each placed gang, all members or none started (`binder`); bound pods are
   assumed in the mirror and told to the snapshot as Bindings in the next sync.
4. **report** — reasons on pending pods and gang objects, Events (`report`).

`--dry-run` stops after 2: it logs each gang's decision (one JSON line, when it changes)
and keeps the latest in `shadow` (served at /debug/decisions), writing nothing.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from clients.client import Client, ClientError
from clients.scheduler.binder import Assignment, Binder, BindResult
from clients.scheduler.evict import Evictor, Plan, PlanResult, plans_of
from clients.scheduler.heap import Heap
from clients.scheduler.leader import Gate
from clients.scheduler.metrics import SchedulerMetrics
from clients.scheduler.mirror import Changes, Mirror, ObjKey
from clients.scheduler.report import Reporter
from clients.scheduler.sent import Sent, as_cluster, is_empty
from clients.scheduler.translate import translate
from gangplan.v1 import placement_service_pb2 as spb

__all__ = ["Cycle", "CycleOptions"]

NOT_PREEMPTIBLE = "scheduling.koordinator.sh/disable-preemptible"  # the reader honours it

log = logging.getLogger("gangplan.scheduler")
# PodGroup kinds whose status upstream's controllers write and gangplan writes too
STATUS_GROUPS = frozenset(
    {"scheduling.volcano.sh", "scheduling.sigs.k8s.io", "scheduling.x-k8s.io"}
)


@dataclass(frozen=True)
class CycleOptions:
    scheduler_names: frozenset[str] = frozenset({"gangplan"})
    engine: str = ""
    scheduler_conf: str = ""
    time_limit: float = 5.0
    workers: int = 1
    seed: int = 0
    dry_run: bool = False
    preempt: bool = False  # Preempt instead of PlaceJob (a conf listing preempt does too)
    snapshot_id: str = "gangplan-scheduler"
    idle_wait: float = 1.0


@dataclass
class Cycle:
    client: Client
    mirror: Mirror
    binder: Binder
    reporter: Reporter
    metrics: SchedulerMetrics
    options: CycleOptions
    versions: dict[Any, str] = field(default_factory=dict)  # Kind -> served version
    generation: int = 0
    gang_of: dict[str, str] = field(default_factory=dict)
    pending_bindings: list[spb.Binding] = field(default_factory=list)
    shadow: dict[str, dict[str, Any]] = field(default_factory=dict)
    stopping: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _last_asked: tuple[int, frozenset[ObjKey]] | None = None
    _last_version: tuple[int, int] | None = None  # (generation, mirror.pending_version) of
    #   the last pending set decided or found unchanged
    _sent: Sent = field(default_factory=lambda: Sent.empty())
    _noted: set[str] = field(default_factory=set)
    gate: Gate = field(default_factory=Gate)  # closed: a follower (keeps its snapshot warm)
    evictor: Evictor | None = None  # carries out preemption plans (victims in a Decision)
    heap: Heap = field(default_factory=Heap)  # the garbage collector, settled each cycle

    # ------------------------------------------------------------------ loop

    def run(self) -> None:
        """Cycles until `stopping` is set; the cycle in progress (its binds) finishes."""
        while not self.stopping.is_set():
            seen = self.mirror.generation
            try:
                worked = self.run_once()
            except ClientError as err:
                log.warning("cycle failed", extra={"error": str(err)[:300]})
                self.metrics.cycle_errors.labels(reason=err.code.name).inc()
                self.stopping.wait(0.5)
                continue
            except Exception:  # a fault of ours: logged, the snapshot put again, go on
                log.exception("cycle failed: internal error")
                self.metrics.cycle_errors.labels(reason="INTERNAL").inc()
                self.generation = 0
                self.stopping.wait(0.5)
                continue
            finally:
                self.heap.settle()
            if not worked:
                self.mirror.wait_for_change(seen, self.options.idle_wait)

    def run_once(self) -> bool:
        """One cycle; False when there was nothing to decide."""
        t0 = time.perf_counter()
        seen = self.mirror.generation  # what this cycle's decision knows of
        self.sync()
        t1 = time.perf_counter()
        if not self.gate.is_open():
            return False  # a follower: its snapshot is current, the leader decides
        version = (self.generation, self.mirror.pending_version)
        if version == self._last_version:
            return False  # nothing gangplan reads and no pending pod changed: as last time
        pending = self.mirror.pending(self.options.scheduler_names)
        self.metrics.pending_pods.set(len(pending))
        if not pending:
            self._last_version = version
            return False
        # The same snapshot generation and the same pending pods give the same answer (the
        # engines are deterministic): a gang that waits is decided again only when
        # something gangplan reads has changed, not on every wake-up.
        asked = (self.generation, frozenset(pending))
        if asked == self._last_asked:
            self._last_version = version
            return False
        response = self.decide()
        self._last_asked, self._last_version = asked, version
        t2 = time.perf_counter()
        if response is None:
            return True
        placed, waiting = self._gangs(response.decision)
        _without_moved_room(response.decision, placed, waiting)
        plans = plans_of(response.decision, self.gang_of)
        for gang in plans:
            waiting.pop(gang, None)  # waiting for its victims, not for room
        self.metrics.pending_gangs.set(len(waiting))
        if self.options.dry_run:
            self._shadow(response.decision, placed, waiting, plans)
        else:
            self._bind(placed)
            self._preempt(plans, seen)
        t3 = time.perf_counter()
        if not self.options.dry_run:
            self._report(response.decision, placed, waiting)
        t4 = time.perf_counter()
        for phase, seconds in (
            ("sync", t1 - t0),
            ("decide", t2 - t1),
            ("bind", t3 - t2),
            ("report", t4 - t3),
            ("total", t4 - t0),
        ):
            self.metrics.cycle_seconds.labels(phase=phase).observe(seconds)
        return bool(placed)

    # ------------------------------------------------------------------ 1. sync

    def sync(self, *, whole: bool = False) -> None:
        changes = self.mirror.take_changes() if not whole else Changes()
        if whole or self.generation == 0:
            self.mirror.take_changes()
            self.mirror.mark_all()
            changes = self.mirror.take_changes()
            whole = True
        with self._lock:
            if not changes and not self.pending_bindings:
                return
        delta = translate(self.mirror, changes, whole=whole)
        for note in delta.notes:  # what the reader skipped or ignored, said once each
            if note not in self._noted:
                self._noted.add(note)
                log.info("note", extra={"note": note})
        for r in delta.refused:
            log.warning(
                "object refused",
                extra={"object": f"{r.kind.label} {r.key[0]}/{r.key[1]}", "error": r.error},
            )
            self.metrics.refused.inc()
            if not self.options.dry_run:
                self.reporter.refused(r.obj, r.error)
        req = delta.request
        # a pending pod held back for its PodGroup leaves the snapshot if it was there, and
        # says why (as upstream says "pod group not found")
        req.remove_pods.extend(k for k in delta.held if k in self.gang_of)
        self._say_held(delta.held)
        # a pending pod now refused leaves the snapshot (it must not be placed as it was)
        req.remove_pods.extend(
            key
            for r in delta.refused
            if r.kind.kind == "Pod"
            and not (r.obj.get("spec") or {}).get("nodeName")
            and (key := f"{r.key[0] or 'default'}/{r.key[1]}") in self.gang_of
        )
        if not whole:
            self._only_known_removals(req)
        if whole:
            self.gang_of.clear()
        for k in req.remove_pods:
            self.gang_of.pop(k, None)
        for kind, gone in changes.deleted.items():
            for ns, name in gone:
                self.reporter.gone(kind.kind, ns, name)
        self.gang_of.update(delta.gang_of)
        req.snapshot_id = self.options.snapshot_id
        with self.mirror.lock:  # pods bound by us that the watch has not shown bound yet
            assumed = dict(self.mirror.assumed)
            devices = dict(self.mirror.assumed_annotations)
        protected = self.evictor.protected() if self.evictor is not None else set()
        live = set()
        for p in req.upsert_pods:
            live.add(f"{p.namespace or 'default'}/{p.name}")
            if (p.namespace, p.name) in protected:  # a PodDisruptionBudget kept it: no victim
                p.labels[NOT_PREEMPTIBLE] = "true"
            if not p.node_name and (node := assumed.get((p.namespace, p.name))):
                p.node_name = node
                p.annotations.update(devices.get((p.namespace, p.name), {}))
        with self._lock:
            bindings, self.pending_bindings = self.pending_bindings, []
        req.bindings.extend(b for b in bindings if b.pod not in live and b.pod in self.gang_of)
        try:
            if whole:
                cluster = as_cluster(req)
                answer = self.client.put_snapshot(cluster, self.options.snapshot_id)
                self.generation = answer.generation
                self._sent = Sent.of(req)
            else:
                self._sent.drop_unchanged(req)
                if is_empty(req):
                    return  # nothing gangplan reads has changed: the generation stays
                req.expected_generation = self.generation
                self.generation = self.client.update_snapshot(req).generation
                self._sent.apply(req)
        except ClientError as err:
            # whatever the snapshot holds now is unknown: the next sync puts it whole (a
            # whole put also carries every removal the lost delta had)
            self.generation = 0
            if whole:
                raise
            log.info("snapshot out of step, putting it whole", extra={"error": err.code.name})
            self.metrics.resyncs.labels(reason=err.code.name).inc()
            self.sync(whole=True)

    def _say_held(self, held: set[str]) -> None:
        if self.options.dry_run or not self.gate.is_open():
            return
        for key in held:
            ns, _, name = key.partition("/")
            pod = self.mirror.pod((ns, name)) or self.mirror.pod(("", name))
            if pod is None or (pod.get("spec") or {}).get("schedulerName") not in (
                self.options.scheduler_names
            ):
                continue
            with self.mirror.lock:
                group = self.mirror.awaited_group(pod)
            if group is not None:
                self.reporter.unschedulable(
                    pod, f"pod group {group[0]}/{group[1]} not found: waiting for it"
                )

    def _only_known_removals(self, req: spb.UpdateSnapshotRequest) -> None:
        """Removals of what the snapshot never got (an object the reader refused, then
        deleted) are dropped: the service refuses to remove what it does not have."""
        sent = self._sent
        for field_name, known in (
            ("remove_pods", self.gang_of.keys()),
            ("remove_nodes", sent.nodes),
            ("remove_gangs", sent.gangs),
            ("remove_queues", sent.queues),
        ):
            values = getattr(req, field_name)
            kept = list(dict.fromkeys(v for v in values if v in known))
            del values[:]
            values.extend(kept)

    # ------------------------------------------------------------------ 2. decide

    def decide(self) -> spb.PlaceJobResponse | spb.PreemptResponse | None:
        opts = self.options
        call = self.client.preempt if opts.preempt else self.client.place_job
        for _attempt in range(3):
            try:
                return call(
                    snapshot=opts.snapshot_id,
                    expected_generation=self.generation,
                    engine=opts.engine,
                    scheduler_conf=opts.scheduler_conf,
                    workers=opts.workers,
                    seed=opts.seed,
                    scheduler_names=sorted(opts.scheduler_names),
                    timeout=opts.time_limit + 1.0,
                )
            except ClientError as err:
                if err.code.name not in ("FAILED_PRECONDITION", "NOT_FOUND"):
                    raise
                self.metrics.resyncs.labels(reason=err.code.name).inc()
                self.sync(whole=True)
        return None

    def _gangs(self, decision: spb.Decision) -> tuple[dict[str, list[Assignment]], dict[str, str]]:
        """Placed gangs (gang id, or the pod key for a gang of one) -> assignments, and
        waiting gangs -> reason."""
        outcome = {g.gang: g for g in decision.gangs}
        placed: dict[str, list[Assignment]] = {}
        waiting: dict[str, str] = {}
        for p in decision.placements:
            gang = self.gang_of.get(p.pod) or p.pod
            o = outcome.get(gang)
            if p.node and (o is None or o.placed):
                ns, _, name = p.pod.partition("/")
                placed.setdefault(gang, []).append(
                    Assignment((ns, name), p.node, dict(p.gpu_annotations))
                )
            elif not p.node:
                waiting.setdefault(gang, (o.reason if o is not None and o.reason else p.reason))
        for gang in list(waiting):
            if gang in placed:  # optional members of a placed gang
                del waiting[gang]
        return placed, waiting

    # ------------------------------------------------------------------ 3. bind

    def _bind(self, placed: dict[str, list[Assignment]]) -> None:
        """Assume every placed gang that passes the precheck, hand it to the binder, and go
        on: the binds run while the next cycle decides."""
        nodes = self.mirror.node_names()
        accepted = []
        for name, gang in placed.items():
            why = self.binder.precheck(gang, nodes)
            if why:
                self.metrics.bind_errors.labels(reason="precheck").inc()
                log.info("gang not bound", extra={"gang": name, "reason": why})
                continue
            accepted.append((name, gang))
        assumed = [(a.pod, a.node, a.annotations) for _, gang in accepted for a in gang]
        self.mirror.assume(assumed)
        with self._lock:  # a pod with device annotations is re-sent whole instead
            self.pending_bindings.extend(
                spb.Binding(pod=f"{pod[0]}/{pod[1]}", node=node)
                for pod, node, annotations in assumed
                if not annotations
            )
        for name, gang in accepted:
            self.binder.submit(name, gang, self._bound)

    def _bound(self, result: BindResult) -> None:
        """A gang's binds are over (in a bind thread)."""
        self.metrics.bind_seconds.observe(result.seconds)
        self.metrics.pods_bound.inc(len(result.bound))
        for a in result.bound:
            pod = self.mirror.pod(a.pod)
            if pod is not None:
                self.reporter.scheduled(pod, a.node)
        undone = [a.pod for a, _ in result.failed] + [a.pod for a in result.skipped]
        for a, reason in result.failed:
            self.metrics.bind_errors.labels(reason=reason).inc()
            log.warning(
                "bind failed", extra={"gang": result.gang, "pod": "/".join(a.pod), "reason": reason}
            )
        if undone:
            log.info(
                "gang bound in part; the rest goes to the next cycle",
                extra={
                    "gang": result.gang,
                    "bound": len(result.bound),
                    "of": len(result.assignments),
                },
            )
            keys = {f"{p[0]}/{p[1]}" for p in undone}
            with self._lock:
                self.pending_bindings[:] = [b for b in self.pending_bindings if b.pod not in keys]
            self.mirror.unassume(undone)

    def _preempt(self, plans: dict[str, Plan], seen: int) -> None:
        """Hand each preemption plan to the evictor: one at a time per gang, and not one
        decided before the gang's last plan ended (`seen`: the mirror's generation then)."""
        if self.evictor is None:
            return
        for gang, plan in plans.items():
            if plan.victims and not self.evictor.busy(gang, seen):
                self.evictor.submit(plan, self._evicted)

    def _evicted(self, result: PlanResult) -> None:
        self.metrics.evictions.labels(result="evicted").inc(len(result.evicted))
        if result.refused is not None:
            self.metrics.evictions.labels(result="refused").inc()
            log.info(
                "preemption plan refused by a PodDisruptionBudget",
                extra={"gang": result.plan.gang, "pod": "/".join(result.refused)},
            )
        elif result.failed:
            self.metrics.evictions.labels(result="failed").inc()
            log.warning(
                "preemption plan stopped", extra={"gang": result.plan.gang, "error": result.failed}
            )

    # ------------------------------------------------------------------ 4. report

    def _report(
        self, decision: spb.Decision, placed: dict[str, list[Assignment]], waiting: dict[str, str]
    ) -> None:
        for p in decision.placements:
            gang = self.gang_of.get(p.pod) or p.pod
            if gang not in waiting:  # a pod with a node waits too when its room needs moves
                continue
            ns, _, name = p.pod.partition("/")
            pod = self.mirror.pod((ns, name))
            if pod is not None:
                self.reporter.unschedulable(pod, waiting[gang] or p.reason)
        outcomes = [(g, True, "") for g in placed] + [(g, False, w) for g, w in waiting.items()]
        with self.mirror.lock:
            groups = [
                (kind, objs)
                for kind, objs in self.mirror.of_kind("PodGroup")
                if kind.group in STATUS_GROUPS
            ]
            found = []
            for gid, ok, why in outcomes:
                ns, _, name = gid.partition("/")
                for kind, objs in groups:
                    obj = objs.get((ns, name)) or (
                        objs.get(("", name)) if ns == "default" else None
                    )
                    if obj is not None:
                        found.append((kind, obj, ok, why))
        for kind, obj, ok, why in found:
            version = self.versions.get(kind, kind.versions[0])
            self.reporter.pod_group(kind, version, obj, ok, why)

    def _shadow(
        self,
        decision: spb.Decision,
        placed: dict[str, list[Assignment]],
        waiting: dict[str, str],
        plans: dict[str, Plan],
    ) -> None:
        for gang, plan in plans.items():
            entry = {
                "gang": gang,
                "placed": False,
                "nominated": {f"{p[0]}/{p[1]}": node for p, node in plan.nominated},
                "evict": [f"{p[0]}/{p[1]}" for p, _ in plan.victims],
            }
            self._shadow_entry(gang, entry)
        for gang, assignments in placed.items():
            entry = {
                "gang": gang,
                "placed": True,
                "pods": {f"{a.pod[0]}/{a.pod[1]}": a.node for a in assignments},
            }
            self._shadow_entry(gang, entry)
        for gang, reason in waiting.items():
            self._shadow_entry(gang, {"gang": gang, "placed": False, "reason": reason})
        for gang in self.shadow.keys() - placed.keys() - waiting.keys() - plans.keys():
            del self.shadow[gang]  # no longer pending (bound by the real scheduler, deleted)

    def _shadow_entry(self, gang: str, entry: dict[str, Any]) -> None:
        if self.shadow.get(gang) != entry:
            self.shadow[gang] = entry
            log.info(
                "would place"
                if entry["placed"]
                else ("would evict" if "evict" in entry else "would wait"),
                extra={"decision": json.dumps(entry, sort_keys=True)},
            )


MOVES_NOT_MADE = (
    "its room comes from moving running pods (consolidation), which gangplan scheduler does "
    "not make yet; it waits"
)


def _without_moved_room(
    decision: spb.Decision, placed: dict[str, list[Assignment]], waiting: dict[str, str]
) -> None:
    """A gang placed on a node the answer's moves vacate waits (the conf lists the
    `consolidation` action): the front end makes no moves, and binding it would overfill
    the node. Gangs elsewhere do not need the moves (they only add load to other nodes)."""
    vacated = {m.from_node for m in decision.moves}
    if not vacated:
        return
    for gang in [g for g, pods in placed.items() if any(a.node in vacated for a in pods)]:
        del placed[gang]
        waiting[gang] = MOVES_NOT_MADE
