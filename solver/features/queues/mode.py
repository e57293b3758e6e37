"""What a quota plugin decides: the `capacity` plugin here, `capacity-card` in `features.cards`.

A `QuotaMode` says how capabilities are derived, what a queue's running pods use of its
quota, what a job asks for when it enters its queue, how a request is gated, and on which
quota dimensions the call's pod types are counted. The tree, the order, the admission walk,
the Problem block and both engines' quota steps are shared (`tree.py`, `admission.py`,
`compile.py`, `greedy.py`, `cpsat.py`).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from solver.config import Plugin, SchedulerConf
from solver.features.devices.quota import running_shares
from solver.features.queues.order import capacity_cmp, queue_order, resorted_order
from solver.features.queues.tree import DEFAULT_QUEUE, ROOT, QueueInfo, QueueTree, sum_resources
from solver.model import (
    GPU_MILLI,
    GPU_RESOURCE,
    Gang,
    Pod,
    gpu_milli,
    in_gpu_milli,
    job_queue,
    pod_queue,
)
from solver.problem import IntArray, Rows
from solver.quantity import CPU, MEMORY, PODS, UNLIMITED, add_limits, format_quantity, sub_limit
from solver.snapshot import NONE, Snapshot, Workload

if TYPE_CHECKING:
    from solver.features._base import CompileContext


@dataclass(frozen=True)
class ExtraRow:
    """A quota row beside the queues': its name, limit and use per quota dimension, and the
    pod types that count against it (`QuotaMode.extra_rows`)."""

    name: str
    limit: list[int]
    allocated: list[int]
    types: list[int]
    queue: str = ""  # the queue it belongs to
    noun: str = "limit"  # what its limit is called in a reason


@dataclass(frozen=True)
class TypeQuota:
    """The quota dimensions of a call, and what one pod of each type uses of them."""

    dims: tuple[str, ...]  # [D]
    demand: IntArray  # [T, D] node-independent use
    node_dims: tuple[tuple[int, ...], ...] = ()  # [T] node-dependent dimensions, preferred first
    node_dim_count: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # [T]
    node_dim: Rows[np.int64] | None = None  # [T, N] the dimension used on each node; -1 none


__all__ = ["ExtraRow", "QuotaMode", "TypeQuota", "build_queue_tree", "limits", "queue_dialect"]


def limits(
    values: dict[str, int], inherit: dict[str, int] | None, scalars_from_parent: bool
) -> dict[str, int]:
    """Capability with Volcano's rules: cpu/memory ≤ 0 or unset -> parent's (or ∞)."""
    out = {r: v for r, v in values.items() if r != PODS}
    for r in (CPU, MEMORY):
        if out.get(r, 0) <= 0:
            out[r] = inherit.get(r, UNLIMITED) if inherit is not None else UNLIMITED
    if inherit is not None and scalars_from_parent:
        for r, v in inherit.items():
            out.setdefault(r, v)
    return out


class QuotaMode:
    """The `capacity` plugin's quotas (hierarchical by default); `CardMode` overrides."""

    plugin = Plugin.CAPACITY
    dialect = "volcano"  # whose Queues it reads: "volcano", or "kai" (`KaiMode`)
    loop = True  # the greedy runs Volcano's allocate loop in this plugin's queue order
    #   (`loop.py`); off where a pod's quota use depends on its node (cards) and for KAI
    always_walks = False  # admission is walked whatever the conf's actions (Kueue's)
    rejecter = "the capacity plugin"  # who refuses every job when the tree is broken

    def __init__(self, conf: SchedulerConf, *, gpu_milli: bool = False) -> None:
        plugin = conf.plugin(self.plugin)
        self.hierarchical = bool(plugin.options.get("enableHierarchy", True)) if plugin else True
        self.gpu_milli = gpu_milli  # GPU shares in play: nvidia.com/gpu counted in milli
        #   (`features.devices.quota`)

    @property
    def key(self) -> Hashable:
        """What the memoised tree depends on besides the snapshot."""
        return (self.plugin, self.hierarchical, self.gpu_milli)

    def view(self, resources: Mapping[str, int]) -> dict[str, int]:
        """A quota map in this mode's dimensions (GPUs in milli while shares are in play)."""
        return in_gpu_milli(resources, UNLIMITED) if self.gpu_milli else dict(resources)

    def job_queue(self, gang: Gang, pods: Sequence[Pod]) -> str | None:
        """The queue a job is in (`solver.model.job_queue`; Kueue's: its LocalQueue)."""
        return job_queue(gang, pods)

    # ------------------------------------------------------------------ the tree

    def queues_in_use(self, snapshot: Snapshot) -> frozenset[str]:
        """Queues named by running pods, named gangs or pending pods of the snapshot."""

        def compute() -> frozenset[str]:
            running = snapshot.running
            counts = snapshot.usage.queue_requests
            # a later generation may have named resources this one's totals do not cover
            pods = running.resources.index(PODS) if PODS in running.resources else -1
            used = np.flatnonzero(counts[:, pods] > 0) if 0 <= pods < counts.shape[1] else ()
            names = {running.queue_names.value(int(q)) for q in used}
            names |= {g.queue for g in snapshot.gangs.values() if g.queue}
            names |= {
                q for p in snapshot.pending.values() if (q := pod_queue(p.labels, p.annotations))
            }
            return frozenset(names)

        return snapshot.memo(("queues", "in use"), compute)

    def capabilities(self, snapshot: Snapshot, tree: QueueTree) -> None:
        queues = tree.queues
        root = queues[ROOT]
        root_spec = self.view(root.spec.capability) if root.spec else {}
        if tree.hierarchical:
            root.capability = limits(root_spec, None, False)
        else:
            root.capability = self.view(dict(snapshot.nodes.total))
        root.real_capability = dict(root.capability)
        order = [ROOT]
        for name in order:
            parent = queues[name]
            siblings_guarantee = sum_resources(queues[s].guarantee for s in parent.children)
            for child_name in parent.children:
                child = queues[child_name]
                spec = self.view(child.spec.capability) if child.spec else {}
                child.capability = limits(
                    spec, parent.capability if tree.hierarchical else None, tree.hierarchical
                )
                child.deserved = {
                    r: max(v, child.guarantee.get(r, 0)) for r, v in child.deserved.items()
                }
                keys = set(parent.real_capability) | set(child.capability) | set(child.guarantee)
                real = {}
                for r in keys - {PODS}:
                    carved = max(sub_limit(parent.real(r), siblings_guarantee.get(r, 0)), 0)
                    real[r] = min(
                        add_limits(carved, child.guarantee.get(r, 0)),
                        child.capability.get(r, UNLIMITED),
                    )
                child.real_capability = real
                order.append(child_name)
        if tree.hierarchical:
            root.deserved = sum_resources(queues[c].deserved for c in root.children)
            root.guarantee = sum_resources(queues[c].guarantee for c in root.children)

    def usage(self, snapshot: Snapshot, tree: QueueTree) -> None:
        """allocated from the running pods; inqueue and elastic from the named gangs."""
        running = snapshot.running
        for q in range(len(running.queue_names)):
            name = running.queue_names.value(q)
            if name in tree.queues:
                tree.bump(name, "allocated", self.queue_allocated(snapshot, q))
        for gid, gang in snapshot.gangs.items():
            leaf = gang.queue or self._running_queue(snapshot, gid)
            if leaf is None or leaf not in tree.queues:
                continue
            minimum = self.gang_minimum(snapshot, gang)
            if not minimum:
                continue
            allocated = self.gang_allocated(snapshot, gid)
            running_pods = snapshot.gang_running(gid)
            if gang.phase == "Inqueue":
                tree.bump(leaf, "inqueue", minimum)
            elif gang.phase == "Running" and running_pods >= gang.min_member:
                tree.bump(
                    leaf,
                    "inqueue",
                    {r: max(0, v - allocated.get(r, 0)) for r, v in minimum.items()},
                )
            tree.bump(
                leaf, "elastic", {r: max(0, allocated.get(r, 0) - v) for r, v in minimum.items()}
            )

    def _running_queue(self, snapshot: Snapshot, gang_id: str) -> str | None:
        """A named gang without spec.queue: the queue its first running pod's annotation names."""
        rows = snapshot.rows_of_gang(gang_id)
        for row in rows.tolist():
            q = int(snapshot.running.queue[row])
            if q != NONE:
                return snapshot.running.queue_names.value(q)
        return None

    # ------------------------------------------------------------------ usage in quota terms

    def queue_allocated(self, snapshot: Snapshot, q: int) -> dict[str, int]:
        """What the pods charged to queue id q use of its quota."""
        row = _row(snapshot.running.resources, snapshot.usage.queue_requests, q)
        return self._with_shares(row, running_shares(snapshot).queue_extra, q)

    def gang_allocated(self, snapshot: Snapshot, gang_id: str) -> dict[str, int]:
        g = snapshot.running.gang_id(gang_id)
        row = _row(snapshot.running.resources, snapshot.usage.gang_requests, g)
        return self._with_shares(row, running_shares(snapshot).gang_extra, g)

    def _with_shares(self, row: dict[str, int], extra: IntArray, index: int) -> dict[str, int]:
        if not self.gpu_milli:
            return row
        out = self.view(row)
        more = int(extra[index]) if 0 <= index < extra.size else 0
        if more:
            out[GPU_MILLI] = out.get(GPU_MILLI, 0) + more
        return out

    def gang_minimum(self, snapshot: Snapshot, gang: Gang) -> dict[str, int]:
        """What an admitted job holds of its queue beyond its running pods (minResources)."""
        return self.view({r: v for r, v in gang.min_resources.items() if r != PODS})

    def request(self, gang: Gang, pending: Sequence[Pod], snapshot: Snapshot) -> dict[str, int]:
        """What a job asks for when it enters its queue (Volcano: minResources)."""
        return self.gang_minimum(snapshot, gang)

    # ------------------------------------------------------------------ gates

    def gate(
        self, tree: QueueTree, leaf: str, request: dict[str, int], *, enqueue: bool
    ) -> str | None:
        """Why `request` does not fit `leaf` and every ancestor now; None when it fits.

        Enqueue: `request + allocated + inqueue − elastic ≤ realCapability`; allocate:
        `allocated + request ≤ realCapability`; both only on the dimensions requested.
        """
        for name in tree.path(leaf):
            q = tree.queues[name]
            for r, v in sorted(request.items()):
                if v <= 0 or r == PODS:
                    continue
                used = q.allocated.get(r, 0)
                if enqueue:
                    used = used + q.inqueue.get(r, 0) - q.elastic.get(r, 0)
                limit = q.real(r)
                if limit < UNLIMITED and used + v > limit:
                    over = used + v - limit
                    return (
                        f"queue {name}: {r} {format_quantity(r, v)} requested + "
                        f"{format_quantity(r, used)} in use > realCapability "
                        f"{format_quantity(r, limit)} (over by {format_quantity(r, over)})"
                    )
        return None

    def refuse(self, gang_id: str) -> str | None:
        """The mode's own refusal of a job before its quota is asked (Kueue's cycles: a
        workload behind a StrictFIFO head); None for none."""
        return None

    def admitted(self, tree: QueueTree, leaf: str, request: Mapping[str, int]) -> None:
        """A job was admitted into `leaf` with `request` (after the tree counted it)."""

    def settle(
        self,
        snapshot: Snapshot,
        workload: Workload,
        tree: QueueTree,
        call_queues: Sequence[str | None],
    ) -> None:
        """Derive what depends on the call's jobs (`workload`; `call_queues`: each gang's
        queue) on the call's copy of the tree; capacity reads deserved from the specs."""

    def fair_dims(self, tree: QueueTree, name: str) -> dict[str, int]:
        """Queue `name`'s fair share in this mode's dimensions, for the fairness tier
        (`fairness.py`): its deserved (water-filled for the call under `proportion`)."""
        return dict(tree.queues[name].deserved)

    def allocate_limit(self, tree: QueueTree, name: str, resource: str) -> int:
        """The allocate gate's limit at queue `name` (`allocated + request ≤ it`)."""
        return tree.queues[name].real(resource)

    def queue_cmp(self, tree: QueueTree, a: str, b: str) -> int:
        """The queue order of this plugin (negative: a first)."""
        return capacity_cmp(tree, a, b)

    def order_units(
        self, ctx: CompileContext, tree: QueueTree, unit_queue: Sequence[str | None]
    ) -> list[int]:
        """The units in this plugin's order: Volcano's queue order, then the job order,
        taken again after every job with its pending pods counted in its queue
        (`order.resorted_order`, as Volcano's allocate action re-pushes a queue); a job
        not enqueued counts nothing. Past `MAX_COMPARISONS` (jobs × the widest fan-out:
        each job taken re-compares a level's queues) the order is taken once, with the
        shares at the start of the cycle."""
        widest = max((len(q.children) for q in tree.queues.values()), default=1)
        if len(unit_queue) * max(widest, 1) > MAX_COMPARISONS:  # sorted once, at the start
            return queue_order(tree, unit_queue, ctx.unit_key, self.queue_cmp)
        asks = unit_asks(ctx, self)
        for g, u in enumerate(ctx.gangs.unit):
            if g in ctx.not_enqueued:
                asks[u] = {}
        return resorted_order(tree, unit_queue, ctx.unit_key, self.queue_cmp, asks)

    def enqueue_order(
        self, ctx: CompileContext, tree: QueueTree, unit_queue: Sequence[str | None]
    ) -> list[int]:
        """The order the `enqueue` walk takes jobs in: the queue order with the shares at
        the start of the cycle (Volcano's enqueue action moves no allocation)."""
        return queue_order(tree, unit_queue, ctx.unit_key, self.queue_cmp)

    def extra_rows(
        self, ctx: CompileContext, tree: QueueTree, type_leaf: Sequence[str | None],
        quota: TypeQuota,
    ) -> list[ExtraRow]:  # fmt: skip
        """Quota rows beside the queues' that only some pod types count against (KAI's
        non-preemptible jobs within their queues' quotas); none for Volcano's plugins."""
        return []

    def reason(self, dim: str, dims: Sequence[str]) -> str:
        """How a shortfall on quota dimension `dim` (one of `dims`) reads in a pod's reason."""
        return f"insufficient {dim} quota"

    # ------------------------------------------------------------------ the Problem's dims

    def type_quota(self, ctx: CompileContext, tree: QueueTree | None) -> TypeQuota:
        """capacity: every resource of the call is a dimension; `pods` is never a quota."""
        demand = np.array(ctx.type_demand, dtype=np.int64).reshape(
            ctx.num_types, len(ctx.resources)
        )
        if PODS in ctx.resources:
            demand[:, ctx.resources.index(PODS)] = 0
        if not self.gpu_milli:
            return TypeQuota(dims=ctx.resources, demand=demand)
        # nvidia.com/gpu (if requested) becomes the milli dimension: each type's share
        dims = [r for r in ctx.resources if r != GPU_RESOURCE]
        keep = [i for i, r in enumerate(ctx.resources) if r != GPU_RESOURCE]
        milli = [
            gpu_milli(p.requests, p.annotations)[0]
            for p in map(ctx.first_pod, range(ctx.num_types))
        ]
        demand = np.column_stack([demand[:, keep], np.array(milli, dtype=np.int64)])
        return TypeQuota(
            dims=(*dims, GPU_MILLI), demand=demand.reshape(ctx.num_types, len(dims) + 1)
        )


def _row(names: Sequence[str], matrix: np.ndarray, index: int) -> dict[str, int]:
    if index < 0 or index >= matrix.shape[0]:
        return {}
    return {
        r: int(v) for r, v in zip(names, matrix[index].tolist(), strict=False) if v and r != PODS
    }


def queue_dialect(snapshot: Snapshot) -> str:
    """Whose Queues the snapshot holds: "kai" when they are KAI-Scheduler's, "kueue" when
    they are Kueue's ClusterQueues, Cohorts and LocalQueues (the codec and the reader
    refuse a mix), else "volcano"."""

    def compute() -> str:
        queues = snapshot.queues.values()
        if any(q.kai is not None for q in queues):
            return "kai"
        return "kueue" if any(q.kueue is not None for q in queues) else "volcano"

    return snapshot.memo(("queues", "dialect"), compute)


MAX_TREE_DEPTH = 256
"""Above this many levels of parents the queue tree is broken (every job refused, saying
so): Volcano's webhook allows 10 by default, Kueue's cohort trees a few."""

MAX_COMPARISONS = 200_000
"""Above this many (jobs × widest fan-out), the queue order is not re-taken per job."""


def unit_asks(ctx: CompileContext, mode: QuotaMode) -> list[dict[str, int]]:
    """What each unit's pending pods ask for together, in the mode's dimensions."""
    asks = np.zeros((len(ctx.gangs.unit_ids), len(ctx.resources)), dtype=np.int64)
    demand = np.asarray(ctx.type_demand, dtype=np.int64).reshape(ctx.num_types, len(ctx.resources))
    for t, pods in enumerate(ctx.type_pods):
        asks[ctx.gangs.unit[ctx.type_gang[t]]] += demand[t] * len(pods)
    return [
        mode.view({r: int(v) for r, v in zip(ctx.resources, row.tolist(), strict=True) if v})
        for row in asks
    ]


def build_queue_tree(
    snapshot: Snapshot, mode: QuotaMode, call_queues: Iterable[str] = ()
) -> QueueTree | None:
    """The tree of the snapshot's queues under `mode` (memoised per generation), or None
    when nothing uses queues; `call_queues` are the queues the call's jobs name."""
    call = frozenset(call_queues)
    used_default = DEFAULT_QUEUE in call or DEFAULT_QUEUE in mode.queues_in_use(snapshot)
    if not snapshot.queues and not call and not mode.queues_in_use(snapshot):
        return None
    key = ("queues", "tree", mode.key, used_default)
    return snapshot.memo(key, lambda: _build(snapshot, mode, used_default)).fork()


def _build(snapshot: Snapshot, mode: QuotaMode, used_default: bool) -> QueueTree:
    hierarchical = mode.hierarchical
    queues: dict[str, QueueInfo] = {}
    for name, spec in snapshot.queues.items():
        parent = (spec.parent or ROOT) if name != ROOT else None
        queues[name] = QueueInfo(
            name=name, parent=parent if hierarchical or name == ROOT else ROOT,
            deserved=mode.view(spec.deserved), guarantee=mode.view(spec.guarantee), state=spec.state,
            priority=spec.priority, spec=spec,
        )  # fmt: skip
    if ROOT not in queues:
        queues[ROOT] = QueueInfo(name=ROOT, parent=None, implicit=True)
    if used_default and DEFAULT_QUEUE not in queues:
        queues[DEFAULT_QUEUE] = QueueInfo(name=DEFAULT_QUEUE, parent=ROOT, implicit=True)
    tree = QueueTree(queues=queues, hierarchical=hierarchical)
    for info in queues.values():
        if info.parent is not None and info.parent not in queues:
            tree.broken = f"queue {info.name}: parent queue {info.parent} does not exist"
            return tree
    for info in queues.values():
        seen, p = {info.name}, info.parent
        while p is not None:
            if p in seen:
                tree.broken = f"queue {info.name}: cycle in the queue tree through {p}"
                return tree
            if len(seen) > MAX_TREE_DEPTH:  # hostile input: the walks stay bounded
                tree.broken = f"queue {info.name}: more than {MAX_TREE_DEPTH} levels of parents"
                return tree
            seen.add(p)
            info.ancestors.append(p)
            p = queues[p].parent
        info.ancestors.reverse()
        if info.parent is not None:
            queues[info.parent].children.append(info.name)
    for info in queues.values():
        info.children.sort()
    mode.capabilities(snapshot, tree)
    mode.usage(snapshot, tree)
    return tree
