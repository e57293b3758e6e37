"""What the cycle has sent to its snapshot: the names of the nodes, gangs and queues it holds
(pods: `Cycle.gang_of`), and a digest of each node, pod, gang and queue as last sent.

The digests keep a delta to what changed for gangplan: a watch event that changes only
what the reader does not keep (a pod's `PodScheduled` condition or a PodGroup's status
that the reporter wrote, a node's heartbeat) reads to the same message, which is not sent
again. The snapshot's generation then stays, and a gang that waits is not decided again
for nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.message import Message

from gangplan.v1 import cluster_pb2 as pb
from gangplan.v1 import placement_service_pb2 as spb

__all__ = ["Sent", "as_cluster", "is_empty"]


def _digest(message: Message) -> bytes:
    return hashlib.blake2b(message.SerializeToString(deterministic=True), digest_size=16).digest()


def _namespaced(m: Any) -> str:
    return f"{m.namespace or 'default'}/{m.name}"


# (digest key of an upserted message, the request's list of them), per kind
_UPSERTS: tuple[tuple[Callable[[Any], str], Callable[[spb.UpdateSnapshotRequest], Any]], ...] = (
    (lambda n: f"node:{n.name}", lambda r: r.upsert_nodes),
    (lambda p: f"pod:{_namespaced(p)}", lambda r: r.upsert_pods),
    (lambda g: f"gang:{_namespaced(g)}", lambda r: r.upsert_gangs),
    (lambda q: f"queue:{q.name}", lambda r: r.upsert_queues),
)


@dataclass
class Sent:
    nodes: set[str]
    gangs: set[str]
    queues: set[str]
    digests: dict[str, bytes] = field(default_factory=dict)  # "<kind>:<key>" -> digest

    @classmethod
    def empty(cls) -> Sent:
        return cls(set(), set(), set())

    @classmethod
    def of(cls, req: spb.UpdateSnapshotRequest) -> Sent:
        sent = cls.empty()
        sent.apply(req)
        return sent

    def drop_unchanged(self, req: spb.UpdateSnapshotRequest) -> None:
        """Leaves out of `req` the nodes, pods, gangs and queues that read as they were
        last sent."""
        for key_of, items in _UPSERTS:
            upserts = items(req)
            kept = [m for m in upserts if self.digests.get(key_of(m)) != _digest(m)]
            if len(kept) < len(upserts):
                del upserts[:]
                upserts.extend(kept)

    def apply(self, req: spb.UpdateSnapshotRequest) -> None:
        self.nodes.difference_update(req.remove_nodes)
        self.nodes.update(n.name for n in req.upsert_nodes)
        self.gangs.difference_update(req.remove_gangs)
        self.gangs.update(f"{g.namespace or 'default'}/{g.name}" for g in req.upsert_gangs)
        self.queues.difference_update(req.remove_queues)
        self.queues.update(q.name for q in req.upsert_queues)
        for key in (
            *(f"node:{n}" for n in req.remove_nodes),
            *(f"pod:{p}" for p in req.remove_pods),
            *(f"gang:{g}" for g in req.remove_gangs),
            *(f"queue:{q}" for q in req.remove_queues),
        ):
            self.digests.pop(key, None)
        for key_of, items in _UPSERTS:
            self.digests.update((key_of(m), _digest(m)) for m in items(req))
        for b in req.bindings:  # the service placed the pod: what it holds is no longer it
            self.digests.pop(f"pod:{b.pod}", None)


def is_empty(req: spb.UpdateSnapshotRequest) -> bool:
    """A delta that changes nothing."""
    return not (
        req.upsert_nodes
        or req.upsert_pods
        or req.upsert_gangs
        or req.upsert_queues
        or req.remove_nodes
        or req.remove_pods
        or req.remove_gangs
        or req.remove_queues
        or req.bindings
        or req.HasField("topology")
        or req.remove_topology
    )


def as_cluster(req: spb.UpdateSnapshotRequest) -> pb.Cluster:
    cluster = pb.Cluster(
        nodes=req.upsert_nodes,
        pods=req.upsert_pods,
        gangs=req.upsert_gangs,
        queues=req.upsert_queues,
    )
    if req.HasField("topology"):
        cluster.topology.CopyFrom(req.topology)
    return cluster
