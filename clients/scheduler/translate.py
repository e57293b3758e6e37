"""What changed in the cluster -> one UpdateSnapshot delta, read by gangplan's own reader.

The objects are read by the same reader as `gangplan schedule -f` (`solver.kube`) and
encoded by the same codec as `gangplan schedule --server` (`solver.codec`), so a gang read
from the cluster gets the Decision the same objects get from files. A delta reads only:

1. the changed nodes, pods and gang objects;
2. the pods of a changed gang object (it may impose on them, as a Workload API PodGroup
   imposes its priority), and the pods of a gang that has no object when one of them
   changed (such a gang is defined by its pods: all of them are read together);
3. the gang objects those pods name;
4. the context kinds (namespaces, priority classes, queues, workloads: few objects);
5. every topology object when one of them changed (the topology is sent whole).

An object the reader refuses is left out with its error (one line naming the object and
the field), and the rest of the cluster is read without it. A pending pod naming a PodGroup
that the cluster serves but the watch has not delivered yet is held back (`held`): it
waits for its PodGroup, as upstream's coscheduling and Volcano make it wait, rather than
being read as a gang of the pods seen so far (the watches of pods and PodGroups are
separate streams: the pods may come first).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from clients.scheduler.kinds import CONTEXT_KINDS, KUEUE_QUEUE_KINDS, TOPOLOGY_KINDS, Kind
from clients.scheduler.mirror import Changes, Mirror, ObjKey, gang_hint, key_of
from gangplan.v1 import placement_service_pb2 as spb
from solver.codec import cluster_to_proto
from solver.errors import ManifestError
from solver.kube import RawObject, build_model

__all__ = ["Delta", "Refused", "translate"]

Obj = dict[str, Any]
MAX_REFUSALS = 1000  # a cycle reading more bad objects than this gives up on the rest


@dataclass(frozen=True)
class Refused:
    """An object the reader refused: its kind, key and the one-line error."""

    kind: Kind
    key: ObjKey
    obj: Obj
    error: str


@dataclass
class Delta:
    request: spb.UpdateSnapshotRequest
    gang_of: dict[str, str] = field(default_factory=dict)  # pod key -> gang id ("" alone)
    refused: list[Refused] = field(default_factory=list)
    notes: tuple[str, ...] = ()
    removed_pods: list[str] = field(default_factory=list)
    held: set[str] = field(default_factory=set)  # pending pods waiting for their PodGroup


def _pod_key(key: ObjKey) -> str:
    return f"{key[0] or 'default'}/{key[1]}"


def translate(mirror: Mirror, changes: Changes, *, whole: bool = False) -> Delta:
    """The delta for `changes` (every object when `whole`: a PutSnapshot's cluster)."""
    with mirror.lock:
        batch, upsert_nodes = _batch(mirror, changes, whole)
    with mirror.lock:  # pending pods whose PodGroup the watch has not delivered yet
        held = {
            _pod_key(key_of(o))
            for kind, o in batch
            if kind.kind == "Pod"
            and not (o.get("spec") or {}).get("nodeName")
            and mirror.awaited_group(o) is not None
        }
    delta = Delta(spb.UpdateSnapshotRequest(), held=held)
    req = delta.request
    cluster = _read(batch, delta)
    req.upsert_nodes.extend(n for n in cluster.nodes if n.name in upsert_nodes)
    req.upsert_pods.extend(
        p for p in cluster.pods if f"{p.namespace or 'default'}/{p.name}" not in held
    )
    req.upsert_gangs.extend(cluster.gangs)
    for p in cluster.pods:
        if (key := f"{p.namespace or 'default'}/{p.name}") not in held:
            delta.gang_of[key] = p.gang
    req.upsert_queues.extend(cluster.queues)
    for kind, gone in changes.deleted.items():
        if kind.kind == "Node":
            req.remove_nodes.extend(name for _, name in gone)
        elif kind.kind == "Pod":
            delta.removed_pods.extend(_pod_key(k) for k in gone)
        elif kind.kind == "Queue" or kind.kind in KUEUE_QUEUE_KINDS - {"LocalQueue"}:
            req.remove_queues.extend(name for _, name in gone)
        elif kind.kind == "LocalQueue":  # named `<namespace>/<name>` in the queue tree
            req.remove_queues.extend(f"{ns or 'default'}/{name}" for ns, name in gone)
        elif kind.kind == "PodGroup":
            with mirror.lock:
                still_named = [k for k in gone if (k[0] or "default", k[1]) in mirror.hints]
            req.remove_gangs.extend(
                f"{ns or 'default'}/{name}" for ns, name in gone if (ns, name) not in still_named
            )
    req.remove_pods.extend(delta.removed_pods)
    if whole or changes.touched(TOPOLOGY_KINDS):
        if cluster.HasField("topology"):
            req.topology.CopyFrom(cluster.topology)
        else:
            req.remove_topology = True
    return delta


def _batch(
    mirror: Mirror, changes: Changes, whole: bool
) -> tuple[list[tuple[Kind, Obj]], set[str]]:
    """(kind, object) pairs to read, and the names of nodes to upsert (call under lock)."""
    out: list[tuple[Kind, Obj]] = []
    nodes: set[str] = set()
    if whole:
        for kind, objs in mirror.objects.items():
            out.extend((kind, o) for o in objs.values())
            if kind.kind == "Node":
                nodes.update(name for _, name in objs)
        return out, nodes
    pods_kind = next((k for k in mirror.kinds if k.kind == "Pod"), None)
    pods = mirror.objects.get(pods_kind, {}) if pods_kind else {}
    gang_objects = mirror.gang_objects
    hints: set[ObjKey] = set()  # gangs whose objects are read
    regather: set[ObjKey] = set()  # gangs all of whose pods are read again
    pod_keys: set[ObjKey] = set()
    for kind, keys in changes.upserted.items():
        objs = mirror.objects[kind]
        if kind.kind == "Node":
            nodes.update(name for _, name in keys if (_, name) in objs)
            out.extend((kind, objs[k]) for k in keys if k in objs)
        elif kind.kind == "Pod":
            for k in keys:
                if k in objs:
                    pod_keys.add(k)
                    if (hint := gang_hint(objs[k])) is not None:
                        hints.add(hint)
                        if hint not in gang_objects:  # a gang its pods define
                            regather.add(hint)
        elif kind.kind == "PodGroup":
            changed = {(ns or "default", name) for ns, name in keys}
            hints.update(changed)
            regather.update(
                (ns or "default", name)
                for ns, name in keys
                if (kind, (ns, name)) not in changes.phase_only
            )
    for kind, gone in changes.deleted.items():
        if kind.kind == "PodGroup":
            changed = {(ns or "default", name) for ns, name in gone}
            hints.update(changed)
            regather.update(changed)
    for hint in regather:
        pod_keys.update(mirror.hints.get(hint, ()))
    if pods_kind is not None:
        out.extend((pods_kind, pods[k]) for k in pod_keys if k in pods)
    for kind, objs in mirror.objects.items():
        if kind.kind == "PodGroup":
            out.extend((kind, objs[k]) for k in hints if k in objs)
            out.extend(
                (kind, objs[(ns, name)])
                for ns, name in hints
                if ns == "default" and ("", name) in objs
            )
    out.extend(
        (k, o)
        for k, objs in mirror.objects.items()
        if k.kind in CONTEXT_KINDS
        for o in objs.values()
    )
    if changes.touched(TOPOLOGY_KINDS):
        out.extend(
            (k, o)
            for k, objs in mirror.objects.items()
            if k.kind in TOPOLOGY_KINDS
            for o in objs.values()
        )
    return out, nodes


def _raw(kind: Kind, obj: Obj, version: str) -> RawObject:
    ns, name = key_of(obj)
    body = dict(obj)
    body.setdefault("apiVersion", kind.api_version(version))
    body.setdefault("kind", kind.kind)
    return RawObject(source="cluster", document=f"{kind.label}/{ns}/{name}", body=body)


def _read(batch: list[tuple[Kind, Obj]], delta: Delta) -> Any:
    """Read the batch; refused objects are dropped one by one (each named in `refused`)."""
    raws = {}
    for kind, obj in batch:
        raw = _raw(kind, obj, str(obj.get("apiVersion", "")).rpartition("/")[2] or "v1")
        raws[raw.document] = (kind, raw)
    while True:
        try:
            model = build_model([raw for _, raw in raws.values()])
        except ManifestError as err:
            found = raws.pop(err.document or "", None)
            if found is None or len(delta.refused) >= MAX_REFUSALS:
                raise
            kind, raw = found
            delta.refused.append(Refused(kind, key_of(raw.body), raw.body, str(err)))
            continue
        delta.notes = model.notes
        return cluster_to_proto(model)
