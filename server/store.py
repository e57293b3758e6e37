"""The embedded in-memory snapshot store.

A snapshot is an immutable `ClusterState` and a generation (1 on the first PutSnapshot, +1
on every PutSnapshot or UpdateSnapshot of that id). Writers build a new state from a copy
and swap it in under the lock, so readers (PlaceJob, Preempt, Enqueue) work on a state that
no one changes under them, without holding the lock while they solve.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass

from gangplan.v1 import placement_service_pb2 as spb
from server.convert import (
    ClusterState,
    Violations,
    gang_from_proto,
    node_from_proto,
    pod_from_proto,
    queue_from_proto,
    topology_from_proto,
)

__all__ = ["NotFound", "Snapshot", "SnapshotStore", "StaleGeneration", "TooManySnapshots"]


class NotFound(Exception):
    """No snapshot has this id."""


class StaleGeneration(Exception):
    """The snapshot is not at the generation the caller expected."""


class TooManySnapshots(Exception):
    """The store holds `max_snapshots` already."""


@dataclass(frozen=True)
class Snapshot:
    id: str
    generation: int
    state: ClusterState


class SnapshotStore:
    def __init__(self, max_snapshots: int = 64) -> None:
        self._lock = threading.Lock()
        self._snapshots: dict[str, Snapshot] = {}
        self.max_snapshots = max_snapshots

    def __len__(self) -> int:
        return len(self._snapshots)

    def sizes(self) -> tuple[int, int]:
        """(nodes, pods) summed over every snapshot."""
        with self._lock:
            snaps = list(self._snapshots.values())
        return sum(len(s.state.nodes) for s in snaps), sum(len(s.state.pods) for s in snaps)

    def _current(self, snapshot_id: str, expected_generation: int) -> Snapshot:
        """The stored snapshot (caller holds the lock); NotFound, or StaleGeneration when
        `expected_generation` is not 0 and differs."""
        snap = self._snapshots.get(snapshot_id)
        if snap is None:
            raise NotFound(f"snapshot {snapshot_id!r} not found")
        if expected_generation and snap.generation != expected_generation:
            raise StaleGeneration(
                f"snapshot {snapshot_id!r} is at generation {snap.generation}, "
                f"not {expected_generation}"
            )
        return snap

    def get(self, snapshot_id: str, expected_generation: int = 0) -> Snapshot:
        with self._lock:
            return self._current(snapshot_id, expected_generation)

    def put(self, state: ClusterState, snapshot_id: str = "") -> Snapshot:
        with self._lock:
            snapshot_id = snapshot_id or uuid.uuid4().hex
            old = self._snapshots.get(snapshot_id)
            if old is None and len(self._snapshots) >= self.max_snapshots:
                raise TooManySnapshots(
                    f"the store holds {self.max_snapshots} snapshots; delete one first"
                )
            snap = Snapshot(snapshot_id, old.generation + 1 if old else 1, state)
            self._snapshots[snapshot_id] = snap
            return snap

    def delete(self, snapshot_id: str) -> None:
        with self._lock:
            if self._snapshots.pop(snapshot_id, None) is None:
                raise NotFound(f"snapshot {snapshot_id!r} not found")

    def update(self, req: spb.UpdateSnapshotRequest) -> Snapshot:
        """Apply the deltas of `req` atomically; raises ConvertError, NotFound, StaleGeneration."""
        with self._lock:
            old = self._current(req.snapshot_id, req.expected_generation)
            state = _apply(old.state, req)
            snap = Snapshot(old.id, old.generation + 1, state)
            self._snapshots[old.id] = snap
            return snap


def _apply(old: ClusterState, req: spb.UpdateSnapshotRequest) -> ClusterState:
    """Removals, upserts, bindings, topology, in that order; all or nothing."""
    out = Violations()
    state = old.copy()
    for i, name in enumerate(req.remove_nodes):
        if state.nodes.pop(name, None) is None:
            out.add(f"remove_nodes[{i}]", f"node {name!r} is not in the snapshot")
    for i, key in enumerate(req.remove_pods):
        if state.pods.pop(key, None) is None:
            out.add(f"remove_pods[{i}]", f"pod {key!r} is not in the snapshot")
    for i, gid in enumerate(req.remove_gangs):
        if state.gangs.pop(gid, None) is None:
            out.add(f"remove_gangs[{i}]", f"gang {gid!r} is not in the snapshot")
    for i, name in enumerate(req.remove_queues):
        if state.queues.pop(name, None) is None:
            out.add(f"remove_queues[{i}]", f"queue {name!r} is not in the snapshot")
    for i, n in enumerate(req.upsert_nodes):
        node = node_from_proto(n, f"upsert_nodes[{i}]", out)
        if node is not None:
            state.nodes[node.name] = node
    for i, g in enumerate(req.upsert_gangs):
        gang = gang_from_proto(g, f"upsert_gangs[{i}]", out)
        if gang is not None:
            state.gangs[gang.id] = gang
    where: dict[str, str] = {}
    for i, p in enumerate(req.upsert_pods):
        pod = pod_from_proto(p, f"upsert_pods[{i}]", out)
        if pod is not None:
            state.pods[pod.key] = pod
            where[pod.key] = f"upsert_pods[{i}].gang"
    for i, q in enumerate(req.upsert_queues):
        queue = queue_from_proto(q, f"upsert_queues[{i}]", out)
        if queue is not None:
            state.queues[queue.name] = queue
    for i, b in enumerate(req.bindings):
        pod = state.pods.get(b.pod)
        if pod is None:
            out.add(f"bindings[{i}].pod", f"pod {b.pod!r} is not in the snapshot")
        elif b.node not in state.nodes:
            out.add(f"bindings[{i}].node", f"node {b.node!r} is not in the snapshot")
        else:
            state.pods[b.pod] = pod.model_copy(update={"node_name": b.node, "nominated_node": None})
    if req.remove_topology:
        state.topology = None
    if req.HasField("topology"):
        state.topology = topology_from_proto(req.topology, "topology", out)
    if req.remove_gangs:
        # Pods left pointing at a removed gang.
        removed = set(req.remove_gangs)
        for key, pod in state.pods.items():
            if pod.gang in removed and key not in where:
                where[key] = f"remove_gangs[{list(req.remove_gangs).index(pod.gang)}]"
    state.check_references(out, where)
    out.check()
    # Keep the derived gangs of pods still there unchanged; drop the rest (no growth).
    state.gangs_of_one = {k: v for k, v in old.gangs_of_one.items() if state.pods.get(k) is v[0]}
    return state
