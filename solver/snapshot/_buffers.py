"""The append-only storage behind `RunningPods`: numpy columns shared by generations.

A snapshot generation sees rows `0 .. length-1` of its lineage's buffers, through its own
`alive` mask. Updating a pod appends a row (and, in the new generation's mask, retires the
old one); nothing is ever written below an existing generation's length, so older
generations stay valid without copies. Only a change of the node list (node indices shift,
and a running pod's card type depends on its node) or too many retired rows starts a new
lineage (`compact`), keeping only the live rows.

Appending is a bulk column write. Running pods come in large families (the replicas of one
template, the ranks of one job) that differ only in key and node: everything else a row
holds — requests, priority, gang, label set, queue, card demand, the policies' facts — is
derived once per distinct *profile* of one `append` call and scattered to the rows with
numpy, so a 100,000-pod bind costs a dictionary lookup per pod, not 100,000 derivations.
Keys live in `PodKeys` (one byte buffer and a numpy hash table), not one `str` per row.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Hashable, Mapping, Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from solver.arrays import IntArray
from solver.model import (
    CARD_NAME,
    CardError,
    InterPodTerms,
    card_alternatives,
    card_demand,
    pod_queue,
)
from solver.snapshot._facts import PodSchema
from solver.snapshot._intern import NONE, Interner
from solver.snapshot._keys import PodKeys
from solver.snapshot._nodes import NodeTable

__all__ = ["EMPTY_MAP", "PREEMPTED", "TERMINATING", "Buffers", "RunningPod"]

TERMINATING = 1  # flags bit: metadata.deletionTimestamp is set
PREEMPTED = 2  # flags bit: DisruptionTarget=True, reason PreemptionByScheduler
EMPTY_MAP: Mapping[str, str] = {}  # shared default for labels and annotations; never written


class RunningPod(NamedTuple):
    """One running pod as a reader hands it to the snapshot (never kept as an object).

    A named tuple, not a dataclass: PutSnapshot builds hundreds of thousands of them.
    """

    key: str  # namespace/name
    node: str
    requests: Mapping[str, int]
    priority: int = 0
    gang: str | None = None  # id of its named gang; None: a gang of one
    labels: Mapping[str, str] = EMPTY_MAP
    annotations: Mapping[str, str] = EMPTY_MAP
    terminating: bool = False
    preempted: bool = False
    terms: InterPodTerms | None = None  # its pod (anti-)affinity, None without any
    started: float | None = None  # creationTimestamp, seconds since the epoch


class _Growable:
    """A 1-D or 2-D numpy buffer that grows by doubling; rows below `size` never move.

    Rows are initialised to `fill` only when reserved: the spare capacity of a large
    buffer is untouched virtual memory, not resident pages, so reserving generously costs
    no memory until rows arrive (and a 1,000-row delta does not pay for filling 200k).
    """

    def __init__(self, dtype: type, width: int | None = None, fill: float = 0) -> None:
        self.width = width
        self.fill = fill
        shape = (16,) if width is None else (16, width)
        self.data: np.ndarray = np.full(shape, fill, dtype=dtype)
        self.filled = 16  # rows initialised so far

    def reserve(self, size: int) -> None:
        if size > self.data.shape[0]:
            # Twice what is asked: a snapshot built at N rows takes N more before it moves.
            capacity = max(2 * size, 2 * self.data.shape[0])
            shape = (capacity,) if self.width is None else (capacity, self.data.shape[1])
            grown = np.empty(shape, dtype=self.data.dtype)
            grown[: self.filled] = self.data[: self.filled]
            self.data = grown
        if size > self.filled:
            self.data[self.filled : size] = self.fill
            self.filled = size

    def widen(self, width: int) -> None:
        """More columns (2-D only); the new columns hold `fill` for every existing row."""
        if self.width is None or width <= self.data.shape[1]:
            return
        wider = np.empty((self.data.shape[0], width), dtype=self.data.dtype)
        wider[: self.filled, : self.data.shape[1]] = self.data[: self.filled]
        wider[: self.filled, self.data.shape[1] :] = self.fill
        self.data = wider
        self.width = width


class _Profile(NamedTuple):
    """What a row holds besides its key and node, derived once per distinct pod profile."""

    requests: Mapping[str, int]
    priority: int
    gang: int
    flags: int
    labels: int
    annotations: int
    queue: int
    card_text: int
    card_alternatives: tuple[str, ...]  # () without a resolvable card demand
    card_count: int
    namespace: int
    terms: int
    facts: tuple[int, ...]


_SCALARS = (
    "priority",
    "gang",
    "flags",
    "labels",
    "annotations",
    "queue",
    "card_text",
    "card_count",
    "namespace",
    "terms",
)
"""The `_Profile` fields written as they are to the column of the same name."""


class Buffers:
    """The append-only storage of one lineage (see the module docstring)."""

    def __init__(self, nodes: NodeTable, schema: PodSchema) -> None:
        self.nodes = nodes
        self.schema = schema
        self.lock = threading.Lock()
        self.length = 0
        self.keys = PodKeys()
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
        self.namespace = _Growable(np.int32, fill=NONE)
        self.terms = _Growable(np.int32, fill=NONE)  # index into term_sets
        self.started = _Growable(np.float64, fill=math.nan)  # per row, not per profile
        self.facts = {f.name: _Growable(np.int32, fill=NONE) for f in schema.facts}
        # Interners: shared strings of every column above.
        self.gangs = Interner()
        self.queues = Interner()
        self.cards = Interner()
        self.values = Interner()  # fact values and card annotations
        self.namespaces = Interner()
        self.term_sets: list[InterPodTerms] = []  # distinct pod (anti-)affinity, interned
        self.label_verdicts: dict[Hashable, npt.NDArray[np.bool_]] = {}  # per selector, by set
        self.verdict_lock = threading.Lock()
        self._term_ids: dict[InterPodTerms, int] = {}
        self.label_sets: list[Mapping[str, str]] = []  # labels and kept annotations, interned
        self._label_ids: dict[frozenset[tuple[str, str]], int] = {}
        self.kept = schema.annotation_keys

    # ------------------------------------------------------------------ derivations

    def _label_set(self, labels: Mapping[str, str]) -> int:
        items = frozenset(labels.items())
        found = self._label_ids.get(items)
        if found is None:
            found = self._label_ids[items] = len(self.label_sets)
            self.label_sets.append(dict(labels))
        return found

    def _term_set(self, terms: InterPodTerms | None) -> int:
        if terms is None:
            return NONE
        found = self._term_ids.get(terms)
        if found is None:
            found = self._term_ids[terms] = len(self.term_sets)
            self.term_sets.append(terms)
        return found

    def _profile(self, pod: RunningPod) -> _Profile:
        annotations = pod.annotations
        raw_card = annotations.get(CARD_NAME)
        text = card_alternatives(raw_card) if raw_card else ()
        alternatives: tuple[str, ...] = ()
        count = 0
        try:
            demand = card_demand("|".join(text), pod.requests, self.nodes.cards.resource_of)
        except CardError:
            demand = None
        if demand is not None:
            alternatives, count = demand.alternatives, demand.count
        return _Profile(
            requests=pod.requests,
            priority=pod.priority,
            gang=self.gangs.add_optional(pod.gang),
            flags=(TERMINATING if pod.terminating else 0) | (PREEMPTED if pod.preempted else 0),
            labels=self._label_set(pod.labels),
            annotations=self._label_set({k: v for k, v in annotations.items() if k in self.kept}),
            queue=self.queues.add_optional(pod_queue(pod.labels, annotations) or ""),
            card_text=self.values.add("|".join(text)) if text else NONE,
            card_alternatives=alternatives,
            card_count=count,
            namespace=self.namespaces.add(pod.key.partition("/")[0]),
            terms=self._term_set(pod.terms),
            facts=tuple(
                self.values.add_optional(f.extract(pod.labels, annotations))
                for f in self.schema.facts
            ),
        )

    def _card_type(self, alternatives: tuple[str, ...], node: int) -> int:
        """The card type a pod with these alternatives uses on `node`: the first one the
        node offers (the first alternative when the node is unknown or offers none)."""
        offered = self.nodes.cards.per_node.get(self.nodes.names[node], {}) if node >= 0 else {}
        return self.cards.add(next((a for a in alternatives if a in offered), alternatives[0]))

    # ------------------------------------------------------------------ writing

    def _columns(self) -> list[_Growable]:
        return [
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
            self.namespace,
            self.terms,
            self.started,
            *self.facts.values(),
        ]

    def append(self, pods: Sequence[RunningPod]) -> range:
        """Store `pods` as new rows (caller holds the lineage's writer role); their rows."""
        start = self.length
        n = len(pods)
        end = start + n
        index = self.nodes.index
        profiles: dict[tuple[object, ...], int] = {}
        derived: list[_Profile] = []
        node_ids, profile_of = [NONE] * n, [0] * n
        # A map's content once per map object: readers share one map among the pods
        # declaring the same content (the pods keep them alive, so ids are not reused).
        contents: dict[int, tuple[tuple[str, object], ...]] = {}
        for offset, pod in enumerate(pods):
            node = index.get(pod.node, NONE)
            if node == NONE:
                self.missing_node[start + offset] = pod.node
            node_ids[offset] = node
            requests, labels, annotations = pod.requests, pod.labels, pod.annotations
            if (req := contents.get(id(requests))) is None:
                req = contents[id(requests)] = tuple(requests.items())
            if (lab := contents.get(id(labels))) is None:
                lab = contents[id(labels)] = tuple(labels.items())
            if (ann := contents.get(id(annotations))) is None:
                ann = contents[id(annotations)] = tuple(annotations.items())
            signature = (
                req,
                lab,
                ann,
                pod.priority,
                pod.gang,
                pod.terminating,
                pod.preempted,
                pod.key.partition("/")[0],
                pod.terms,
            )
            found = profiles.get(signature)
            if found is None:
                found = profiles[signature] = len(derived)
                derived.append(self._profile(pod))
            profile_of[offset] = found
        self._write(start, end, derived, np.asarray(profile_of, dtype=np.int64), node_ids)
        self.started.data[start:end] = [
            math.nan if pod.started is None else pod.started for pod in pods
        ]
        self.keys.append([pod.key for pod in pods])
        self.length = end
        return range(start, end)

    def _write(
        self,
        start: int,
        end: int,
        derived: list[_Profile],
        profile_of: IntArray,
        node_ids: list[int],
    ) -> None:
        """Scatter the per-profile values to rows `start .. end-1`."""
        for name in {r for p in derived for r in p.requests}:
            self.resources.add(name)
        self.requests.widen(len(self.resources))
        self.requests.reserve(end)
        for column in self._columns():
            column.reserve(end)
        width = self.requests.data.shape[1]
        requests = np.zeros((len(derived), width), dtype=np.int64)
        for p, profile in enumerate(derived):
            for name, value in profile.requests.items():
                requests[p, self.resources.get(name)] = value
        rows = slice(start, end)
        self.requests.data[rows] = requests[profile_of]
        self.node.data[rows] = node_ids
        table = np.array(
            [[*(getattr(p, name) for name in _SCALARS), *p.facts] for p in derived],
            dtype=np.int64,
        ).reshape(len(derived), len(_SCALARS) + len(self.facts))
        per_row = table[profile_of]
        targets = [*(getattr(self, name) for name in _SCALARS), *self.facts.values()]
        for j, column in enumerate(targets):
            column.data[rows] = per_row[:, j]
        # Card types depend on the node: only rows with a card demand, one choice per
        # (profile, node).
        with_cards = np.array([bool(p.card_alternatives) for p in derived] + [False])
        chosen: dict[tuple[int, int], int] = {}
        card_type = np.full(end - start, NONE, dtype=np.int32)
        for offset in np.flatnonzero(with_cards[profile_of]).tolist():
            pair = (int(profile_of[offset]), node_ids[offset])
            if pair not in chosen:
                chosen[pair] = self._card_type(derived[pair[0]].card_alternatives, pair[1])
            card_type[offset] = chosen[pair]
        self.card_type.data[rows] = card_type

    def compact(self, rows: IntArray, length: int, nodes: NodeTable) -> Buffers:
        """A new lineage holding `rows` (renumbered from 0) over `nodes`: node indices are
        re-resolved by name and card types re-derived, since both depend on the nodes."""
        out = Buffers(nodes, self.schema)
        out.resources, out.gangs, out.queues = (
            self.resources.copy(),
            self.gangs.copy(),
            self.queues.copy(),
        )
        out.cards, out.values = self.cards.copy(), self.values.copy()
        out.namespaces = self.namespaces.copy()
        out.label_sets = list(self.label_sets)
        out._label_ids = dict(self._label_ids)
        out.term_sets = list(self.term_sets)
        out._term_ids = dict(self._term_ids)
        out.label_verdicts = dict(self.label_verdicts)  # label set ids are kept
        count = len(rows)
        out.keys = self.keys.take(rows)
        # Old node index -> new node index (NONE: gone), then by name for rows whose node
        # was already missing.
        remap = np.array(
            [nodes.index.get(name, NONE) for name in self.nodes.names] + [NONE], dtype=np.int32
        )
        old_node = self.node.data[:length][rows]
        node = remap[old_node]  # NONE (-1) picks the trailing NONE
        for i in np.flatnonzero(node == NONE).tolist():
            n = int(old_node[i])
            name = self.nodes.names[n] if n >= 0 else self.missing_node[int(rows[i])]
            node[i] = nodes.index.get(name, NONE)
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
            (out.namespace, self.namespace.data[:length][rows]),
            (out.terms, self.terms.data[:length][rows]),
            (out.started, self.started.data[:length][rows]),
            *((out.facts[name], col.data[:length][rows]) for name, col in self.facts.items()),
        ]
        out.requests.widen(self.requests.data.shape[1])
        for column, values in copies:
            column.reserve(count)
            column.data[:count] = values
        for column in (out.card_type, out.card_count):
            column.reserve(count)
        names = self.resources.values()
        demands: dict[tuple[int, bytes], tuple[tuple[str, ...], int]] = {}
        for i in np.flatnonzero(out.card_text.data[:count] != NONE).tolist():
            text, request_row = int(out.card_text.data[i]), out.requests.data[i]
            known = demands.get((text, request_row.tobytes()))
            if known is None:
                requests = dict(zip(names, request_row.tolist(), strict=False))
                try:
                    demand = card_demand(out.values.value(text), requests, nodes.cards.resource_of)
                except CardError:
                    demand = None
                known = (demand.alternatives, demand.count) if demand is not None else ((), 0)
                demands[(text, request_row.tobytes())] = known
            if known[0]:
                out.card_type.data[i] = out._card_type(known[0], int(node[i]))
                out.card_count.data[i] = known[1]
        out.length = count
        return out
