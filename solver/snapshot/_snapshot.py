"""The snapshot: one generation of a cluster, with everything derived from it alone.

A `Snapshot` holds the nodes (`NodeTable`), the running pods as columns
(`RunningPods`), the pending pods, the named gangs, the queues and the network topology,
plus the usage totals derived from the running pods (`Usage`). It is immutable: `apply`
returns the next generation, touching only what the delta touches — appended rows, a copy
of the live-row mask, totals moved by the changed rows — so an update costs what the delta
costs, and readers of the old generation are never disturbed. A call on a snapshot reads
these columns and totals; it never walks the running pods in Python.

Policies keep their own per-snapshot state through `memo` (per generation) and
`nodes.memo` (per node generation, shared across generations with the same nodes).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from solver.arrays import IntArray
from solver.model import (
    ClusterModel,
    DisruptionBudget,
    Gang,
    NetworkTopology,
    Node,
    Pod,
    Queue,
    epoch_seconds,
    parent_cycle,
)
from solver.snapshot._by_node import NodeRows
from solver.snapshot._columns import RunningPod, RunningPods
from solver.snapshot._delta import Delta, DeltaError, Keep
from solver.snapshot._facts import PodSchema
from solver.snapshot._intern import NONE
from solver.snapshot._nodes import NodeTable
from solver.snapshot._usage import Usage

__all__ = ["Lineage", "Snapshot", "running_pod"]

T = TypeVar("T")
V = TypeVar("V")

COMPACT_RETIRED = 4096
"""Retired rows beyond this (and beyond the live ones) make the next update compact."""


def running_pod(pod: Pod, gang: str | None) -> RunningPod:
    """A bound `Pod` as a row; `gang` None for a gang of one."""
    return RunningPod(
        key=pod.key,
        node=pod.node_name or "",
        requests=pod.requests,
        priority=pod.priority,
        gang=gang,
        labels=pod.labels,
        annotations=pod.annotations,
        terminating=pod.terminating,
        preempted=pod.preempted,
        terms=pod.inter_pod,
        started=None if math.isnan(t := epoch_seconds(pod.created)) else t,
    )


WHERE_LABELS = (
    "kubernetes.io/hostname",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
)


@dataclass(frozen=True)
class Lineage:
    """What one generation continues from: the previous generation's memo, and the running
    rows the delta added and retired (indices into the new generation's `running`)."""

    memo: Mapping[Hashable, object]
    added: IntArray
    retired: IntArray


@dataclass(frozen=True, eq=False)
class Snapshot:
    nodes: NodeTable
    running: RunningPods
    pending: Mapping[str, Pod]  # pending pods by key
    gangs: Mapping[str, Gang]  # named gangs (PodGroups) by id; gangs of one are implicit
    queues: Mapping[str, Queue]
    topology: NetworkTopology | None
    usage: Usage
    gang_queue: npt.NDArray[np.int32]  # per gang id of `running`: its spec.queue's id, or NONE
    notes: tuple[str, ...] = ()
    budgets: Mapping[str, DisruptionBudget] = field(default_factory=lambda: MappingProxyType({}))
    #   PodDisruptionBudgets by `namespace/name`
    observed: float = 0.0  # when the cluster was seen (seconds since the epoch): usage
    #   histories are counted up to it (`ClusterModel.observed`, `Delta.observed`, else the
    #   clock when the generation was made)
    _memo: dict[Hashable, object] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # the previous generation's memo and the rows this one added and retired, when `running`
    # continues its buffer (`derive` moves a memoised value by them instead of rebuilding)
    _lineage: Lineage | None = field(default=None, repr=False)

    # ------------------------------------------------------------------ construction

    @classmethod
    def build(
        cls,
        nodes: Iterable[Node],
        running: Iterable[RunningPod] = (),
        pending: Iterable[Pod] = (),
        gangs: Mapping[str, Gang] | None = None,
        queues: Mapping[str, Queue] | None = None,
        topology: NetworkTopology | None = None,
        *,
        schema: PodSchema | None = None,
        notes: tuple[str, ...] = (),
        observed: float | None = None,
        budgets: Mapping[str, DisruptionBudget] | None = None,
    ) -> Snapshot:
        table = NodeTable(list(nodes))
        if len(table.index) != len(table.nodes):
            raise ValueError("node names must be unique")
        columns = RunningPods.empty(table, schema or PodSchema()).extend(list(running))
        gangs = dict(sorted((gangs or {}).items()))
        gang_queue = _gang_queues(columns, gangs)
        return cls(
            nodes=table,
            running=columns,
            pending=MappingProxyType({p.key: p for p in sorted(pending, key=lambda p: p.key)}),
            gangs=MappingProxyType(gangs),
            queues=MappingProxyType(dict(sorted((queues or {}).items()))),
            topology=topology,
            usage=Usage.build(columns, gang_queue),
            gang_queue=gang_queue,
            notes=notes,
            budgets=MappingProxyType(dict(sorted((budgets or {}).items()))),
            observed=time.time() if observed is None else observed,
        )

    @classmethod
    def from_model(cls, model: ClusterModel, schema: PodSchema | None = None) -> Snapshot:
        """The snapshot of a whole input: its bound pods become rows, its pending pods stay."""
        named = {gid: g for gid, g in model.gangs.items() if not g.implicit}
        running = [running_pod(p, p.gang if p.gang in named else None) for p in model.bound_pods]
        return cls.build(
            model.nodes,
            running,
            model.pending_pods,
            named,
            model.queues,
            model.topology,
            schema=schema,
            notes=model.notes,
            budgets=model.disruption_budgets,
            observed=observed if math.isfinite(observed := epoch_seconds(model.observed)) else None,
        )

    def rebuild(self) -> Snapshot:
        """The same cluster built from scratch (no shared buffers, no incremental totals)."""
        rows = self.running.rows().tolist()
        return Snapshot.build(
            self.nodes.nodes,
            [self.running.pod(r) for r in rows],
            self.pending.values(),
            self.gangs,
            self.queues,
            self.topology,
            schema=self.running.schema,
            notes=self.notes,
            observed=self.observed,
            budgets=self.budgets,
        )

    # ------------------------------------------------------------------ reading

    def memo(self, key: Hashable, compute: Callable[[], T]) -> T:
        """`compute()` once per generation (per key); the value must be read-only."""
        try:
            return self._memo[key]  # type: ignore[return-value]
        except KeyError:
            pass
        value = compute()
        with self._lock:
            return self._memo.setdefault(key, value)  # type: ignore[return-value]

    def derive(
        self, key: Hashable, build: Callable[[Snapshot], T], update: Callable[[T, Lineage], T]
    ) -> T:
        """`memo`, kept current by deltas: when the previous generation holds the value,
        `update(value, lineage)` moves it by the running rows added and retired since (the
        rows stay readable in `running`); else `build(self)`. O(delta), not O(cluster)."""
        try:
            return self._memo[key]  # type: ignore[return-value]
        except KeyError:
            pass
        lineage = self._lineage
        before = lineage.memo.get(key) if lineage is not None else None
        value = build(self) if before is None or lineage is None else update(before, lineage)  # type: ignore[arg-type]
        with self._lock:
            return self._memo.setdefault(key, value)  # type: ignore[return-value]

    def used(self, axis: tuple[str, ...]) -> IntArray:
        """[N, len(axis)] requests of the running pods per node on `axis`."""
        names = self.running.resources
        index = {name: i for i, name in enumerate(names)}
        out = np.zeros((len(self.nodes), len(axis)), dtype=np.int64)
        width = self.usage.used.shape[1]
        for j, name in enumerate(axis):
            i = index.get(name)
            if i is not None and i < width:
                out[:, j] = self.usage.used[:, i]
        return out

    def nominated_room(
        self, axis: tuple[str, ...], priority: int, own: Iterable[str]
    ) -> IntArray | None:
        """[N, len(axis)] requests of the pending pods nominated to a node
        (`status.nominatedNodeName`) with priority >= `priority`, less the pods `own` names.

        kube-scheduler runs a pod's filters with such pods added to their nominated node
        (`addGENominatedPods`), so the room a preemption freed stays theirs until they
        bind. The nominated pods' columns are built once per generation and axis; a call
        pays O(nodes + its own pods). None when no pod is nominated anywhere.
        """

        def compute() -> tuple[IntArray, IntArray, IntArray, dict[str, int]]:
            index = self.nodes.index
            found = [
                p
                for p in self.pending.values()
                if p.nominated_node is not None and p.nominated_node in index
            ]
            node = np.array([index[p.nominated_node or ""] for p in found], dtype=np.int64)
            prio = np.array([p.priority for p in found], dtype=np.int64)
            requests = np.array(
                [[p.requests.get(r, 0) for r in axis] for p in found], dtype=np.int64
            ).reshape(len(found), len(axis))
            for column in (node, prio, requests):
                column.flags.writeable = False
            return node, prio, requests, {p.key: i for i, p in enumerate(found)}

        node, prio, requests, row_of = self.memo(("snapshot", "nominated", axis), compute)
        if node.size == 0:
            return None
        held = prio >= priority
        for key in own:
            row = row_of.get(key)
            if row is not None:
                held[row] = False
        out = np.zeros((len(self.nodes), len(axis)), dtype=np.int64)
        np.add.at(out, node[held], requests[held])
        return out

    def where_labels(self, extra: Iterable[str] = ()) -> tuple[str, ...]:
        """Node label keys that say where a node is rather than what it is: the hostname,
        zone and region, `extra`, every key naming a topology, the topology's layers and
        the levels gangs are placed under. A pod moved to a node that differs from its own
        only in these lands on a node like its own (defragmentation, consolidation)."""
        keys = [*WHERE_LABELS, *extra]
        labelled = {k for n in self.nodes.nodes for k in n.labels}
        keys += sorted(k for k in labelled if "topology" in k)  # topology.kubernetes.io/*
        if self.topology is not None:
            keys += [k for layer in self.topology.layers for k in layer.label_keys]
        for gang in self.gangs.values():  # KAI's and the Workload API's levels
            keys += [k for k in (gang.topology_key, *gang.preferred_keys) if k]
        return tuple(dict.fromkeys(keys))

    def gang_running(self, gang_id: str) -> int:
        """Running pods of a named gang (0 for a gang of one: its pod is pending)."""
        g = self.running.gang_id(gang_id)
        counts = self.usage.gang_count
        return int(counts[g]) if 0 <= g < counts.size else 0

    def rows_on(self, nodes: IntArray) -> IntArray:
        """Live rows of the running pods on `nodes` (node indices), ascending: O(their
        pods), from an index kept by deltas (`NodeRows`), not a scan of every pod."""
        index: NodeRows = self.derive(
            ("snapshot", "rows by node"),
            lambda s: NodeRows.build(s.running),
            lambda before, lineage: before.extended(self.running, lineage.added),
        )
        return index.rows_on(self.running, nodes)

    def rows_of_gang(self, gang_id: str) -> IntArray:
        """Live rows of a named gang's running pods."""
        g = self.running.gang_id(gang_id)
        if g == NONE or self.gang_running(gang_id) == 0:
            return np.zeros(0, dtype=np.int64)
        return np.flatnonzero((self.running.gang == g) & self.running.alive)

    def pending_of(self, gang_id: str) -> list[Pod]:
        """The snapshot's pending pods of a gang, by key (grouped once per generation)."""

        def compute() -> dict[str, list[Pod]]:
            out: dict[str, list[Pod]] = {}
            for pod in self.pending.values():
                out.setdefault(pod.gang, []).append(pod)
            return out

        return self.memo(("snapshot", "pending by gang"), compute).get(gang_id, [])

    def __len__(self) -> int:
        """Pods in the snapshot, running and pending."""
        return len(self.running) + len(self.pending)

    # ------------------------------------------------------------------ deltas

    def apply(self, delta: Delta) -> Snapshot:
        """The next generation; raises DeltaError (every violation) and changes nothing when
        some part of the delta does not apply."""
        errors: list[tuple[str, str]] = []
        nodes = _merged(
            {n.name: n for n in self.nodes.nodes},
            delta.remove_nodes,
            {n.name: n for n in delta.upsert_nodes},
            "node",
            errors,
        )
        gangs = _merged(
            self.gangs, delta.remove_gangs, {g.id: g for g in delta.upsert_gangs}, "gang", errors
        )
        queues = _merged(
            self.queues,
            delta.remove_queues,
            {q.name: q for q in delta.upsert_queues},
            "queue",
            errors,
        )
        budgets = _merged(
            self.budgets,
            delta.remove_budgets,
            {b.key: b for b in delta.upsert_budgets},
            "disruption_budget",
            errors,
        )

        # Upserted queues first: a new cycle runs through one, and is reported there.
        upserted = [q.name for q in delta.upsert_queues]
        chains = [(q, queues[q].parent) for q in upserted if q in queues]
        chains += [(q, spec.parent) for q, spec in queues.items() if q not in set(upserted)]
        kinds = {"kai" if q.kai else "kueue" if q.kueue else "" for q in queues.values()}
        if len(kinds) > 1 and delta.upsert_queues:  # one scheduler's queues share a cluster
            field = "kueue" if "kueue" in kinds else "kai"
            errors.append(
                (
                    f"upsert_queues[0].{field}",
                    "KAI-Scheduler, Kueue and Volcano queues in one snapshot: give every "
                    f"queue `{field}` or none",
                )
            )
        cycle = parent_cycle(chains)
        if cycle is not None:
            name = chains[cycle][0]
            errors.append(
                (
                    f"upsert_queues[{upserted.index(name)}].parent",
                    f"queue {name!r} is its own ancestor",
                )
            )
        pending = dict(self.pending)
        retire: set[int] = set()
        append: dict[str, RunningPod] = {}
        where: dict[str, str] = {}  # pod key -> field of its gang reference, for errors

        def drop(key: str, row: int) -> bool:
            """Forget `key` (running at `row`, or NONE); whether it was anywhere."""
            found = key in pending or key in append
            pending.pop(key, None)
            append.pop(key, None)
            if row != NONE:
                retire.add(row)
                found = True
            return found

        removed_rows = self.running.find_many(delta.remove_pods).tolist()
        for i, (key, row) in enumerate(zip(delta.remove_pods, removed_rows, strict=True)):
            if not drop(key, row):
                errors.append((f"remove_pods[{i}]", f"pod {key!r} is not in the snapshot"))
        upserted_rows = self.running.find_many([item.key for item in delta.upsert_pods])
        for i, (item, row) in enumerate(
            zip(delta.upsert_pods, upserted_rows.tolist(), strict=True)
        ):
            drop(item.key, row)
            where[item.key] = f"upsert_pods[{i}].gang"
            if isinstance(item, RunningPod):
                append[item.key] = item
            elif item.bound:
                append[item.key] = running_pod(item, _named(item, gangs))
            elif item.pending:
                pending[item.key] = item
        for i, (key, node) in enumerate(delta.bindings):
            if node not in nodes:
                errors.append((f"bindings[{i}].node", f"node {node!r} is not in the snapshot"))
            elif key in pending:
                pod = pending.pop(key).model_copy(
                    update={"node_name": node, "nominated_node": None}
                )
                append[key] = running_pod(pod, _named(pod, gangs))
            elif key in append or self.running.find(key) != NONE:
                bound = append[key].node if key in append else self._node_of(key)
                if bound != node:
                    errors.append(
                        (f"bindings[{i}].pod", f"pod {key!r} is already bound to {bound!r}")
                    )
            else:
                errors.append((f"bindings[{i}].pod", f"pod {key!r} is not in the snapshot"))

        for key, pod in pending.items():
            if key in where and pod.gang != key and pod.gang not in gangs:
                errors.append((where[key], f"gang {pod.gang!r} is not in the snapshot"))
        for key, row in append.items():
            if row.gang is not None and row.gang not in gangs and key in where:
                errors.append((where[key], f"gang {row.gang!r} is not in the snapshot"))
        for i, gid in enumerate(delta.remove_gangs):
            still = [k for k, p in pending.items() if p.gang == gid] + [
                k for k, r in append.items() if r.gang == gid
            ]
            kept = self.rows_of_gang(gid)
            if kept.size and not set(kept.tolist()) <= retire:
                still.append(self.running.key(int(kept[0])))
            if still:
                errors.append(
                    (f"remove_gangs[{i}]", f"gang {gid!r} still has pods, e.g. {sorted(still)[0]}")
                )
        if errors:
            raise DeltaError(errors)

        topology = self.topology if isinstance(delta.topology, Keep) else delta.topology
        nodes_changed = bool(delta.remove_nodes or delta.upsert_nodes)
        table = NodeTable(list(nodes.values())) if nodes_changed else self.nodes
        running = self.running.extend(list(append.values()), sorted(retire))
        gangs = dict(sorted(gangs.items()))
        gang_queue = _gang_queues(running, gangs)
        # A gang whose spec.queue changed moves its running pods' usage between queues;
        # gangs new in this delta have no rows retired under an older queue.
        queues_moved = not np.array_equal(gang_queue[: self.gang_queue.size], self.gang_queue)
        same_lineage = running._buf is self.running._buf
        lineage = None
        if nodes_changed or running.retired > max(COMPACT_RETIRED, len(running)):
            running = running.fork(table)
            gang_queue = _gang_queues(running, gangs)
            usage = Usage.build(running, gang_queue)
        elif not same_lineage or queues_moved:
            usage = Usage.build(running, gang_queue)
        else:
            added = np.arange(self.running.length, running.length, dtype=np.int64)
            retired = np.array(sorted(retire), dtype=np.int64)
            usage = self.usage.apply(running, added, retired, gang_queue)
            lineage = Lineage(self._memo, added, retired)
        return Snapshot(
            nodes=table,
            running=running,
            pending=MappingProxyType(dict(sorted(pending.items()))),
            gangs=MappingProxyType(gangs),
            queues=MappingProxyType(dict(sorted(queues.items()))),
            topology=topology,
            usage=usage,
            gang_queue=gang_queue,
            notes=self.notes,
            budgets=MappingProxyType(dict(sorted(budgets.items()))),
            observed=time.time() if delta.observed is None else delta.observed,
            _lineage=lineage,
        )

    def _node_of(self, key: str) -> str:
        return self.running.node_name(self.running.find(key))


def _merged(
    current: Mapping[str, V],
    removes: tuple[str, ...],
    upserts: Mapping[str, V],
    kind: str,
    errors: list[tuple[str, str]],
) -> dict[str, V]:
    """`current` without `removes` (each must exist), then with `upserts`."""
    out = dict(current)
    for i, name in enumerate(removes):
        if out.pop(name, None) is None:
            errors.append((f"remove_{kind}s[{i}]", f"{kind} {name!r} is not in the snapshot"))
    out.update(upserts)
    return out


def _named(pod: Pod, gangs: Mapping[str, Gang]) -> str | None:
    return pod.gang if pod.gang in gangs else None


def _gang_queues(running: RunningPods, gangs: Mapping[str, Gang]) -> npt.NDArray[np.int32]:
    """Per gang id of the lineage: the queue id its spec names (interning new names)."""
    for gid in gangs:
        running.gang_names.add(gid)
    out = np.full(len(running.gang_names), NONE, dtype=np.int32)
    for gid, gang in gangs.items():
        if gang.queue:
            out[running.gang_id(gid)] = running.queue_names.add(gang.queue)
    out.flags.writeable = False
    return out
