"""Running pods as columns: one row per pod, append-only buffers shared by generations.

A snapshot generation sees rows `0 .. length-1` of its lineage's buffers, through its own
`alive` mask. Updating a pod appends a row (and, in the new generation's mask, retires the
old one); nothing is ever written below an existing generation's length, so older
generations stay valid without copies. Only a change of the node list (node indices shift,
and a running pod's card type depends on its node) or too many retired rows starts a new
lineage (`fork`), compacting the live rows.

Per row: the pod key, its node (index into the lineage's `NodeTable`, -1 for a node not in
the snapshot), its requests on the lineage's resource axis, priority, named gang, flags,
its label set, the queue its annotation names, its capacity-card type and count on its
node, and the policies' declared facts (`PodSchema`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from solver.model import (
    CARD_NAME,
    QUEUE_ANNOTATION,
    CardError,
    card_alternatives,
    card_demand,
)
from solver.snapshot._facts import PodSchema
from solver.snapshot._intern import NONE, Interner
from solver.snapshot._nodes import NodeTable

__all__ = ["PREEMPTED", "TERMINATING", "RunningPod", "RunningPods"]

IntArray = npt.NDArray[np.int64]
TERMINATING = 1  # flags bit: metadata.deletionTimestamp is set
PREEMPTED = 2  # flags bit: DisruptionTarget=True, reason PreemptionByScheduler


@dataclass(frozen=True)
class RunningPod:
    """One running pod as a reader hands it to the snapshot (never kept as an object)."""

    key: str  # namespace/name
    node: str
    requests: Mapping[str, int]
    priority: int = 0
    gang: str | None = None  # id of its named gang; None: a gang of one
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    terminating: bool = False
    preempted: bool = False


class _Growable:
    """A 1-D or 2-D numpy buffer that doubles when full; rows below `size` never move."""

    def __init__(self, dtype: type, width: int | None = None, fill: int = 0) -> None:
        self.width = width
        self.fill = fill
        shape = (16,) if width is None else (16, width)
        self.data: np.ndarray = np.full(shape, fill, dtype=dtype)

    def reserve(self, size: int) -> None:
        if size <= self.data.shape[0]:
            return
        capacity = max(size, 2 * self.data.shape[0])
        shape = (capacity,) if self.width is None else (capacity, self.data.shape[1])
        grown = np.full(shape, self.fill, dtype=self.data.dtype)
        grown[: self.data.shape[0]] = self.data
        self.data = grown

    def widen(self, width: int) -> None:
        """More columns (2-D only); the new columns hold `fill` for every existing row."""
        if self.width is None or width <= self.data.shape[1]:
            return
        wider = np.full((self.data.shape[0], width), self.fill, dtype=self.data.dtype)
        wider[:, : self.data.shape[1]] = self.data
        self.data = wider
        self.width = width


class _Buffers:
    """The append-only storage of one lineage (see the module docstring)."""

    def __init__(self, nodes: NodeTable, schema: PodSchema) -> None:
        self.nodes = nodes
        self.schema = schema
        self.lock = threading.Lock()
        self.length = 0
        self.keys: list[str] = []
        self.latest: dict[str, int] = {}  # key -> its newest row
        self.prev = _Growable(np.int32, fill=NONE)  # row -> older row of the same key
        self.node = _Growable(np.int32, fill=NONE)
        self.missing_node: dict[int, str] = {}  # row -> node name, when not in `nodes`
        self.resources = Interner()
        self.requests = _Growable(np.int64, width=0)
        self.priority = _Growable(np.int64)
        self.gang = _Growable(np.int32, fill=NONE)
        self.flags = _Growable(np.uint8)
        self.labels = _Growable(np.int32, fill=NONE)
        self.annotations = _Growable(np.int32, fill=NONE)  # the kept annotations (schema)
        self.queue = _Growable(np.int32, fill=NONE)
        self.card_text = _Growable(np.int32, fill=NONE)  # interned `volcano.sh/card.name`
        self.card_type = _Growable(np.int32, fill=NONE)
        self.card_count = _Growable(np.int64)
        self.facts = {f.name: _Growable(np.int32, fill=NONE) for f in schema.facts}
        # Interners: shared strings of every column above.
        self.gangs = Interner()
        self.queues = Interner()
        self.cards = Interner()
        self.values = Interner()  # fact values and card annotations
        self.label_sets: list[Mapping[str, str]] = []  # labels and kept annotations, interned
        self._label_ids: dict[frozenset[tuple[str, str]], int] = {}
        self.kept = schema.annotation_keys

    # ------------------------------------------------------------------ writing

    def _label_set(self, labels: Mapping[str, str]) -> int:
        items = frozenset(labels.items())
        found = self._label_ids.get(items)
        if found is None:
            found = self._label_ids[items] = len(self.label_sets)
            self.label_sets.append(dict(labels))
        return found

    def _card(self, text_id: int, node: int, requests: Mapping[str, int]) -> tuple[int, int]:
        """(card type id, cards) a running pod uses on its node, or (NONE, 0)."""
        if text_id == NONE:
            return NONE, 0
        text = self.values.value(text_id)
        cards = self.nodes.cards
        try:
            demand = card_demand(text, requests, cards.resource_of)
        except CardError:
            return NONE, 0
        if demand is None:
            return NONE, 0
        offered = cards.per_node.get(self.nodes.names[node], {}) if node >= 0 else {}
        chosen = next((a for a in demand.alternatives if a in offered), demand.alternatives[0])
        return self.cards.add(chosen), demand.count

    def append(self, pods: list[RunningPod]) -> range:
        """Store `pods` as new rows (caller holds the lineage's writer role); their rows."""
        start = self.length
        end = start + len(pods)
        for name in {r for p in pods for r in p.requests}:
            self.resources.add(name)
        width = len(self.resources)
        columns = [
            self.prev,
            self.node,
            self.priority,
            self.gang,
            self.flags,
            self.labels,
            self.annotations,
            self.queue,
            self.card_text,
            self.card_type,
            self.card_count,
            *self.facts.values(),
        ]
        self.requests.widen(width)
        self.requests.reserve(end)
        for column in columns:
            column.reserve(end)
        index = self.nodes.index
        r_index = {name: self.resources.get(name) for name in self.resources.values()}
        facts = list(zip(self.schema.facts, self.facts.values(), strict=True))
        # Python lists per column, written to the buffers once: numpy item writes cost more
        # than the whole row's work.
        n = len(pods)
        prev, node_ids, priority, gang, flags = [NONE] * n, [NONE] * n, [0] * n, [NONE] * n, [0] * n
        labels, kept_ids, queue = [NONE] * n, [NONE] * n, [NONE] * n
        card_text, card_type, card_count = [NONE] * n, [NONE] * n, [0] * n
        fact_ids: list[list[int]] = [[NONE] * n for _ in facts]
        req_rows: list[int] = []
        req_cols: list[int] = []
        req_vals: list[int] = []
        for offset, pod in enumerate(pods):
            row = start + offset
            self.keys.append(pod.key)
            prev[offset] = self.latest.get(pod.key, NONE)
            self.latest[pod.key] = row
            node = index.get(pod.node, NONE)
            node_ids[offset] = node
            if node == NONE:
                self.missing_node[row] = pod.node
            for name, value in pod.requests.items():
                req_rows.append(offset)
                req_cols.append(r_index[name])
                req_vals.append(value)
            priority[offset] = pod.priority
            gang[offset] = self.gangs.add_optional(pod.gang)
            flags[offset] = (TERMINATING if pod.terminating else 0) | (
                PREEMPTED if pod.preempted else 0
            )
            labels[offset] = self._label_set(pod.labels)
            annotations = pod.annotations
            kept = {k: v for k, v in annotations.items() if k in self.kept}
            kept_ids[offset] = self._label_set(kept)
            queue[offset] = self.queues.add_optional(annotations.get(QUEUE_ANNOTATION, "").strip())
            raw_card = annotations.get(CARD_NAME)
            text = card_alternatives(raw_card) if raw_card else ()
            text_id = self.values.add("|".join(text)) if text else NONE
            card_text[offset] = text_id
            card_type[offset], card_count[offset] = self._card(text_id, node, pod.requests)
            for j, (fact, _) in enumerate(facts):
                fact_ids[j][offset] = self.values.add_optional(
                    fact.extract(pod.labels, annotations)
                )
        rows = slice(start, end)
        self.requests.data[rows] = 0
        self.requests.data[np.asarray(req_rows, dtype=np.int64) + start, req_cols] = req_vals
        for column, values in (
            (self.prev, prev),
            (self.node, node_ids),
            (self.priority, priority),
            (self.gang, gang),
            (self.flags, flags),
            (self.labels, labels),
            (self.annotations, kept_ids),
            (self.queue, queue),
            (self.card_text, card_text),
            (self.card_type, card_type),
            (self.card_count, card_count),
            *((column, ids) for (_, column), ids in zip(facts, fact_ids, strict=True)),
        ):
            column.data[rows] = values
        self.length = end
        return range(start, end)

    def compact(self, rows: IntArray, length: int, nodes: NodeTable) -> _Buffers:
        """A new lineage holding `rows` (renumbered from 0) over `nodes`: node indices are
        re-resolved by name and card types re-derived, since both depend on the nodes."""
        out = _Buffers(nodes, self.schema)
        out.resources, out.gangs, out.queues = (
            self.resources.copy(),
            self.gangs.copy(),
            self.queues.copy(),
        )
        out.cards, out.values = self.cards.copy(), self.values.copy()
        out.label_sets = list(self.label_sets)
        out._label_ids = dict(self._label_ids)
        count = len(rows)
        out.keys = [self.keys[r] for r in rows.tolist()]
        out.latest = {key: i for i, key in enumerate(out.keys)}
        old_names = self.nodes.names
        new_index = nodes.index
        node = np.full(count, NONE, dtype=np.int32)
        for i, r in enumerate(rows.tolist()):
            n = int(self.node.data[r])
            name = old_names[n] if n >= 0 else self.missing_node[r]
            node[i] = new_index.get(name, NONE)
            if node[i] == NONE:
                out.missing_node[i] = name
        copies = [
            (out.node, node),
            (out.requests, self.requests.data[:length][rows]),
            (out.priority, self.priority.data[:length][rows]),
            (out.gang, self.gang.data[:length][rows]),
            (out.flags, self.flags.data[:length][rows]),
            (out.labels, self.labels.data[:length][rows]),
            (out.annotations, self.annotations.data[:length][rows]),
            (out.queue, self.queue.data[:length][rows]),
            (out.card_text, self.card_text.data[:length][rows]),
            *((out.facts[name], col.data[:length][rows]) for name, col in self.facts.items()),
        ]
        out.requests.widen(self.requests.data.shape[1])
        for column, values in copies:
            column.reserve(count)
            column.data[:count] = values
        for column in (out.prev, out.card_type, out.card_count):
            column.reserve(count)
        names = self.resources.values()
        for i in np.flatnonzero(out.card_text.data[:count] != NONE).tolist():
            requests = {
                name: int(v) for name, v in zip(names, out.requests.data[i].tolist(), strict=False)
            }
            out.card_type.data[i], out.card_count.data[i] = out._card(
                int(out.card_text.data[i]), int(node[i]), requests
            )
        out.length = count
        return out


class RunningPods:
    """The running pods of one generation: read-only column views over its rows.

    Rows are indices into the lineage's buffers; `alive[row]` says whether the row is a pod
    of this generation (a retired row is an older version of a pod, or a removed pod).
    """

    def __init__(self, buffers: _Buffers, length: int, alive: npt.NDArray[np.bool_]) -> None:
        self._buf = buffers
        self.length = length
        self.alive = alive
        alive.flags.writeable = False

    # ------------------------------------------------------------------ construction

    @classmethod
    def empty(cls, nodes: NodeTable, schema: PodSchema) -> RunningPods:
        return cls(_Buffers(nodes, schema), 0, np.zeros(0, dtype=bool))

    @property
    def nodes(self) -> NodeTable:
        return self._buf.nodes

    @property
    def schema(self) -> PodSchema:
        return self._buf.schema

    def at_tip(self) -> bool:
        """No later generation has appended rows past this one."""
        return self._buf.length == self.length

    def extend(self, pods: list[RunningPod], retire: Iterable[int] = ()) -> RunningPods:
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
        keys = [old.key(int(r)) for r in rows]
        return np.array([self.find(k) for k in keys], dtype=np.int64)

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
        return self._buf.keys[row]

    def find(self, key: str) -> int:
        """The live row of pod `key`, or NONE."""
        buf = self._buf
        row = buf.latest.get(key, NONE)
        while row >= self.length:
            row = int(buf.prev.data[row])
        return row if row != NONE and self.alive[row] else NONE

    @property
    def resources(self) -> tuple[str, ...]:
        """The lineage's resource axis (grows; columns beyond a generation's pods are 0)."""
        return tuple(self._buf.resources.values())

    def requests(self, axis: tuple[str, ...] | None = None) -> IntArray:
        """[length, len(axis)] requests of every row (retired rows included) on `axis`."""
        data = self._buf.requests.data[: self.length]
        if axis is None:
            return data
        ids = [self._buf.resources.get(r) for r in axis]
        out = np.zeros((self.length, len(axis)), dtype=np.int64)
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
        return RunningPod(
            key=buf.keys[row],
            node=self.node_name(row),
            requests=requests,
            priority=int(buf.priority.data[row]),
            gang=buf.gangs.value(gang) if gang != NONE else None,
            labels=self.labels(row),
            annotations=self.annotations(row),
            terminating=bool(flags & TERMINATING),
            preempted=bool(flags & PREEMPTED),
        )
