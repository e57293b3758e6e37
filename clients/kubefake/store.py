"""The fake API server's storage: objects by resource, one resourceVersion counter, the
event history watches resume from, and the faults tests inject.

Semantics kept from the real API server (k8s.io/apiserver, pkg/registry/core/pod):
- one cluster-wide, increasing resourceVersion; every write bumps it; list answers carry it;
- a watch from resourceVersion R replays every event after R, then follows; a watch from a
  version older than the retained history gets an ERROR event with a `410 Gone` Status;
- `pods/binding`: `404` for a missing pod; `409` when the pod already has `spec.nodeName`
  or is terminating (`deletionTimestamp` set); a node that does not exist is NOT checked
  (the real registry does not either; PodGC later removes such pods);
- writes that carry `metadata.resourceVersion` fail with `409` unless it is the current one
  (optimistic concurrency);
- status patches change only `status` (conditions merged by `type`, as the strategic merge
  patch of PodStatus does);
- `pods/eviction`: `429` when a PodDisruptionBudget selecting the pod allows no disruption,
  else the budget is spent and the pod deleted gracefully (terminating for
  `termination_seconds`, the kubelet's part).

A stored object is never changed in place: every write stores a new dict (a patch or a
bind copies first), so reads hand out the stored dicts themselves; callers must not
mutate what they get.
"""

from __future__ import annotations

import contextlib
import copy
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from clients.scheduler.kinds import Kind
from clients.scheduler.kube import now_rfc3339

__all__ = ["ApiError", "Faults", "Resource", "Store"]

Obj = dict[str, Any]


class ApiError(Exception):
    """A Kubernetes `Status` failure: code, reason (`NotFound`, `Conflict`, ...), message."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message

    def status(self) -> Obj:
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }


@dataclass(frozen=True)
class Resource:
    """One served resource: a Kind at one version."""

    kind: Kind
    version: str

    @property
    def api_version(self) -> str:
        return self.kind.api_version(self.version)


@dataclass
class Faults:
    """What the next requests suffer: `fail` maps `[METHOD ]path-substring` to [status code,
    count] of requests to fail; `latency` is added to every request and `slow` to those
    whose path holds its key; `watch_generation` bumps drop every open watch stream."""

    fail: dict[str, list[int]] = field(default_factory=dict)
    latency: float = 0.0
    slow: dict[str, float] = field(default_factory=dict)  # path substring -> extra seconds
    watch_generation: int = 0

    def take(self, method: str, path: str) -> int | None:
        for pattern, slot in self.fail.items():
            want_method, _, fragment = pattern.rpartition(" ")
            if slot[1] > 0 and fragment in path and (not want_method or want_method == method):
                slot[1] -= 1
                return slot[0]
        return None


class Store:
    """Objects of every served resource, with history for watches."""

    def __init__(self, resources: list[Resource], history: int = 200_000) -> None:
        self.resources = {(r.kind.group, r.kind.plural): r for r in resources}
        self.objects: dict[tuple[str, str], dict[tuple[str, str], Obj]] = {
            key: {} for key in self.resources
        }
        self.rv = 1
        self.history: deque[tuple[int, tuple[str, str], str, Obj]] = deque(maxlen=history)
        self.oldest = 1  # watches from before this are 410 Gone
        lock = threading.Lock()
        self.cond = threading.Condition(lock)  # `with store.cond:` holds the store's lock
        # one condition per resource on the same lock: a write wakes that resource's watches
        self.watchers = {key: threading.Condition(lock) for key in self.resources}
        self.faults = Faults()
        self.counts: dict[str, int] = {}  # requests by verb (the tests read them)
        # requests as RBAC sees them: (user agent, verb, group, resource[/subresource]) -> count
        self.audit: dict[tuple[str, str, str, str], int] = {}
        self.binds: list[tuple[str, str, int, float]] = []  # (ns/pod, node, code, time.time())
        self.created_at: dict[str, float] = {}  # ns/pod -> time.time() of its creation
        # an evicted pod terminates this long (deletionTimestamp set) before it is gone: the
        # kubelet's part, which the fake plays; 0 deletes it at once
        self.termination_seconds = 0.0
        self.evictions: list[tuple[str, int, float]] = []  # (ns/pod, code, time.time())
        self.deleted_at: dict[str, float] = {}  # ns/pod -> time.time() it was gone

    # -------------------------------------------------------------------- internals

    def _emit(self, res: tuple[str, str], kind: str, obj: Obj) -> None:
        if len(self.history) == self.history.maxlen:
            self.oldest = self.history[0][0] + 1
        self.history.append((self.rv, res, kind, obj))
        self.watchers[res].notify_all()

    def _bump(self, obj: Obj) -> None:
        self.rv += 1
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.rv)

    def resource(self, group: str, plural: str) -> Resource:
        try:
            return self.resources[(group, plural)]
        except KeyError:
            raise ApiError(404, "NotFound", f"the server could not find {plural}") from None

    def compact(self) -> None:
        """Forget the history (as etcd compaction does): older watches get 410 Gone."""
        with self.cond:
            self.history.clear()
            self.oldest = self.rv + 1

    def drop_watches(self) -> None:
        with self.cond:
            self.faults.watch_generation += 1
            for watchers in self.watchers.values():
                watchers.notify_all()

    # -------------------------------------------------------------------- verbs

    def list_objects(self, group: str, plural: str, namespace: str | None) -> tuple[list[Obj], int]:
        self.resource(group, plural)
        with self.cond:
            items = [
                o
                for (ns, _), o in self.objects[(group, plural)].items()
                if namespace is None or ns == namespace
            ]
            return items, self.rv

    def get(self, group: str, plural: str, namespace: str, name: str) -> Obj:
        with self.cond:
            return self._current(group, plural, namespace, name)

    def create(self, group: str, plural: str, namespace: str, obj: Obj) -> Obj:
        res = self.resource(group, plural)
        meta = obj.setdefault("metadata", {})
        name = meta.get("name") or ""
        if not name and meta.get("generateName"):
            name = meta["generateName"] + uuid.uuid4().hex[:5]
            meta["name"] = name
        if not name:
            raise ApiError(422, "Invalid", "metadata.name: Required value: name is required")
        if res.kind.namespaced:
            meta["namespace"] = namespace
        obj.setdefault("apiVersion", res.api_version)
        obj.setdefault("kind", res.kind.kind)
        with self.cond:
            objects = self.objects[(group, plural)]
            key = (namespace if res.kind.namespaced else "", name)
            if key in objects:
                raise ApiError(409, "AlreadyExists", f'{plural} "{name}" already exists')
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", now_rfc3339())
            self._bump(obj)
            objects[key] = obj
            if plural == "pods" and not group:
                self.created_at[f"{namespace}/{name}"] = time.time()
            self._emit((group, plural), "ADDED", obj)
            return obj

    def update(self, group: str, plural: str, namespace: str, name: str, obj: Obj) -> Obj:
        """Replace (PUT); a stale metadata.resourceVersion is a 409 Conflict."""
        with self.cond:
            current = self._current(group, plural, namespace, name)
            self._check_version(obj, current, plural, name)
            obj.setdefault("metadata", {}).update(
                {
                    k: current["metadata"][k]
                    for k in ("uid", "creationTimestamp", "namespace")
                    if k in current["metadata"]
                }
            )
            obj.setdefault("apiVersion", current.get("apiVersion"))
            obj.setdefault("kind", current.get("kind"))
            return self._replace(group, plural, namespace, name, obj)

    def patch(
        self, group: str, plural: str, namespace: str, name: str, patch: Obj, *, status: bool
    ) -> Obj:
        """A merge patch (of `status` only on the status subresource); `conditions` lists are
        merged by `type` as PodStatus' strategic merge patch does."""
        with self.cond:
            current = self._current(group, plural, namespace, name)
            self._check_version(patch, current, plural, name)
            merged = copy.deepcopy(current)
            if status:
                patch = {"status": patch.get("status") or {}}
            _merge(merged, patch)
            return self._replace(group, plural, namespace, name, merged)

    def delete(self, group: str, plural: str, namespace: str, name: str) -> Obj:
        with self.cond:
            return self._delete(group, plural, namespace, name)

    def _delete(self, group: str, plural: str, namespace: str, name: str) -> Obj:
        """(with `cond` held)"""
        current = self._current(group, plural, namespace, name)
        key = (namespace if self.resource(group, plural).kind.namespaced else "", name)
        del self.objects[(group, plural)][key]
        if plural == "pods" and not group:
            self.deleted_at[f"{namespace}/{name}"] = time.time()
        current = {**current, "metadata": dict(current["metadata"])}
        self._bump(current)
        self._emit((group, plural), "DELETED", current)
        return current

    def evict(self, namespace: str, name: str) -> None:
        """POST pods/NAME/eviction (policy/v1): `429` when a PodDisruptionBudget of the
        pod's namespace selecting it (`spec.selector.matchLabels`) allows no disruption now
        (its `status.disruptionsAllowed`: the fake runs no disruption controller, so the
        test sets it), else every such budget is spent by one and the pod deleted
        gracefully, as the eviction API does. A pod already terminating is accepted."""
        try:
            self._evict(namespace, name)
        except ApiError as err:
            self.evictions.append((f"{namespace}/{name}", err.code, time.time()))
            raise
        self.evictions.append((f"{namespace}/{name}", 201, time.time()))

    def _evict(self, namespace: str, name: str) -> None:
        with self.cond:
            pod = self._current("", "pods", namespace, name)
            if (pod.get("metadata") or {}).get("deletionTimestamp"):
                return
            labels = (pod.get("metadata") or {}).get("labels") or {}
            budgets = [
                b
                for (ns, _), b in self.objects.get(("policy", "poddisruptionbudgets"), {}).items()
                if ns == namespace and _selects(b, labels)
            ]
            for b in budgets:
                if int((b.get("status") or {}).get("disruptionsAllowed") or 0) <= 0:
                    raise ApiError(
                        429,
                        "TooManyRequests",
                        "Cannot evict pod as it would violate the pod's disruption budget.",
                    )
            for b in budgets:
                spent = copy.deepcopy(b)
                spent["status"]["disruptionsAllowed"] -= 1
                self._replace(
                    "policy", "poddisruptionbudgets", namespace, b["metadata"]["name"], spent
                )
            if self.termination_seconds <= 0:
                self._delete("", "pods", namespace, name)
                return
            terminating = copy.deepcopy(pod)
            terminating["metadata"]["deletionTimestamp"] = now_rfc3339()
            self._replace("", "pods", namespace, name, terminating)
        timer = threading.Timer(self.termination_seconds, self._gone, (namespace, name))
        timer.daemon = True
        timer.start()

    def _gone(self, namespace: str, name: str) -> None:
        with contextlib.suppress(ApiError):  # deleted meanwhile
            self.delete("", "pods", namespace, name)

    def bind(self, namespace: str, name: str, node: str) -> None:
        """POST pods/NAME/binding, with the pod registry's checks."""
        try:
            self._bind(namespace, name, node)
        except ApiError as err:
            self.binds.append((f"{namespace}/{name}", node, err.code, time.time()))
            raise
        self.binds.append((f"{namespace}/{name}", node, 201, time.time()))

    def _bind(self, namespace: str, name: str, node: str) -> None:
        with self.cond:
            pod = self._current("", "pods", namespace, name)
            if pod.get("metadata", {}).get("deletionTimestamp"):
                raise ApiError(
                    409, "Conflict", f"pod {name} is being deleted, cannot be assigned to a host"
                )
            assigned = pod.get("spec", {}).get("nodeName")
            if assigned:
                raise ApiError(
                    409, "Conflict", f'pod {name} is already assigned to node "{assigned}"'
                )
            pod = copy.deepcopy(pod)
            pod.setdefault("spec", {})["nodeName"] = node
            conditions = pod.setdefault("status", {}).setdefault("conditions", [])
            conditions[:] = [c for c in conditions if c.get("type") != "PodScheduled"]
            conditions.append({"type": "PodScheduled", "status": "True"})
            self._replace("", "pods", namespace, name, pod)

    # -------------------------------------------------------------------- helpers

    def _current(self, group: str, plural: str, namespace: str, name: str) -> Obj:
        res = self.resource(group, plural)
        key = (namespace if res.kind.namespaced else "", name)
        obj = self.objects[(group, plural)].get(key)
        if obj is None:
            raise ApiError(404, "NotFound", f'{plural} "{name}" not found')
        return obj

    @staticmethod
    def _check_version(new: Obj, current: Obj, plural: str, name: str) -> None:
        want = (new.get("metadata") or {}).get("resourceVersion")
        if want and want != current["metadata"]["resourceVersion"]:
            raise ApiError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on {plural} "{name}": the object has been '
                "modified; please apply your changes to the latest version and try again",
            )

    def _replace(self, group: str, plural: str, namespace: str, name: str, obj: Obj) -> Obj:
        key = (namespace if self.resource(group, plural).kind.namespaced else "", name)
        self._bump(obj)
        self.objects[(group, plural)][key] = obj
        self._emit((group, plural), "MODIFIED", obj)
        return obj

    def events_after(
        self, res: tuple[str, str], rv: int, namespace: str | None
    ) -> list[tuple[int, str, Obj]]:
        """History after `rv` for one resource (call with `cond` held)."""
        out = []
        for version, r, kind, obj in reversed(self.history):
            if version <= rv:
                break
            if r == res and (namespace is None or obj["metadata"].get("namespace") == namespace):
                out.append((version, kind, obj))
        out.reverse()
        return out

    def wait(self, res: tuple[str, str], timeout: float) -> None:
        """Until a write to `res` (or a dropped watch), at most `timeout` (lock held)."""
        self.watchers[res].wait(timeout)

    def sleep_latency(self, path: str) -> None:
        delay = self.faults.latency + sum(s for k, s in self.faults.slow.items() if k in path)
        if delay:
            time.sleep(delay)


def _merge(into: Obj, patch: Obj) -> None:
    """RFC 7386 merge patch, except `conditions` lists merge by `type`."""
    for key, value in patch.items():
        if value is None:
            into.pop(key, None)
        elif key == "conditions" and isinstance(value, list):
            existing = {c.get("type"): c for c in into.get(key) or [] if isinstance(c, dict)}
            for c in value:
                if isinstance(c, dict):
                    existing[c.get("type")] = {**existing.get(c.get("type"), {}), **c}
            into[key] = list(existing.values())
        elif isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = copy.deepcopy(value)


def _selects(budget: Obj, labels: Obj) -> bool:
    """A PodDisruptionBudget's `matchLabels` selector (an empty one selects every pod, as
    policy/v1 has it); `matchExpressions` are not implemented."""
    selector = (budget.get("spec") or {}).get("selector") or {}
    wanted = selector.get("matchLabels") or {}
    return all(labels.get(k) == v for k, v in wanted.items())
