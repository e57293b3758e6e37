"""What a feature is, and the context its compile step writes into.

A feature is one policy family (a Volcano/Koordinator/Godel plugin or a group of them):
its package holds the snapshot state it memoises, its compile step (this module's
`Feature.compile`, writing into a `CompileContext`), its Problem block, its greedy step and
its CP-SAT module. `solver.compile` runs the registered features in order; the engines
iterate the hooks their registries list.

The context is the one place a compile step writes: eligibility filters and scores per pod
type, gangs a feature blocks or refuses to enqueue, the unit order, its block and notes.
Filters and scores are kept by identity, so types that share them share rows in the
Problem (`Rows`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import numpy as np

from solver.config import SchedulerConf
from solver.features._steps import AfterSteps, CpsatSteps, DecideSteps, ExplainSteps, GreedySteps
from solver.model import Gang, Pod
from solver.problem import Block, BoolArray, FloatArray, IntArray
from solver.snapshot import Fact, NodeTable, Snapshot, Workload

__all__ = ["CompileContext", "EnqueueGate", "Feature", "GangPlan", "combine_filters"]

T = TypeVar("T")


@dataclass(frozen=True)
class GangPlan:
    """Per gang (sorted by id): what must be placed, and what blocks it before any node is tried."""

    gang_ids: tuple[str, ...]
    need: tuple[int, ...]  # new placements required this cycle; 0 = no all-or-nothing
    pending: tuple[int, ...]  # pending member pods
    running: tuple[int, ...]  # running member pods
    requires: tuple[tuple[int, int], ...]  # (g, h): g may be placed only if h is satisfied
    unit: tuple[int, ...]  # index of the gang's unit (connected component of `requires`)
    unit_ids: tuple[str, ...]  # GangGroup id: the member gang ids joined by ","
    blocked: tuple[str | None, ...]  # why the gang can never be satisfied this cycle
    roles: tuple[tuple[tuple[str, int], ...], ...] = ()  # per gang: (task role, how many
    #   more of its pods it needs) of Volcano's minTaskMember; empty = none for any gang

    def unit_gangs(self) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in self.unit_ids]
        for g, u in enumerate(self.unit):
            out[u].append(g)
        return out


UnitKey = tuple[int, bool, float, str, str]


class EnqueueGate(Protocol):
    """A cluster-wide rule of the `enqueue` action (Volcano's `JobEnqueueableFn` of a
    plugin that is not a queue's quota): asked for each job in queue order after the quota
    plugin's own gate; a job every gate permits is admitted by all of them."""

    walked: bool  # a quota plugin's enqueue walk asked it (else its feature walks alone)

    def refuse(self, gang: Gang, pods: Sequence[Pod]) -> str | None:
        """Why the job may not enter now; None when this rule permits it."""

    def admit(self, gang: Gang, pods: Sequence[Pod]) -> None:
        """The job entered: count it (`JobEnqueuedFn`)."""

    def fork(self) -> EnqueueGate:
        """The gate as it stands, kept apart from later admissions (why a job was refused:
        its own rule, or the jobs admitted ahead of it)."""


@dataclass
class CompileContext:
    """One call's compile state: inputs (read-only) and what features add."""

    snapshot: Snapshot
    workload: Workload
    conf: SchedulerConf
    resources: tuple[str, ...]
    gangs: GangPlan
    type_gang: list[int]
    type_pods: list[list[str]]  # pod keys per type, in placement order (features may reorder)
    type_demand: IntArray  # [T, R]
    unit_priority: IntArray  # [U]
    unit_created: list[str]  # [U] earliest PodGroup creationTimestamp ("~" when none)
    unit_nominated: list[bool] = field(default_factory=list)  # [U] a pending pod of the unit
    #   is nominated (status.nominatedNodeName: a preemption made room for it)
    filters: list[list[tuple[BoolArray | IntArray, int]]] = field(default_factory=list)
    scores: list[list[FloatArray]] = field(default_factory=list)
    reason_texts: list[str] = field(default_factory=lambda: [""])
    blocked: dict[int, str] = field(default_factory=dict)  # gang -> why (first wins)
    not_enqueued: dict[int, str] = field(default_factory=dict)  # gang -> which quota said no
    enqueued_ahead: dict[int, tuple[str, ...]] = field(default_factory=dict)  # gang -> the
    #   jobs admitted ahead of it this cycle, when without them its queue would take it
    enqueue_gates: list[EnqueueGate] = field(default_factory=list)  # cluster-wide enqueue
    #   rules (`overcommit`) the quota plugin's enqueue walk asks besides its own
    unit_order: list[int] | None = None
    unit_share: list[float] = field(default_factory=list)  # [U] a fair-share plugin's rank
    #   of the unit inside its queue (lower first; `drf`: its dominant share); [] = none
    unit_sort_key: dict[int, Callable[[Pod], Any]] = field(default_factory=dict)  # unit ->
    #   the order of its pods (default: pod key), e.g. Koordinator's network-topology-index
    blocks: list[Block] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    score_log: list[tuple[str, tuple[int, ...], FloatArray]] = field(default_factory=list)
    _local: dict[Hashable, object] = field(default_factory=dict)
    _codes: dict[str, int] = field(default_factory=lambda: {"": 0})

    def __post_init__(self) -> None:
        self.filters = [[] for _ in self.type_gang]
        self.scores = [[] for _ in self.type_gang]

    # ------------------------------------------------------------------ inputs

    @property
    def nodes(self) -> NodeTable:
        return self.snapshot.nodes

    @property
    def num_types(self) -> int:
        return len(self.type_gang)

    def first_pod(self, t: int) -> Pod:
        return self.workload.pod_by_key[self.type_pods[t][0]]

    def memo(self, key: Hashable, compute: Callable[[], T]) -> T:
        """`compute()` once per call (per key): share one array among the types using it."""
        if key not in self._local:
            self._local[key] = compute()
        return self._local[key]  # type: ignore[return-value]

    def types_of(self, g: int) -> list[int]:
        return self.memo(("types by gang",), self._types_by_gang).get(g, [])

    def _types_by_gang(self) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {}
        for t, gang in enumerate(self.type_gang):
            out.setdefault(gang, []).append(t)
        return out

    def unit_key(self, u: int) -> UnitKey:
        """Job order inside a queue, one sort key:

        1. priority higher first;
        2. a nominated unit first: the room its victims freed is its own (kube-scheduler
           holds it for nominated pods against pods of no higher priority; in one call the
           nominated pods are placed, so they go first);
        3. the lower fair share first (`unit_share`: `drf`'s dominant share; 0 without);
        4. creation earlier first;
        5. id (the stable tie-break).
        """
        nominated = bool(self.unit_nominated and self.unit_nominated[u])
        return (
            -int(self.unit_priority[u]),
            not nominated,
            self.unit_share[u] if self.unit_share else 0.0,
            self.unit_created[u],
            self.gangs.unit_ids[u],
        )

    # ------------------------------------------------------------------ outputs

    def code(self, reason: str) -> int:
        """The index of a reason text in the Problem's `reason_texts`."""
        found = self._codes.get(reason)
        if found is None:
            found = self._codes[reason] = len(self.reason_texts)
            self.reason_texts.append(reason)
        return found

    def restrict(self, types: Sequence[int], allowed: BoolArray, reason: str) -> None:
        """Nodes where `allowed` is False are not eligible for `types`, for `reason` (the
        first failing filter, in feature order, is a node's reason)."""
        if allowed.all():
            return
        code = self.code(reason)
        for t in types:
            self.filters[t].append((allowed, code))

    def restrict_codes(self, types: Sequence[int], codes: IntArray) -> None:
        """A filter given as reason codes per node (0 = passes), from `code()`."""
        if not codes.any():
            return
        for t in types:
            self.filters[t].append((codes, -1))

    def score(self, types: Sequence[int], row: FloatArray, plugin: str) -> None:
        """Add a static node score for `types` (one row shared by all of them)."""
        if not row.any():
            return
        for t in types:
            self.scores[t].append(row)
        self.score_log.append((plugin, tuple(types), row))

    def block_gang(self, g: int, reason: str) -> None:
        self.blocked.setdefault(g, reason)

    def add_block(self, block: Block) -> None:
        self.blocks.append(block)


@dataclass(frozen=True)
class Feature:
    """One policy family: which conf plugins turn it on, what it keeps of running pods,
    how pending pods of one type must agree, its compile step, and its parts of the
    engines, the explanation and the Decision (`solver.features._steps`)."""

    name: str
    plugins: tuple[str, ...]
    compile: Callable[[CompileContext], None]
    facts: tuple[Fact, ...] = ()
    type_key: Callable[[Pod], Hashable] | None = None  # pods of one type agree on this
    #   (it reads no pod's name: compile computes it once per pod shape, `compile._shape`)
    call_type_key: Callable[[Snapshot, Workload], Callable[[Pod], Hashable]] | None = None
    #   the same, when what pods must agree on depends on the call (labels its selectors read)
    greedy: GreedySteps = field(default_factory=GreedySteps)
    cpsat: CpsatSteps = field(default_factory=CpsatSteps)
    explain: ExplainSteps = field(default_factory=ExplainSteps)
    decide: DecideSteps = field(default_factory=DecideSteps)
    after: AfterSteps | None = None
    enqueue: Callable[[CompileContext], EnqueueGate | None] | None = None
    """A cluster-wide rule of the `enqueue` action, made before any compile step runs, so
    the quota plugin's walk asks it in queue order (`CompileContext.enqueue_gates`)."""
    always: bool = False
    """On whatever the conf lists: the feature carries rules the objects themselves ask
    for (as kube-scheduler enforces a Workload API PodGroup's topology with no plugin
    named), and `plugins` turn on only the parts that name them."""

    def enabled(self, conf: SchedulerConf) -> bool:
        return self.always or any(conf.enabled(p) for p in self.plugins)


def combine_filters(filters: list[tuple[BoolArray | IntArray, int]], num_nodes: int) -> IntArray:
    """The reason code per node: the first failing filter's, 0 where all pass."""
    reasons = np.zeros(num_nodes, dtype=np.int64)
    for mask, code in filters:
        if code < 0:  # a codes row
            reasons = np.where(reasons == 0, mask, reasons)
        else:
            reasons = np.where((reasons == 0) & ~mask.astype(bool), code, reasons)
    return reasons
