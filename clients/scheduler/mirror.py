"""The front end's copy of the cluster: what the watches delivered, and what changed since
the snapshot was last brought up to date.

The reflectors write into it (`replace` after a list, `apply` per watch event); the cycle
takes a `Changes` (what changed, cleared as it is taken), turns it into one UpdateSnapshot
delta (`clients.scheduler.translate`), and reads pending pods, nodes and gang members from
it. Pods the cycle bound are *assumed* (kube-scheduler's word) until the watch shows their
`spec.nodeName`, so a pod is never offered for placement twice.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from clients.scheduler.kinds import KINDS, Kind
from solver.kube.gangs import (
    ANNOTATION_VOLCANO_GROUP,
    GANG_ANNOTATIONS,
    GODEL_GROUP,
    LABEL_LIGHTWEIGHT_NAME,
    LABEL_POD_GROUP,
    LABEL_POD_GROUP_X,
)

__all__ = ["Changes", "Mirror", "ObjKey", "gang_hint", "key_of"]

Obj = dict[str, Any]
ObjKey = tuple[str, str]  # (namespace or "", name)
GANG_KINDS = frozenset({"PodGroup"})
_LABEL_LINKS = (LABEL_POD_GROUP, LABEL_POD_GROUP_X, LABEL_LIGHTWEIGHT_NAME, GODEL_GROUP)
_ANNOTATION_LINKS = (GANG_ANNOTATIONS.NAME, ANNOTATION_VOLCANO_GROUP, GODEL_GROUP)


def key_of(obj: Obj) -> ObjKey:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def gang_hint(pod: Obj) -> ObjKey | None:
    """The (namespace, name) of the gang a pod names, by any of the links gangplan's reader
    follows (`solver.kube.gangs`); None for a gang of one. Only used to pick which objects
    are read together: the reader itself decides the link."""
    meta = pod.get("metadata") or {}
    ns = str(meta.get("namespace") or "default")
    group = (pod.get("spec") or {}).get("schedulingGroup") or {}
    if isinstance(group, dict) and group.get("podGroupName"):
        return (ns, str(group["podGroupName"]))
    labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
    for source, keys in ((labels, _LABEL_LINKS), (annotations, _ANNOTATION_LINKS)):
        if isinstance(source, dict):
            for k in keys:
                if source.get(k):
                    return (ns, str(source[k]))
    return None


# the links that name a PodGroup object, and the API groups serving such objects
_OBJECT_LINKS = (
    ("label", LABEL_POD_GROUP, ("scheduling.sigs.k8s.io",)),
    ("label", LABEL_POD_GROUP_X, ("scheduling.x-k8s.io",)),
    ("annotation", ANNOTATION_VOLCANO_GROUP, ("scheduling.volcano.sh",)),
    ("label", GODEL_GROUP, ("scheduling.godel.kubewharf.io",)),
    ("annotation", GODEL_GROUP, ("scheduling.godel.kubewharf.io",)),
)


@dataclass
class Changes:
    """What changed since the last delta, by kind label."""

    upserted: dict[Kind, set[ObjKey]] = field(default_factory=dict)
    deleted: dict[Kind, dict[ObjKey, Obj]] = field(default_factory=dict)
    # gang objects of `upserted` whose only change is their status phase: the object is
    # read again, its pods are not (a phase imposes nothing on them)
    phase_only: set[tuple[Kind, ObjKey]] = field(default_factory=set)

    def touched(self, kinds: Iterable[str]) -> bool:
        wanted = set(kinds)
        return any(k.kind in wanted for k in (*self.upserted, *self.deleted))

    def __bool__(self) -> bool:
        return bool(self.upserted or self.deleted)


class Mirror:
    """Objects by kind, kept by the reflectors; thread-safe."""

    def __init__(self, kinds: Iterable[Kind] = KINDS) -> None:
        self.kinds = tuple(kinds)
        self.pod_kind = next((k for k in self.kinds if k.kind == "Pod"), None)
        self.objects: dict[Kind, dict[ObjKey, Obj]] = {k: {} for k in self.kinds}
        self.synced: set[Kind] = set()
        self.lock = threading.Condition()
        self.changes = Changes()
        self.assumed: dict[ObjKey, str] = {}  # pod -> node, bound by us, not yet seen bound
        self.assumed_annotations: dict[ObjKey, dict[str, str]] = {}  # their device annotations
        self.hints: dict[ObjKey, set[ObjKey]] = {}  # gang hint -> pods naming it
        self.unbound: dict[str, set[ObjKey]] = {}  # scheduler name -> pods waiting
        self.gang_objects: set[ObjKey] = set()  # (namespace, name) of every PodGroup
        self.generation = 0  # bumped by every write (the cycle waits for it to move)
        self.pending_version = 0  # bumped when the set `pending` lists changes: a wake-up
        #   that changed none of it is told apart without listing them (O(1), not O(backlog))

    # ------------------------------------------------------------------ reflector side

    def replace(self, kind: Kind, items: list[Obj]) -> None:
        """A fresh list: objects gone from it are deleted, changed ones upserted."""
        with self.lock:
            old = self.objects[kind]
            new = {key_of(o): o for o in items}
            for key in old.keys() - new.keys():
                self._delete(kind, key)
            for key, obj in new.items():
                before = old.get(key)
                if before is None or _rv(before) != _rv(obj):
                    self._upsert(kind, key, obj)
            self.synced.add(kind)
            self._bump()

    def apply(self, kind: Kind, event: str, obj: Obj) -> None:
        with self.lock:
            key = key_of(obj)
            if event == "DELETED":
                self._delete(kind, key)
            else:
                self._upsert(kind, key, obj)
            self._bump()

    def _bump(self) -> None:
        self.generation += 1
        self.lock.notify_all()

    def _upsert(self, kind: Kind, key: ObjKey, obj: Obj) -> None:
        objects = self.objects[kind]
        if kind.kind == "PodGroup":
            self.gang_objects.add((key[0] or "default", key[1]))
            before = objects.get(key)
            objects[key] = obj
            if before is not None and _group_facts(before) == _group_facts(obj):
                if _phase(before) == _phase(obj):
                    return  # a condition or a count in its status: nothing gangplan reads
                if key not in self.changes.upserted.get(kind, ()):
                    self.changes.phase_only.add((kind, key))
            else:
                self.changes.phase_only.discard((kind, key))
            self.changes.upserted.setdefault(kind, set()).add(key)
            self.changes.deleted.get(kind, {}).pop(key, None)
            return
        if kind.kind == "Pod":
            before = objects.get(key)
            was = self._pending_now(key)
            self._index(key, obj)
            self._unhint(key, before)
            if (hint := gang_hint(obj)) is not None:
                self.hints.setdefault(hint, set()).add(key)
            node = (obj.get("spec") or {}).get("nodeName")
            assumed = self.assumed.pop(key, None) if node else None
            if node:
                self.assumed_annotations.pop(key, None)
            self._repend(key, was)
            if before is not None and _pod_facts(before, None) == _pod_facts(obj, assumed):
                # what gangplan reads is unchanged (a status condition, or the binding the
                # snapshot already has from us): nothing to send
                objects[key] = obj
                return
        objects[key] = obj
        self.changes.upserted.setdefault(kind, set()).add(key)
        self.changes.deleted.get(kind, {}).pop(key, None)

    def _delete(self, kind: Kind, key: ObjKey) -> None:
        obj = self.objects[kind].pop(key, None)
        if obj is None:
            return
        if kind.kind == "PodGroup" and not any(
            (key in objs) for k, objs in self.objects.items() if k.kind == "PodGroup"
        ):
            self.gang_objects.discard((key[0] or "default", key[1]))
        if kind.kind == "Pod":
            was = self._pending_now(key)
            self._index(key, None)
            self._unhint(key, obj)
            self.assumed.pop(key, None)
            self.assumed_annotations.pop(key, None)
            self._repend(key, was)
        self.changes.deleted.setdefault(kind, {})[key] = obj
        self.changes.upserted.get(kind, set()).discard(key)
        self.changes.phase_only.discard((kind, key))

    def _unhint(self, key: ObjKey, obj: Obj | None) -> None:
        if obj is not None and (hint := gang_hint(obj)) is not None:
            members = self.hints.get(hint)
            if members is not None:
                members.discard(key)
                if not members:
                    del self.hints[hint]

    # ------------------------------------------------------------------ cycle side

    def take_changes(self) -> Changes:
        with self.lock:
            out, self.changes = self.changes, Changes()
            return out

    def mark_all(self) -> None:
        """Everything counts as changed (the snapshot is put again whole)."""
        with self.lock:
            self.changes = Changes(
                upserted={k: set(objs) for k, objs in self.objects.items() if objs}
            )

    def wait_for_change(self, since: int, timeout: float) -> int:
        with self.lock:
            if self.generation == since:
                self.lock.wait(timeout)
            return self.generation

    def of_kind(self, name: str) -> list[tuple[Kind, dict[ObjKey, Obj]]]:
        return [(k, objs) for k, objs in self.objects.items() if k.kind == name]

    def pod(self, key: ObjKey) -> Obj | None:
        with self.lock:
            return self.objects_of("Pod").get(key)

    def node_names(self) -> set[str]:
        with self.lock:
            return {name for _, objs in self.of_kind("Node") for _, name in objs}

    def assume(self, pods: list[tuple[ObjKey, str, dict[str, str]]]) -> None:
        """These pods are bound to these nodes from now on (until the watch says so, or
        `unassume`): never offered for placement again meanwhile. A pod with device
        annotations (the Decision's GPU assignment) is read again with them, so the
        snapshot charges its devices before the binder's writes come back."""
        with self.lock:
            known = self.objects_of("Pod")
            for pod, node, annotations in pods:
                if pod in known:
                    was = self._pending_now(pod)
                    self.assumed[pod] = node
                    self._repend(pod, was)
                    if annotations:
                        self.assumed_annotations[pod] = annotations
                        self._resend(pod)

    def unassume(self, pods: list[ObjKey]) -> None:
        """Their binds failed: pending again, and re-sent to the snapshot as pending."""
        with self.lock:
            for pod in pods:
                was = self._pending_now(pod)
                self.assumed.pop(pod, None)
                self.assumed_annotations.pop(pod, None)
                self._repend(pod, was)
                self._resend(pod)
            self._bump()

    def touch(self, pods: Iterable[ObjKey]) -> None:
        """Send these pods to the snapshot again (what the cycle adds to them changed)."""
        with self.lock:
            for pod in pods:
                self._resend(pod)
            self._bump()

    def _resend(self, pod: ObjKey) -> None:
        """Mark a known pod changed, so the next sync reads it again (lock held)."""
        if self.pod_kind is not None and pod in self.objects[self.pod_kind]:
            self.changes.upserted.setdefault(self.pod_kind, set()).add(pod)

    def assume_terminating(self, pod: ObjKey, condition: Obj) -> None:
        """An evicted pod is terminating from now on (its `deletionTimestamp` and
        `DisruptionTarget` condition), until the watch shows what the API server did."""
        with self.lock:
            current = self.objects_of("Pod").get(pod)
            if current is None or self.pod_kind is None:
                return
            meta = dict(current.get("metadata") or {})
            if meta.get("deletionTimestamp"):
                return
            meta["deletionTimestamp"] = condition["lastTransitionTime"]
            status = dict(current.get("status") or {})
            others = [
                c for c in status.get("conditions") or [] if c.get("type") != condition["type"]
            ]
            status["conditions"] = [*others, condition]
            self._upsert(self.pod_kind, pod, {**current, "metadata": meta, "status": status})
            self._bump()

    def assume_nominated(self, pod: ObjKey, node: str) -> None:
        """A preemptor's `status.nominatedNodeName` is written: the snapshot holds its room
        from the next sync on, before the watch brings the write back (else the next cycle
        would plan a second preemption for it while its victims terminate)."""
        with self.lock:
            current = self.objects_of("Pod").get(pod)
            if current is None or self.pod_kind is None:
                return
            status = {**(current.get("status") or {}), "nominatedNodeName": node}
            self._upsert(self.pod_kind, pod, {**current, "status": status})
            self._bump()

    def awaited_group(self, pod: Obj) -> ObjKey | None:
        """The PodGroup a pending pod names that the cluster serves but the watch has not
        delivered (yet): the pod waits for it, as upstream's coscheduling and Volcano make
        it wait ("pod group not found"), instead of being read as a gang of the pods seen
        so far (the rule for a dump without its PodGroups). Call under `lock`."""
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        ns = str(meta.get("namespace") or "default")
        served = {k.group for k in self.kinds if k.kind == "PodGroup"}
        found: tuple[str, tuple[str, ...]] | None = None
        group = spec.get("schedulingGroup") or {}
        if isinstance(group, dict) and group.get("podGroupName"):
            found = (str(group["podGroupName"]), ("scheduling.k8s.io",))
        else:
            labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
            for where, key, groups in _OBJECT_LINKS:
                source = labels if where == "label" else annotations
                if isinstance(source, dict) and source.get(key):
                    found = (str(source[key]), groups)
                    break
        if found is None or not served.intersection(found[1]):
            return None
        return None if (ns, found[0]) in self.gang_objects else (ns, found[0])

    def objects_of(self, name: str) -> dict[ObjKey, Obj]:
        for kind, objs in self.objects.items():
            if kind.kind == name:
                return objs
        return {}

    def pending(self, scheduler_names: frozenset[str]) -> list[ObjKey]:
        """Pods of these schedulers with no node, not terminating, not finished, not
        assumed bound (an index kept as the watches deliver: O(these pods), not O(all))."""
        with self.lock:
            return [
                key
                for name in scheduler_names
                for key in self.unbound.get(name, ())
                if key not in self.assumed
            ]

    def _pending_now(self, key: ObjKey) -> bool:
        """The pod is one `pending` lists (for some scheduler name)."""
        return key not in self.assumed and any(key in keys for keys in self.unbound.values())

    def _repend(self, key: ObjKey, was: bool) -> None:
        if self._pending_now(key) != was:
            self.pending_version += 1

    def _index(self, key: ObjKey, pod: Obj | None) -> None:
        """Keep `unbound` (scheduler name -> pods waiting for a node) for one pod."""
        for keys in self.unbound.values():
            keys.discard(key)
        if pod is None:
            return
        spec = pod.get("spec") or {}
        if spec.get("nodeName") or (pod.get("metadata") or {}).get("deletionTimestamp"):
            return
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return
        name = str(spec.get("schedulerName") or "default-scheduler")
        self.unbound.setdefault(name, set()).add(key)


def _pod_facts(pod: Obj, assumed_node: str | None) -> tuple[Any, ...]:
    """What the reader takes from a pod; `spec.nodeName` left out when it is the node the
    pod was bound to by us (the snapshot has that binding already)."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    if assumed_node is not None and spec.get("nodeName") == assumed_node:
        spec = {k: v for k, v in spec.items() if k != "nodeName"}
    return (
        meta.get("labels"),
        meta.get("annotations"),
        meta.get("deletionTimestamp"),
        spec,
        status.get("phase"),
        status.get("nominatedNodeName"),
    )


def _group_facts(group: Obj) -> tuple[Any, ...]:
    """What the reader takes from a gang object, but its status phase."""
    meta = group.get("metadata") or {}
    return (
        meta.get("labels"),
        meta.get("annotations"),
        meta.get("creationTimestamp"),
        meta.get("deletionTimestamp"),
        group.get("spec"),
    )


def _phase(group: Obj) -> Any:
    return (group.get("status") or {}).get("phase")


def _rv(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")
