"""Volcano's `capacity-card` quotas (reference/volcano.md §1), as a `QuotaMode`.

* **Quotas**: Queue annotation `volcano.sh/card.quota` (`{"NVIDIA-A100": 10}`) and cpu/memory
  from `spec.capability`; a leaf queue's unset quota is zero (upstream), an ancestor's unset
  quota is no limit (the hierarchical extension); realCapability = capability.
* **Usage**: a running card pod uses its card type on its node (the first alternative the
  node offers) and, unless `cardUnlimitedCpuMemory`, its cpu and memory.
* **Request** of a job entering its queue (GetMinResources): its pods' card demand (else the
  PodGroup's `volcano.sh/card.request`) keyed `card:A|B`, plus minResources cpu/memory (left
  out when `cardUnlimitedCpuMemory` and the job has cards).
* **Gate**, with the upstream reason names: cpu/memory and single cards
  `used + request ≤ capability`; an alternative `A|B`: job mode (enqueue)
  `Σ_alt used + request ≤ Σ_alt capability`; task mode: some single alternative fits alone
  (the engines then charge the card type of the node the pod lands on).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from solver.config import Plugin, SchedulerConf
from solver.features.queues import QueueInfo, QueueTree, QuotaMode, TypeQuota
from solver.model import (
    CARD_NAME,
    CARD_QUOTA,
    CARD_REQUEST,
    CardDemand,
    CardError,
    Gang,
    Pod,
    card_demand,
    parse_quota,
)
from solver.problem import Rows
from solver.quantity import CPU, MEMORY, UNLIMITED, format_quantity
from solver.snapshot import Snapshot

if TYPE_CHECKING:
    from solver.features._base import CompileContext

__all__ = ["CARD", "CardMode", "card_weight"]

CARD = "card:"  # quota dimension of a card type: `card:NVIDIA-A100`
_REASON = {CPU: "InsufficientCPUQuota", MEMORY: "InsufficientMemoryQuota"}


def card_weight(value: object) -> float:
    """nodeOrderWeight: a positive number, else 1.0 (upstream warns and uses the default)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return 1.0
    return float(value)


class CardMode(QuotaMode):
    plugin = Plugin.CAPACITY_CARD
    loop = False  # a card pod's quota use depends on its node: whole jobs, in order

    def __init__(self, conf: SchedulerConf) -> None:
        super().__init__(conf)
        flag = conf.arguments(self.plugin).get("cardUnlimitedCpuMemory", False)
        self.unlimited_cpu_memory = flag if isinstance(flag, bool) else False

    @property
    def key(self) -> Hashable:
        return (self.plugin, self.hierarchical, self.unlimited_cpu_memory)

    # ------------------------------------------------------------------ the tree

    def capabilities(self, snapshot: Snapshot, tree: QueueTree) -> None:
        card_names = set(snapshot.nodes.cards.total)
        for q in tree.queues.values():
            spec_cap = q.spec.capability if q.spec else {}
            quota: dict[str, int] = {}
            if q.spec is not None:
                quota, warning = parse_quota(q.spec.annotations.get(CARD_QUOTA))
                if warning:
                    tree.notes.append(f"queue {q.name}: annotation {CARD_QUOTA} ignored: {warning}")
            unset = 0 if q.leaf and not q.implicit else UNLIMITED
            cap = {r: spec_cap[r] if spec_cap.get(r, 0) > 0 else unset for r in (CPU, MEMORY)}
            for name in card_names | set(quota):
                cap[CARD + name] = quota.get(name, unset)
            q.capability = cap
            q.real_capability = dict(cap)

    def _quota_use(
        self, requests: dict[str, int], plain: dict[str, int], cards: dict[str, int]
    ) -> dict[str, int]:
        out = {CARD + name: v for name, v in cards.items() if v}
        source = plain if self.unlimited_cpu_memory else requests
        out.update({r: v for r, v in source.items() if r in (CPU, MEMORY) and v})
        return out

    def queue_allocated(self, snapshot: Snapshot, q: int) -> dict[str, int]:
        usage = snapshot.usage
        return self._quota_use(
            _row(snapshot.running.resources, usage.queue_requests, q),
            _row(snapshot.running.resources, usage.queue_plain, q),
            _row(snapshot.running.card_names.values(), usage.queue_cards, q),
        )

    def gang_allocated(self, snapshot: Snapshot, gang_id: str) -> dict[str, int]:
        usage = snapshot.usage
        g = snapshot.running.gang_id(gang_id)
        return self._quota_use(
            _row(snapshot.running.resources, usage.gang_requests, g),
            _row(snapshot.running.resources, usage.gang_plain, g),
            _row(snapshot.running.card_names.values(), usage.gang_cards, g),
        )

    def gang_minimum(self, snapshot: Snapshot, gang: Gang) -> dict[str, int]:
        """The job's card request over its pods, running and pending (`card:A|B` keys)."""
        running = snapshot.running
        cards = self._demands(snapshot.pending_of(gang.id), snapshot)
        for row in snapshot.rows_of_gang(gang.id).tolist():
            text = running.card_text(row)
            if text is not None and running.card_type[row] >= 0:
                cards[CARD + text] = cards.get(CARD + text, 0) + int(running.card_count[row])
        return self._request(gang, cards)

    def request(self, gang: Gang, pending: Sequence[Pod], snapshot: Snapshot) -> dict[str, int]:
        return self._request(gang, self._demands(pending, snapshot))

    @staticmethod
    def _demands(pods: Sequence[Pod], snapshot: Snapshot) -> dict[str, int]:
        resource_of = snapshot.nodes.cards.resource_of
        cards: dict[str, int] = {}
        for pod in pods:
            try:
                demand = card_demand(pod.annotations.get(CARD_NAME), pod.requests, resource_of)
            except CardError:
                continue
            if demand is not None:
                cards[CARD + demand.key] = cards.get(CARD + demand.key, 0) + demand.count
        return cards

    def _request(self, gang: Gang, cards: dict[str, int]) -> dict[str, int]:
        if not cards:
            annotated, _ = parse_quota(gang.annotations.get(CARD_REQUEST))
            cards = {CARD + k: v for k, v in annotated.items() if v > 0}
        out = dict(cards)
        if not (self.unlimited_cpu_memory and cards):
            out.update({r: v for r, v in gang.min_resources.items() if r in (CPU, MEMORY)})
        return out

    # ------------------------------------------------------------------ gates

    def gate(
        self, tree: QueueTree, leaf: str, request: dict[str, int], *, enqueue: bool
    ) -> str | None:
        spec = tree.queues[leaf].spec
        if spec is not None and not spec.capability and CARD_QUOTA not in spec.annotations:
            return (
                f"EmptyQueueCapability: queue {leaf} has neither spec.capability nor {CARD_QUOTA}"
            )
        for name in tree.path(leaf):
            q = tree.queues[name]
            for dim, v in sorted(request.items()):
                if v <= 0:
                    continue
                why = _gate_dim(q, dim, v, enqueue=enqueue)
                if why:
                    return why
        return None

    def reason(self, dim: str, dims: Sequence[str]) -> str:
        if not any(d.startswith(CARD) for d in dims):
            return super().reason(dim, dims)
        return _REASON.get(dim, "InsufficientScalarQuota")

    # ------------------------------------------------------------------ the Problem's dims

    def type_quota(self, ctx: CompileContext, tree: QueueTree | None) -> TypeQuota:
        """cpu, memory and one dimension per card type; a card pod's card dimension is the
        card type of the node it lands on."""
        from_tree = {
            d.removeprefix(CARD)
            for q in (tree.queues.values() if tree is not None else ())
            for d in q.capability
            if d.startswith(CARD)
        }
        dims = (CPU, MEMORY, *sorted(CARD + c for c in {*ctx.nodes.cards.total, *from_tree}))
        index = {d: i for i, d in enumerate(dims)}
        plans = card_plans(ctx)
        demand = np.zeros((ctx.num_types, len(dims)), dtype=np.int64)
        node_dims: list[tuple[int, ...]] = []
        counts = np.zeros(ctx.num_types, dtype=np.int64)
        rows: dict[tuple[str, ...], int] = {}
        matrix: list[np.ndarray] = []
        of_type = np.zeros(ctx.num_types, dtype=np.int64)
        no_card = np.full(len(ctx.nodes), -1, dtype=np.int64)
        for t in range(ctx.num_types):
            plan = plans[t]
            card = plan if isinstance(plan, CardDemand) else None
            for j, r in enumerate((CPU, MEMORY)):
                if not (self.unlimited_cpu_memory and card) and r in ctx.resources:
                    demand[t, j] = ctx.type_demand[t][ctx.resources.index(r)]
            alternatives = card.alternatives if card else ()
            if alternatives not in rows:
                rows[alternatives] = len(matrix)
                matrix.append(_node_dims(ctx, alternatives, index) if alternatives else no_card)
            of_type[t] = rows[alternatives]
            if card is None:
                node_dims.append(())
                continue
            counts[t] = card.count
            node_dims.append(tuple(index[CARD + a] for a in card.alternatives if CARD + a in index))
        return TypeQuota(
            dims=dims,
            demand=demand,
            node_dims=tuple(node_dims),
            node_dim_count=counts,
            node_dim=Rows(
                np.array(matrix, dtype=np.int64).reshape(len(matrix), len(ctx.nodes)), of_type
            ),
        )


def card_plans(ctx: CompileContext) -> list[CardDemand | CardError | None]:
    """Per pod type: its card demand, the error resolving it, or None (memoised per call)."""

    def compute() -> list[CardDemand | CardError | None]:
        resource_of = ctx.nodes.cards.resource_of
        out: list[CardDemand | CardError | None] = []
        for t in range(ctx.num_types):
            pod = ctx.first_pod(t)
            try:
                out.append(card_demand(pod.annotations.get(CARD_NAME), pod.requests, resource_of))
            except CardError as err:
                out.append(err)
        return out

    return ctx.memo(("cards", "plans"), compute)


def offered(ctx: CompileContext, card: str) -> np.ndarray:
    """[N] the node offers card type `card` (memoised per node generation)."""

    def compute() -> np.ndarray:
        per_node = ctx.nodes.cards.per_node
        row = np.array([card in per_node.get(name, {}) for name in ctx.nodes.names], dtype=bool)
        row.flags.writeable = False
        return row

    return ctx.nodes.memo(("cards", "offered", card), compute)


def first_offered(ctx: CompileContext, alternatives: tuple[str, ...]) -> np.ndarray:
    """[N] index of the first alternative each node offers, -1 when none."""
    pick = np.full(len(ctx.nodes), -1, dtype=np.int64)
    for i, card in enumerate(alternatives):
        pick = np.where((pick < 0) & offered(ctx, card), i, pick)
    return pick


def _node_dims(
    ctx: CompileContext, alternatives: tuple[str, ...], index: dict[str, int]
) -> np.ndarray:
    pick = first_offered(ctx, alternatives)
    dims = np.array([index.get(CARD + a, -1) for a in alternatives], dtype=np.int64)
    return np.where(pick >= 0, dims[np.maximum(pick, 0)], -1)


def _gate_dim(q: QueueInfo, dim: str, v: int, *, enqueue: bool) -> str | None:
    def used(d: str) -> int:
        value = q.allocated.get(d, 0)
        if enqueue:
            value += q.inqueue.get(d, 0) - q.elastic.get(d, 0)
        return value

    if not dim.startswith(CARD):
        limit = q.real(dim)
        if limit < UNLIMITED and used(dim) + v > limit:
            return (
                f"{_REASON.get(dim, 'InsufficientScalarQuota')}: queue {q.name}: {dim} "
                f"{format_quantity(dim, v)} requested + {format_quantity(dim, used(dim))} "
                f"in use > capability {format_quantity(dim, limit)}"
            )
        return None
    alternatives = [CARD + a for a in dim.removeprefix(CARD).split("|")]
    limits = [q.real(a) for a in alternatives]
    if any(limit >= UNLIMITED for limit in limits):
        return None
    if enqueue or len(alternatives) == 1:
        total = sum(used(a) for a in alternatives) + v
        if total > sum(limits):
            return (
                f"InsufficientScalarQuota: queue {q.name}: {dim.removeprefix(CARD)} "
                f"{v} requested + {total - v} in use > quota {sum(limits)}"
            )
    elif not any(used(a) + v <= limit for a, limit in zip(alternatives, limits, strict=True)):
        return (
            f"InsufficientScalarQuota: queue {q.name}: no card type of "
            f"{dim.removeprefix(CARD)} has quota for {v}"
        )
    return None


def _row(names: Sequence[str], matrix: np.ndarray, index: int) -> dict[str, int]:
    if index < 0 or index >= matrix.shape[0]:
        return {}
    return {n: int(v) for n, v in zip(names, matrix[index].tolist(), strict=False) if v}
