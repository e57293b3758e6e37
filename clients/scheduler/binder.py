"""Bind a placed gang: annotations first, then `pods/binding` for each member, concurrently,
while the next cycle already decides (kube-scheduler's binding cycle: the pods are
*assumed* on their nodes from the moment they are placed).

A gang binds only as a whole: before any write, every member must still be pending in the
mirror and every target node still there (a node deleted between decision and bind stops
the gang: the API server would accept a binding to a missing node, and PodGC would then
delete the pod). When one bind fails (`409`: the pod is gone, already bound or terminating;
`404`: it is deleted), the members not yet started are not bound; those already bound stay
bound and count as running members next cycle, as Volcano and coscheduling count them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from clients.scheduler.kube import STRATEGIC_PATCH, ApiException, KubeApi
from clients.scheduler.leader import Gate
from clients.scheduler.mirror import Mirror, ObjKey

__all__ = ["Assignment", "BindResult", "Binder"]


@dataclass(frozen=True)
class Assignment:
    pod: ObjKey
    node: str
    annotations: dict[str, str] = field(default_factory=dict)


@dataclass
class BindResult:
    gang: str
    assignments: list[Assignment]
    bound: list[Assignment] = field(default_factory=list)
    failed: list[tuple[Assignment, str]] = field(default_factory=list)  # (what, reason)
    skipped: list[Assignment] = field(default_factory=list)
    seconds: float = 0.0


class _GangBind:
    """The binds of one gang in flight: a stop flag, the result, a countdown."""

    def __init__(self, result: BindResult, done: Callable[[BindResult], None]) -> None:
        self.result = result
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.left = len(result.assignments)
        self.done = done
        self.started = time.perf_counter()

    def finish_one(self) -> None:
        with self.lock:
            self.left -= 1
            last = self.left == 0
        if last:
            self.result.seconds = time.perf_counter() - self.started
            self.done(self.result)


class Binder:
    def __init__(
        self, api: KubeApi, mirror: Mirror, workers: int = 16, gate: Gate | None = None
    ) -> None:
        self.api = api
        self.mirror = mirror
        self.gate = gate or Gate()  # closed: this replica lost its lease, nothing is sent
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bind")
        self.inflight: set[Future[None]] = set()
        self.lock = threading.Lock()

    def close(self) -> None:
        """Finish every bind already submitted, then stop."""
        self.pool.shutdown(wait=True)

    def drain(self) -> None:
        """Wait for the binds submitted so far."""
        with self.lock:
            pending = list(self.inflight)
        for f in pending:
            f.result()

    def precheck(self, gang: list[Assignment], nodes: set[str]) -> str:
        """Why this gang must not be bound now ("" when it may)."""
        for a in gang:
            if a.node not in nodes:
                return f"node {a.node} is gone"
            pod = self.mirror.pod(a.pod)
            if pod is None:
                return f"pod {a.pod[0]}/{a.pod[1]} is gone"
            if (pod.get("spec") or {}).get("nodeName") or (pod.get("metadata") or {}).get(
                "deletionTimestamp"
            ):
                return f"pod {a.pod[0]}/{a.pod[1]} is no longer pending"
        return ""

    def submit(
        self, gang: str, assignments: list[Assignment], done: Callable[[BindResult], None]
    ) -> None:
        """Start binding a gang; `done(result)` runs (in a bind thread) once every member is
        bound, failed or skipped."""
        state = _GangBind(BindResult(gang, assignments), done)
        for a in assignments:
            future = self.pool.submit(self._one, a, state)
            with self.lock:
                self.inflight.add(future)
            future.add_done_callback(self._forget)

    def _forget(self, future: Future[None]) -> None:
        with self.lock:
            self.inflight.discard(future)

    def _one(self, a: Assignment, state: _GangBind) -> None:
        try:
            self._bind(a, state)
        finally:
            state.finish_one()

    def _bind(self, a: Assignment, state: _GangBind) -> None:
        result = state.result
        if state.stop.is_set() or not self.gate.is_open():
            with state.lock:
                result.skipped.append(a)
            return
        ns, name = a.pod
        base = f"/api/v1/namespaces/{ns}/pods/{name}"
        try:
            if a.annotations:
                patch = {"metadata": {"annotations": a.annotations}}
                self.api.request("PATCH", base, body=patch, content_type=STRATEGIC_PATCH)
            body = {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": name, "namespace": ns},
                "target": {"apiVersion": "v1", "kind": "Node", "name": a.node},
            }
            self.api.request("POST", f"{base}/binding", body=body)
        except ApiException as err:
            state.stop.set()
            with state.lock:
                result.failed.append((a, _reason(err.status)))
            return
        except Exception:  # a broken connection: the bind may or may not be in
            state.stop.set()
            with state.lock:
                result.failed.append((a, "error"))
            return
        with state.lock:
            result.bound.append(a)


def _reason(status: int | None) -> str:
    return {409: "conflict", 404: "not_found", 429: "throttled"}.get(status or 0, f"http_{status}")
