"""Carry out a preemption plan (`--preempt`): the Decision's victims of one preemptor gang
are evicted, then its members nominated; they are bound by a later cycle, once the victims
are gone (kube-scheduler's preemption, with evictions instead of deletes).

For each victim, in the Decision's order and one at a time:

1. its status gets the Decision's `DisruptionTarget` condition (reason
   `PreemptionByScheduler`, as kube-scheduler writes it before it deletes a victim);
2. it is evicted through the `pods/eviction` subresource (policy/v1), never deleted, so
   PodDisruptionBudgets are honoured: a `429` means a budget refuses, and the plan has
   failed — no further victim of it is evicted, nobody is nominated, and the refused pod is
   *protected* (not proposed as a victim again) for `PROTECT_SECONDS`, so the next cycle
   plans around it. A victim already gone (`404`) counts as evicted.

When every victim is evicted, each member's `status.nominatedNodeName` is set. The evicted
pods are assumed terminating in the mirror at once (the watch confirms it), so the next
cycle neither proposes them again nor places anything in their room before they are gone:
terminating pods keep their capacity, as kube-scheduler counts them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from clients.scheduler.kube import MERGE_PATCH, STRATEGIC_PATCH, ApiException, KubeApi, now_rfc3339
from clients.scheduler.leader import Gate
from clients.scheduler.mirror import Mirror, ObjKey
from gangplan.v1 import placement_service_pb2 as spb

__all__ = ["PROTECT_SECONDS", "Evictor", "Plan", "PlanResult", "plans_of"]

PROTECT_SECONDS = 60.0  # a pod a PodDisruptionBudget kept is not a victim for this long
KEPT_FINISHED = 10_000  # gangs whose last plan's end is remembered (to drop stale plans)
REASON = "PreemptionByScheduler"  # the DisruptionTarget reason kube-scheduler writes


@dataclass(frozen=True)
class Plan:
    gang: str
    victims: list[tuple[ObjKey, str]]  # (pod, its DisruptionTarget message), in order
    nominated: list[tuple[ObjKey, str]]  # (preemptor pod, node)


@dataclass
class PlanResult:
    plan: Plan
    evicted: list[ObjKey] = field(default_factory=list)
    refused: ObjKey | None = None  # the victim a PodDisruptionBudget kept (429)
    failed: str = ""  # another error that stopped the plan
    nominated: bool = False


class Evictor:
    def __init__(self, api: KubeApi, mirror: Mirror, gate: Gate, workers: int = 4) -> None:
        self.api = api
        self.mirror = mirror
        self.gate = gate
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="evict")
        self.lock = threading.Lock()
        self.in_flight: set[str] = set()  # gangs whose plan is being carried out
        self._finished: dict[str, int] = {}  # gang -> mirror generation its last plan ended at
        self._protected: dict[ObjKey, float] = {}  # pod -> until (monotonic)

    def close(self) -> None:
        self.pool.shutdown(wait=True)

    def busy(self, gang: str, seen: int) -> bool:
        """A plan of this gang is under way, or one ended after the mirror generation
        `seen` the new plan was decided from (that plan did not know of the evictions)."""
        with self.lock:
            return gang in self.in_flight or self._finished.get(gang, -1) > seen

    def protected(self) -> set[ObjKey]:
        """Pods not to be proposed as victims now; the ones whose time ran out are sent to
        the snapshot again (without the protection)."""
        now = time.monotonic()
        with self.lock:
            expired = [k for k, until in self._protected.items() if until <= now]
            for k in expired:
                del self._protected[k]
            kept = set(self._protected)
        if expired:
            self.mirror.touch(expired)
        return kept

    def submit(self, plan: Plan, done: Callable[[PlanResult], None]) -> None:
        with self.lock:
            if plan.gang in self.in_flight:
                return
            self.in_flight.add(plan.gang)
        self.pool.submit(self._run, plan, done)

    def _run(self, plan: Plan, done: Callable[[PlanResult], None]) -> None:
        result = PlanResult(plan)
        try:
            self._carry_out(result)
        finally:
            with self.lock:
                self.in_flight.discard(plan.gang)
                self._finished.pop(plan.gang, None)
                self._finished[plan.gang] = self.mirror.generation
                if len(self._finished) > KEPT_FINISHED:  # the oldest are long decided again
                    del self._finished[next(iter(self._finished))]
            done(result)

    def _carry_out(self, result: PlanResult) -> None:
        for pod, message in result.plan.victims:
            if not self.gate.is_open():
                result.failed = "lost the lease"
                return
            ns, name = pod
            base = f"/api/v1/namespaces/{ns}/pods/{name}"
            condition = {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": REASON,
                "message": message,
                "lastTransitionTime": now_rfc3339(),
            }
            eviction = {
                "apiVersion": "policy/v1",
                "kind": "Eviction",
                "metadata": {"name": name, "namespace": ns},
            }
            try:
                self.api.request(
                    "PATCH",
                    f"{base}/status",
                    body={"status": {"conditions": [condition]}},
                    content_type=STRATEGIC_PATCH,
                )
                self.api.request("POST", f"{base}/eviction", body=eviction)
            except ApiException as err:
                if err.status == 404:  # gone already: its room is free
                    result.evicted.append(pod)
                    continue
                if err.status == 429:
                    result.refused = pod
                    with self.lock:
                        self._protected[pod] = time.monotonic() + PROTECT_SECONDS
                    self.mirror.touch([pod])
                else:
                    result.failed = f"http_{err.status}"
                return
            except Exception as err:  # a broken connection: the eviction may be in or not
                result.failed = type(err).__name__
                return
            result.evicted.append(pod)
            self.mirror.assume_terminating(pod, condition)
        for pod, node in result.plan.nominated:
            if not self.gate.is_open():
                result.failed = "lost the lease"
                return
            ns, name = pod
            try:
                self.api.request(
                    "PATCH",
                    f"/api/v1/namespaces/{ns}/pods/{name}/status",
                    body={"status": {"nominatedNodeName": node}},
                    content_type=MERGE_PATCH,
                )
            except Exception as err:  # the pod is gone: nothing to nominate
                result.failed = str(getattr(err, "status", "") or type(err).__name__)
                continue
            self.mirror.assume_nominated(pod, node)
        result.nominated = not result.failed


def plans_of(decision: spb.Decision, gang_of: dict[str, str]) -> dict[str, Plan]:
    """Each nominated gang's preemption plan: its members' nominated nodes, and the
    Decision's victims on those nodes (in the Decision's order)."""
    nominated: dict[str, list[tuple[ObjKey, str]]] = {}
    for p in decision.placements:
        if p.nominated_node and not p.node:
            ns, _, name = p.pod.partition("/")
            gang = gang_of.get(p.pod) or p.pod
            nominated.setdefault(gang, []).append(((ns, name), p.nominated_node))
    plans: dict[str, Plan] = {}
    taken: set[str] = set()
    for gang, members in nominated.items():
        nodes = {node for _, node in members}
        victims = []
        for v in decision.victims:
            if v.node in nodes and v.pod not in taken:
                taken.add(v.pod)
                ns, _, name = v.pod.partition("/")
                victims.append(((ns, name), v.message))
        plans[gang] = Plan(gang, victims, members)
    return plans
