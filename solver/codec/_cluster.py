"""Whole messages -> snapshots, deltas and jobs, with every field violation collected."""

from __future__ import annotations

from collections.abc import Mapping

from gangplan.v1 import cluster_pb2 as pb
from gangplan.v1 import placement_service_pb2 as spb
from solver.codec._budgets import budgets_from_proto
from solver.codec._errors import Violations
from solver.codec._messages import (
    gang_from_proto,
    node_from_proto,
    queue_from_proto,
    timestamp,
    topology_from_proto,
)
from solver.codec._readers import PendingPodReader, RunningPodReader
from solver.model import Gang, NetworkTopology, Node, Pod, Queue, epoch_seconds, parent_cycle
from solver.snapshot import KEEP, Delta, Keep, PodSchema, RunningPod, Snapshot

__all__ = ["delta_from_proto", "job_from_proto", "snapshot_from_proto"]


def _is_running(msg: pb.Pod) -> bool:
    return bool(msg.node_name)


def _gang_known(
    gang: str | None, key: str, gangs: Mapping[str, Gang], path: str, out: Violations
) -> None:
    if out.items and path in out.paths:
        return  # the gang id itself is malformed: one error per field
    if gang is not None and gang != key and gang not in gangs:
        out.add(path, f"gang {gang!r} is not in the request or the snapshot")
    if (gang is None or gang == key) and key in gangs:
        # The implicit gang id of a pod without a gang would join a named gang.
        out.add(path, f"a pod without a gang is the gang {key!r}, which is already named")


def snapshot_from_proto(msg: pb.Cluster, path: str, schema: PodSchema) -> Snapshot:
    """A whole Cluster message as a snapshot; raises ConvertError with every violation."""
    out = Violations()
    nodes: dict[str, Node] = {}
    for i, n in enumerate(msg.nodes):
        node = node_from_proto(n, f"{path}.nodes[{i}]", out)
        if node is not None:
            if node.name in nodes:
                out.add(f"{path}.nodes[{i}].name", f"duplicate node {node.name!r}")
            nodes[node.name] = node
    gangs: dict[str, Gang] = {}
    for i, g in enumerate(msg.gangs):
        gang = gang_from_proto(g, f"{path}.gangs[{i}]", out)
        if gang is not None:
            if gang.id in gangs:
                out.add(f"{path}.gangs[{i}].name", f"duplicate gang {gang.id!r}")
            gangs[gang.id] = gang
    reader = RunningPodReader(schema.annotation_keys, f"{path}.pods", out)
    pending_reader = PendingPodReader()
    running: list[RunningPod] = []
    pending: list[Pod] = []
    seen: set[str] = set()
    for i, p in enumerate(msg.pods):
        key = reader.key(p)
        if key in seen and p.name:
            out.add(f"{path}.pods[{i}].name", f"duplicate pod {key!r}")
        seen.add(key)
        if _is_running(p):
            row = reader.read(p, i)
            if row is not None:
                if (row.gang is not None and row.gang not in gangs) or key in gangs:
                    _gang_known(row.gang, key, gangs, f"{path}.pods[{i}].gang", out)
                running.append(row)
        else:
            pod = pending_reader.read(p, f"{path}.pods", i, out)
            if pod is not None and pod.pending:
                _gang_known(pod.gang, pod.key, gangs, f"{path}.pods[{i}].gang", out)
                pending.append(pod)
    queues: dict[str, Queue] = {}
    for i, q in enumerate(msg.queues):
        queue = queue_from_proto(q, f"{path}.queues[{i}]", out)
        if queue is not None:
            if queue.name in queues:
                out.add(f"{path}.queues[{i}].name", f"duplicate queue {queue.name!r}")
            queues[queue.name] = queue
    for field, who in (("kai", "KAI-Scheduler"), ("kueue", "Kueue")):
        mine = [i for i, q in enumerate(msg.queues) if q.HasField(field)]  # type: ignore[arg-type]
        if mine and len(mine) < len(msg.queues):  # one scheduler's queues share a cluster
            other = next(i for i in range(len(msg.queues)) if i not in mine)
            out.add(
                f"{path}.queues[{other}].{field}",
                f"{who} queues and other queues in one snapshot: give every queue `{field}` "
                "or none",
            )
    cycle = parent_cycle([(q.name, q.parent) for q in msg.queues])
    if cycle is not None:
        out.add(
            f"{path}.queues[{cycle}].parent",
            f"queue {msg.queues[cycle].name!r} is its own ancestor",
        )
    topology = (
        topology_from_proto(msg.topology, f"{path}.topology", out)
        if msg.HasField("topology")
        else None
    )
    observed = timestamp(msg, "observed_time", path, out)
    budgets = budgets_from_proto(msg.disruption_budgets, f"{path}.disruption_budgets", out)
    out.check()
    return Snapshot.build(
        nodes.values(),
        running,
        pending,
        gangs,
        queues,
        topology,
        schema=schema,
        observed=epoch_seconds(observed) if observed else None,
        budgets=budgets,
    )


def delta_from_proto(req: spb.UpdateSnapshotRequest, schema: PodSchema) -> Delta:
    """An UpdateSnapshotRequest as a Delta (its parts validated; references are checked when
    the delta is applied, with the same field paths)."""
    out = Violations()
    reader = RunningPodReader(schema.annotation_keys, "upsert_pods", out)
    nodes = [
        n
        for i, m in enumerate(req.upsert_nodes)
        if (n := node_from_proto(m, f"upsert_nodes[{i}]", out)) is not None
    ]
    gangs = [
        g
        for i, m in enumerate(req.upsert_gangs)
        if (g := gang_from_proto(m, f"upsert_gangs[{i}]", out)) is not None
    ]
    pending_reader = PendingPodReader()
    pods: list[Pod | RunningPod] = []
    for i, m in enumerate(req.upsert_pods):
        item = (
            reader.read(m, i) if _is_running(m) else pending_reader.read(m, "upsert_pods", i, out)
        )
        if item is not None:
            pods.append(item)
    queues = [
        q
        for i, m in enumerate(req.upsert_queues)
        if (q := queue_from_proto(m, f"upsert_queues[{i}]", out)) is not None
    ]
    topology: NetworkTopology | Keep | None = KEEP
    if req.HasField("topology"):
        topology = topology_from_proto(req.topology, "topology", out)
    elif req.remove_topology:
        topology = None
    observed = timestamp(req, "observed_time", "", out)
    budgets = budgets_from_proto(req.upsert_disruption_budgets, "upsert_disruption_budgets", out)
    out.check()
    return Delta(
        remove_nodes=tuple(req.remove_nodes),
        remove_pods=tuple(req.remove_pods),
        remove_gangs=tuple(req.remove_gangs),
        remove_queues=tuple(req.remove_queues),
        upsert_nodes=tuple(nodes),
        upsert_gangs=tuple(gangs),
        upsert_pods=tuple(pods),
        upsert_queues=tuple(queues),
        bindings=tuple((b.pod, b.node) for b in req.bindings),
        topology=topology,
        observed=epoch_seconds(observed) if observed else None,
        upsert_budgets=tuple(budgets.values()),
        remove_budgets=tuple(req.remove_disruption_budgets),
    )


def job_from_proto(
    job: pb.Job, path: str, snapshot: Snapshot
) -> tuple[list[Pod], dict[str, Gang], set[str]]:
    """The job's pending pods, its gangs (new or replacing the snapshot's), and the ids of
    every gang it names; raises ConvertError."""
    out = Violations()
    gangs: dict[str, Gang] = {}
    named: set[str] = set()
    for i, g in enumerate(job.gangs):
        gang = gang_from_proto(g, f"{path}.gangs[{i}]", out)
        if gang is not None:
            gangs[gang.id] = gang
            named.add(gang.id)
    known = {**snapshot.gangs, **gangs}
    reader = PendingPodReader()
    pending: list[tuple[int, Pod]] = []
    for i, p in enumerate(job.pods):
        pod = reader.read(p, f"{path}.pods", i, out)
        if pod is None:
            continue
        key = pod.key
        named_gang = pod.gang if pod.gang != key else None
        if out.items or (named_gang not in known if named_gang else key in known):
            _gang_known(named_gang, key, known, f"{path}.pods[{i}].gang", out)
        if pod.bound:
            out.add(
                f"{path}.pods[{i}].node_name",
                "a job's pods are pending; report bound pods with UpdateSnapshot",
            )
        elif pod.pending:
            pending.append((i, pod))
    # pods already running in the snapshot, found in one pass
    rows = snapshot.running.find_many([pod.key for _, pod in pending])
    pods: list[Pod] = []
    for (i, pod), row in zip(pending, rows.tolist(), strict=True):
        if row >= 0:
            out.add(
                f"{path}.pods[{i}].name",
                f"pod {pod.key!r} is running in the snapshot; remove it with UpdateSnapshot first",
            )
        else:
            pods.append(pod)
            named.add(pod.gang)
    for i, gid in enumerate(job.gang_ids):
        if gid not in known:
            out.add(f"{path}.gang_ids[{i}]", f"gang {gid!r} is not in the request or the snapshot")
        named.add(gid)
    out.check()
    return pods, gangs, named
