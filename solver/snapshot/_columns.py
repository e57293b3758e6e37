"""Running pods as columns: one row per pod, read through a generation's `alive` mask.

The storage (`Buffers`) is append-only and shared by the generations of one lineage; a
generation is a length and a mask over it. `extend` appends (or forks a new lineage when
this generation is not the tip), `fork` compacts the live rows over a new node list.

Per row: the pod key, its node (index into the lineage's `NodeTable`, -1 for a node not in
the snapshot), its requests on the lineage's resource axis, priority, named gang, flags,
its label set, the queue its annotation names, its capacity-card type and count on its
node, and the policies' declared facts (`PodSchema`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from solver.arrays import IntArray
from solver.model import InterPodTerms
from solver.snapshot._buffers import PREEMPTED, TERMINATING, Buffers, RunningPod
from solver.snapshot._facts import PodSchema
from solver.snapshot._intern import NONE, Interner
from solver.snapshot._nodes import NodeTable

__all__ = ["PREEMPTED", "TERMINATING", "RunningPod", "RunningPods"]


FEW_KEYS = 8
"""Up to this many keys, `find_many` looks them up one by one."""


class RunningPods:
    """The running pods of one generation: read-only column views over its rows.

    Rows are indices into the lineage's buffers; `alive[row]` says whether the row is a pod
    of this generation (a retired row is an older version of a pod, or a removed pod).
    """

    def __init__(self, buffers: Buffers, length: int, alive: npt.NDArray[np.bool_]) -> None:
        self._buf = buffers
        self.length = length
        self.alive = alive
        alive.flags.writeable = False

    # ------------------------------------------------------------------ construction

    @classmethod
    def empty(cls, nodes: NodeTable, schema: PodSchema) -> RunningPods:
        return cls(Buffers(nodes, schema), 0, np.zeros(0, dtype=bool))

    @property
    def nodes(self) -> NodeTable:
        return self._buf.nodes

    @property
    def schema(self) -> PodSchema:
        return self._buf.schema

    def at_tip(self) -> bool:
        """No later generation has appended rows past this one."""
        return self._buf.length == self.length

    def extend(self, pods: Sequence[RunningPod], retire: Iterable[int] = ()) -> RunningPods:
        """A new generation with `pods` appended and the rows `retire` retired.

        Appends in place when this generation is the tip of its lineage, else forks first.
        """
        base = self if self.at_tip() else self.fork(self.nodes)
        with base._buf.lock:
            if not base.at_tip():  # lost a race with another writer of this lineage
                base = base.fork(base.nodes)
            rows = base._buf.append(pods) if pods else range(base.length, base.length)
        alive = np.zeros(rows.stop, dtype=bool)
        alive[: base.length] = base.alive
        alive[rows.start : rows.stop] = True
        retired = np.fromiter(retire, dtype=np.int64)
        if base is not self and retired.size:
            retired = base._renumber(self, retired)
        alive[retired] = False
        return RunningPods(base._buf, rows.stop, alive)

    def _renumber(self, old: RunningPods, rows: IntArray) -> IntArray:
        """Rows of `old` (which this generation was forked from) in this lineage."""
        return self.find_many([old.key(int(r)) for r in rows])

    def fork(self, nodes: NodeTable) -> RunningPods:
        """A new lineage over `nodes` holding only this generation's live pods (compacted)."""
        rows = np.flatnonzero(self.alive)
        buf = self._buf.compact(rows, self.length, nodes)
        return RunningPods(buf, len(rows), np.ones(len(rows), dtype=bool))

    # ------------------------------------------------------------------ reading

    def __len__(self) -> int:
        return int(self.alive.sum())

    @property
    def retired(self) -> int:
        return self.length - len(self)

    def rows(self) -> IntArray:
        """The live rows, ascending."""
        return np.flatnonzero(self.alive)

    def key(self, row: int) -> str:
        return self._buf.keys.key(row)

    def keys(self, rows: IntArray) -> list[str]:
        """`key` of each of `rows`, read in one pass."""
        return self._buf.keys.keys(rows.tolist())

    def find(self, key: str) -> int:
        """The live row of pod `key`, or NONE."""
        row = self._buf.keys.find(key, self.length)
        return row if row != NONE and self.alive[row] else NONE

    def find_many(self, keys: Sequence[str]) -> IntArray:
        """`find` for every key at once (a few keys one by one: no array set-up)."""
        if len(keys) <= FEW_KEYS:
            return np.array([self.find(k) for k in keys], dtype=np.int64)
        rows = self._buf.keys.find_many(keys, self.length)
        found = rows != NONE
        found[found] = self.alive[rows[found]]
        return np.where(found, rows, NONE)

    @property
    def resources(self) -> tuple[str, ...]:
        """The lineage's resource axis (grows; columns beyond a generation's pods are 0)."""
        return tuple(self._buf.resources.values())

    def requests(
        self, axis: tuple[str, ...] | None = None, rows: IntArray | None = None
    ) -> IntArray:
        """[length, len(axis)] requests of every row (retired rows included) on `axis`;
        of `rows` only when given ([len(rows), len(axis)], O(rows))."""
        data = self._buf.requests.data[: self.length]
        if rows is not None:
            data = np.take(data, rows, axis=0)
        if axis is None:
            return data
        ids = [self._buf.resources.get(r) for r in axis]
        out = np.zeros((data.shape[0], len(axis)), dtype=np.int64)
        for j, i in enumerate(ids):
            if i != NONE and i < data.shape[1]:
                out[:, j] = data[:, i]
        return out

    @property
    def node(self) -> npt.NDArray[np.int32]:
        return self._buf.node.data[: self.length]

    def node_name(self, row: int) -> str:
        n = int(self._buf.node.data[row])
        return self.nodes.names[n] if n >= 0 else self._buf.missing_node[row]

    @property
    def priority(self) -> IntArray:
        return self._buf.priority.data[: self.length]

    @property
    def started(self) -> npt.NDArray[np.float64]:
        """Each row's creationTimestamp in seconds since the epoch, NaN when unknown."""
        return self._buf.started.data[: self.length]

    @property
    def gang(self) -> npt.NDArray[np.int32]:
        """Named gang id per row (see `gang_id`), NONE for a gang of one."""
        return self._buf.gang.data[: self.length]

    @property
    def gang_names(self) -> Interner:
        return self._buf.gangs

    def gang_id(self, name: str) -> int:
        return self._buf.gangs.get(name)

    def gang_name(self, ident: int) -> str:
        return self._buf.gangs.value(ident)

    @property
    def flags(self) -> npt.NDArray[np.uint8]:
        return self._buf.flags.data[: self.length]

    @property
    def queue(self) -> npt.NDArray[np.int32]:
        """The queue each row's annotation names (`queue_id`), NONE without one."""
        return self._buf.queue.data[: self.length]

    def queue_id(self, name: str) -> int:
        return self._buf.queues.get(name)

    @property
    def queue_names(self) -> Interner:
        return self._buf.queues

    @property
    def card_type(self) -> npt.NDArray[np.int32]:
        """Card type (`card_names`) each row uses on its node, NONE without card demand."""
        return self._buf.card_type.data[: self.length]

    @property
    def card_count(self) -> IntArray:
        return self._buf.card_count.data[: self.length]

    @property
    def card_names(self) -> Interner:
        return self._buf.cards

    def card_text(self, row: int) -> str | None:
        ident = int(self._buf.card_text.data[row])
        return self._buf.values.value(ident) if ident != NONE else None

    def fact(self, name: str) -> npt.NDArray[np.int32]:
        """Interned value (`value`) of a declared fact per row, NONE without one."""
        return self._buf.facts[name].data[: self.length]

    def value_id(self, text: str) -> int:
        return self._buf.values.get(text)

    def value(self, ident: int) -> str:
        return self._buf.values.value(ident)

    @property
    def label_set(self) -> npt.NDArray[np.int32]:
        """Label set id (`label_sets`) per row."""
        return self._buf.labels.data[: self.length]

    @property
    def annotation_set(self) -> npt.NDArray[np.int32]:
        """Kept-annotations set id (`label_sets`, the same table) per row."""
        return self._buf.annotations.data[: self.length]

    @property
    def label_sets(self) -> Sequence[Mapping[str, str]]:
        """The distinct label sets rows refer to (grows; ids never change meaning)."""
        return self._buf.label_sets

    def label_set_verdicts(
        self, key: Hashable, predicate: Callable[[Mapping[str, str]], bool]
    ) -> npt.NDArray[np.bool_]:
        """`predicate` of every label set (by id), evaluated once per set of the lineage:
        kept per `key` and extended as sets are added, so a selector costs each distinct
        label set once, not once per call."""
        buf = self._buf
        sets = buf.label_sets
        count = len(sets)  # the list only grows; ids below `count` are final
        with buf.verdict_lock:
            known = buf.label_verdicts.get(key, np.zeros(0, dtype=bool))
            done = len(known)
            if done < count:
                more = np.fromiter(
                    (predicate(sets[i]) for i in range(done, count)), dtype=bool, count=count - done
                )
                known = np.concatenate([known, more])
                known.flags.writeable = False
                buf.label_verdicts[key] = known
        return known

    @property
    def namespace(self) -> npt.NDArray[np.int32]:
        """Namespace id (`namespace_names`) per row."""
        return self._buf.namespace.data[: self.length]

    @property
    def namespace_names(self) -> Interner:
        return self._buf.namespaces

    @property
    def terms(self) -> npt.NDArray[np.int32]:
        """Pod (anti-)affinity id (`term_sets`) per row, NONE for a pod without any."""
        return self._buf.terms.data[: self.length]

    @property
    def term_sets(self) -> Sequence[InterPodTerms]:
        return self._buf.term_sets

    def labels(self, row: int) -> Mapping[str, str]:
        return self._buf.label_sets[int(self._buf.labels.data[row])]

    def annotations(self, row: int) -> Mapping[str, str]:
        """The row's annotations the schema keeps (the others are not stored)."""
        return self._buf.label_sets[int(self._buf.annotations.data[row])]

    def pod(self, row: int) -> RunningPod:
        """The row as a `RunningPod` (with the annotations the schema keeps)."""
        buf = self._buf
        requests = {
            name: int(v)
            for name, v in zip(
                buf.resources.values(), buf.requests.data[row].tolist(), strict=False
            )
            if v
        }
        gang = int(buf.gang.data[row])
        flags = int(buf.flags.data[row])
        terms = int(buf.terms.data[row])
        return RunningPod(
            key=buf.keys.key(row),
            node=self.node_name(row),
            requests=requests,
            priority=int(buf.priority.data[row]),
            gang=buf.gangs.value(gang) if gang != NONE else None,
            labels=self.labels(row),
            annotations=self.annotations(row),
            terminating=bool(flags & TERMINATING),
            preempted=bool(flags & PREEMPTED),
            terms=buf.term_sets[terms] if terms != NONE else None,
            started=None if math.isnan(started := float(buf.started.data[row])) else started,
        )
