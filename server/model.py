"""A stored snapshot back as one `ClusterModel` (with a request's job added): for the calls
that work on objects, not columns (capacity planning). The
running pods become objects with what the snapshot keeps of them (labels, annotations,
requests, node, priority, gang)."""

from __future__ import annotations

from gangplan.v1 import cluster_pb2 as pb
from solver.codec import job_from_proto
from solver.model import ClusterModel, Gang, Pod
from solver.snapshot import Snapshot, gang_of_one

__all__ = ["model_of"]


def model_of(snapshot: Snapshot, job: pb.Job, field: str) -> ClusterModel:
    """The snapshot with `job` (the request's field `field`) added, as one ClusterModel."""
    pods, given, _ = job_from_proto(job, field, snapshot)
    gangs: dict[str, Gang] = {**snapshot.gangs, **given}
    running = snapshot.running
    everything: dict[str, Pod] = {}
    for row in running.rows().tolist():
        item = running.pod(row)
        ns, name = item.key.split("/", 1)
        everything[item.key] = Pod(
            namespace=ns,
            name=name,
            labels=dict(item.labels),
            annotations=dict(item.annotations),
            requests=dict(item.requests),
            node_name=item.node,
            priority=item.priority,
            gang=item.gang or item.key,
            terminating=item.terminating,
            preempted=item.preempted,
        )
    everything.update(snapshot.pending)
    everything.update({p.key: p for p in pods})
    members: dict[str, list[str]] = {}
    for key in sorted(everything):
        pod = everything[key]
        members.setdefault(pod.gang, []).append(key)
        if pod.gang not in gangs:
            gangs[pod.gang] = gang_of_one(pod)
    return ClusterModel(
        nodes=snapshot.nodes.nodes,
        pods=tuple(everything[k] for k in sorted(everything)),
        gangs={
            gid: g.model_copy(update={"members": tuple(members.get(gid, ()))})
            for gid, g in sorted(gangs.items())
        },
        queues=dict(snapshot.queues),
        topology=snapshot.topology,
    )
