"""Say why, in the fields users read with `kubectl describe`:

- a pending pod: condition `PodScheduled=False`, reason `Unschedulable`, gangplan's message
  (as kube-scheduler writes it), and a `FailedScheduling` Warning Event;
- a bound pod: a `Scheduled` Normal Event ("Successfully assigned ns/pod to node"; the
  binding itself sets `PodScheduled=True`, which clears the old condition);
- a PodGroup (Volcano, coscheduling): its status as upstream's controllers write it
  (Volcano: `phase` and an `Unschedulable` condition with reason `NotEnoughResources`;
  scheduler-plugins: `phase` `Pending`/`Scheduled`);
- an object gangplan's reader refuses: a Warning Event on it naming the field.

Writes go through two bounded lanes, each with its own thread (reasons; `Scheduled` Events), so a
slow API server never holds a cycle; a message is written again only when it changes or a
minute has passed (events are rate-limited per object, as client-go's event correlator
does), and a full lane drops (counted in `gangplan_scheduler_reports_dropped_total`): past
1,000 queued Events, as client-go's broadcaster does; a dropped status write is said again
by the next cycle that has it to say.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from clients.scheduler.kinds import Kind
from clients.scheduler.kube import MERGE_PATCH, STRATEGIC_PATCH, KubeApi, now_rfc3339, path_of
from clients.scheduler.leader import Gate

__all__ = ["Reporter"]

log = logging.getLogger("gangplan.scheduler")
REPEAT_AFTER = 60.0
COMPONENT = "gangplan"
Obj = dict[str, Any]


class _Lane:
    """A bounded queue of writes and the thread that sends them."""

    def __init__(self, name: str, capacity: int, gate: Gate) -> None:
        self.gate = gate
        self.queue: queue.Queue[tuple[Callable[..., None], tuple[Any, ...]] | None] = queue.Queue(
            capacity
        )
        self.thread = threading.Thread(target=self._run, name=f"report-{name}", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            item = self.queue.get()
            try:
                if item is None:
                    return
                fn, args = item
                if not self.gate.is_open():  # this replica lost its lease: not said
                    continue
                try:
                    fn(*args)
                except Exception as err:
                    log.info("report not written", extra={"error": str(err)[:200]})
            finally:
                self.queue.task_done()


class Reporter:
    """Two lanes: why things wait (pod conditions, PodGroup status, their Warning Events:
    few, and what `kubectl describe` is read for) and the `Scheduled` Events of bound pods
    (one a pod; best effort, as client-go's broadcaster drops Events past 1,000 queued).
    A write that does not fit is dropped and counted; a dropped reason is forgotten, so the
    next cycle that has it to say says it again."""

    def __init__(
        self,
        api: KubeApi,
        *,
        status_capacity: int = 10_000,
        event_capacity: int = 1_000,
        on_drop: Callable[[], None] = lambda: None,
        gate: Gate | None = None,
    ) -> None:
        self.api = api
        gate = gate or Gate()
        self.status = _Lane("status", status_capacity, gate)
        self.events = _Lane("events", event_capacity, gate)
        self.last: dict[tuple[str, ...], tuple[str, float]] = {}
        self.on_drop = on_drop

    def close(self, timeout: float = 5.0) -> None:
        """Finish what is queued (up to `timeout`), then stop."""
        deadline = time.monotonic() + timeout
        lanes = (self.status, self.events)
        for lane in lanes:
            try:
                lane.queue.put(None, timeout=max(0.01, deadline - time.monotonic()))
            except queue.Full:
                continue
        for lane in lanes:
            lane.thread.join(max(0.0, deadline - time.monotonic()))

    def drain(self) -> None:
        """Wait until every queued write is done (tests)."""
        self.status.queue.join()
        self.events.queue.join()

    def _submit(
        self,
        key: tuple[str, ...],
        message: str,
        writes: list[tuple[_Lane, Callable[..., None], tuple[Any, ...]]],
    ) -> None:
        now = time.monotonic()
        last = self.last.get(key)
        if last is not None and last[0] == message and now - last[1] < REPEAT_AFTER:
            return
        self.last[key] = (message, now)
        for lane, fn, args in writes:
            try:
                lane.queue.put_nowait((fn, args))
            except queue.Full:
                self.on_drop()
                if lane is self.status:
                    self.last.pop(key, None)  # said again next time

    def forget(self, key: tuple[str, ...]) -> None:
        self.last.pop(key, None)

    # ------------------------------------------------------------------ what is said

    def unschedulable(self, pod: Obj, message: str) -> None:
        ns, name = _ns_name(pod)
        self._submit(
            ("pod", ns, name),
            message,
            [
                (self.status, self._write_unschedulable, (pod, message)),
                (self.status, self._event, (pod, "Warning", "FailedScheduling", message)),
            ],
        )

    def scheduled(self, pod: Obj, node: str) -> None:
        """A pod is bound once: its Event needs no memory of what was said."""
        ns, name = _ns_name(pod)
        self.forget(("pod", ns, name))
        message = f"Successfully assigned {ns}/{name} to {node}"
        try:
            self.events.queue.put_nowait((self._event, (pod, "Normal", "Scheduled", message)))
        except queue.Full:
            self.on_drop()

    def gone(self, kind: str, namespace: str, name: str) -> None:
        """An object is deleted: forget what was said about it (the memory stays the size
        of what exists, not of what ever existed)."""
        self.last.pop(("pod", namespace, name), None)
        self.last.pop(("refused", kind, namespace, name), None)
        for key in [k for k in self.last if k[0] == "podgroup" and k[2:] == (namespace, name)]:
            del self.last[key]

    def refused(self, obj: Obj, message: str) -> None:
        ns, name = _ns_name(obj)
        key = ("refused", str(obj.get("kind")), ns, name)
        self._submit(
            key,
            message,
            [(self.events, self._event, (obj, "Warning", "FailedValidation", message))],
        )

    def pod_group(self, kind: Kind, version: str, obj: Obj, placed: bool, message: str) -> None:
        ns, name = _ns_name(obj)
        key = ("podgroup", kind.group, ns, name)
        writes: list[tuple[_Lane, Callable[..., None], tuple[Any, ...]]] = [
            (self.status, self._write_pod_group, (kind, version, obj, placed, message))
        ]
        if not placed:
            writes.append((self.status, self._event, (obj, "Warning", "Unschedulable", message)))
        self._submit(key, f"{placed}:{message}", writes)

    # ------------------------------------------------------------------ writes

    def _write_unschedulable(self, pod: Obj, message: str) -> None:
        ns, name = _ns_name(pod)
        patch = {
            "status": {
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": message,
                        "lastTransitionTime": now_rfc3339(),
                    }
                ]
            }
        }
        self.api.request(
            "PATCH",
            f"/api/v1/namespaces/{ns}/pods/{name}/status",
            body=patch,
            content_type=STRATEGIC_PATCH,
        )

    def _event(self, obj: Obj, kind: str, reason: str, message: str) -> None:
        ns, name = _ns_name(obj)
        meta = obj.get("metadata") or {}
        now = now_rfc3339()
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{name}.", "namespace": ns or "default"},
            "involvedObject": {
                "apiVersion": obj.get("apiVersion", "v1"),
                "kind": obj.get("kind", "Pod"),
                "namespace": ns,
                "name": name,
                "uid": meta.get("uid", ""),
            },
            "reason": reason,
            "message": message[:1024],
            "type": kind,
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "reportingInstance": COMPONENT,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        self.api.request("POST", f"/api/v1/namespaces/{ns or 'default'}/events", body=event)

    def _write_pod_group(
        self, kind: Kind, version: str, obj: Obj, placed: bool, message: str
    ) -> None:
        ns, name = _ns_name(obj)
        status: Obj
        if kind.group == "scheduling.volcano.sh":
            condition = {
                "type": "Unschedulable",
                "status": "False" if placed else "True",
                "reason": "" if placed else "NotEnoughResources",
                "message": "" if placed else message,
                "lastTransitionTime": now_rfc3339(),
                "transitionID": "",
            }
            scheduled = {
                "type": "Scheduled",
                "status": "True",
                "reason": "tasks in gang are ready to be scheduled",
                "lastTransitionTime": now_rfc3339(),
                "transitionID": "",
            }
            conditions = [condition, scheduled] if placed else [condition]
            status = {"phase": "Running" if placed else "Pending", "conditions": conditions}
        else:
            status = {"phase": "Scheduled" if placed else "Pending"}
        self.api.request(
            "PATCH",
            path_of(kind, version, ns, name) + "/status",
            body={"status": status},
            content_type=MERGE_PATCH,
        )


def _ns_name(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")
