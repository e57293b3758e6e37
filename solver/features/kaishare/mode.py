"""KAI-Scheduler's `proportion` plugin as a `QuotaMode` of the shared queue machinery.

What changes against Volcano's `capacity` (`pkg/scheduler/plugins/proportion/`):

* **The tree** is the Queues' `parentQueue` links; every level is capped by its own
  `limit` (KAI's `maxAllowed`), nothing is inherited or carved.
* **Fair share** (`division.py`): per resource (CPU, memory, GPU) the cluster is divided
  down the tree: quotas first, then the surplus by over-quota weight within each priority.
  It depends on what the call's jobs ask for, so it is derived on the call's copy of the
  tree (`settle`), from what each queue's running pods use and its pending pods ask for.
* **Allocate gate** (`capacity_policy`): at the job's queue and every ancestor,
  `allocated + request ≤ limit` on each resource requested (`resultsOverLimit`), and for
  a non-preemptible job (its PodGroup's `preemptibility`, else priority ≥ 100)
  `allocatedNonPreemptible + request ≤ quota` (`resultsWithNonPreemptibleOverQuota`): extra
  quota rows (`extra_rows`) that only such jobs' pod types count against. Fair share does
  not gate: a queue may use idle room beyond it (preemptibly).
* **Queue order** (`queue_order.go`), at the level where two jobs' queue paths part, as
  numbered criteria:
  1. a queue not over its fair share first (over: allocated above fair share on every
     resource);
  2. a queue that stays within its quota with the job first (allocated + job ≤ quota);
  3. priority, higher first;
  4. a queue that would use a resource it has no allocatable share of (quota and fair share
     both 0) last;
  5. the lower dominant share with the job first (max over resources of allocated / allocatable
     share; allocatable share = max(quota, fair share) capped by the limit; a resource with none
     counts its use × 1000);
  6. the same without the job;
  7. the smaller allocatable share first (smaller on one resource, on none larger);
  8. the earlier-created queue, then the name.
  KAI re-sorts after every job: so does the order (`order.kai_order`), each job counted as
  allocated when it is taken.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from solver.config import Plugin, SchedulerConf
from solver.features.kaishare.division import Share, divide
from solver.features.kaishare.order import KaiOrder, kai_order
from solver.features.kaishare.usage import queue_usage
from solver.features.queues import ROOT, ExtraRow, QueueTree, QuotaMode, call_requests
from solver.model import (
    GPU_MILLI,
    GPU_RESOURCE,
    KAI_DEFAULT_PRIORITY,
    KAI_NON_PREEMPTIBLE_PRIORITY,
    KAI_PREEMPTIBILITY,
    KAI_PREEMPTIBILITY_LABEL,
    KAI_RESOURCES,
    KAI_UNLIMITED,
    kai_preemptible,
)
from solver.problem import IntArray
from solver.quantity import UNLIMITED, format_quantity
from solver.snapshot import RunningPods, Snapshot, Workload, charged_queue

if TYPE_CHECKING:
    from solver.features._base import CompileContext
    from solver.features.queues import TypeQuota

__all__ = ["NON_PREEMPTIBLE", "KaiMode", "label_verdicts"]

NON_PREEMPTIBLE = KAI_NON_PREEMPTIBLE_PRIORITY
Amounts = dict[str, float]


class KaiMode(QuotaMode):
    plugin = Plugin.PROPORTION
    dialect = "kai"
    loop = False  # KAI's own order, taken after every job (`order.kai_order`)

    def __init__(self, conf: SchedulerConf, *, gpu_milli: bool = False) -> None:
        super().__init__(conf, gpu_milli=gpu_milli)
        self.hierarchical = True
        plugin = conf.plugin(Plugin.PROPORTION)
        k = plugin.arguments.get("kValue", 1.0) if plugin is not None else 1.0
        ok = isinstance(k, int | float) and not isinstance(k, bool) and math.isfinite(k)
        self.k = max(float(k), 0.0) if ok else 1.0  # KAI: ≤ 0 is 0, unparsable is 1
        self.fair: dict[str, Amounts] = {}  # the call's fair shares, KAI units
        self.history: dict[str, Amounts] = {}  # historical usage (time-based fair share)
        self.usage_params = conf.usage  # `usageDBConfig`: None, no usage counted
        self._order: list[int] | None = None  # the call's KAI order, taken once

    @property
    def key(self) -> Hashable:
        return ("kai", self.gpu_milli)

    # ------------------------------------------------------------------ units

    def to_dims(self, amounts: Mapping[str, float]) -> dict[str, int]:
        """KAI amounts (GPUs in GPUs, -1 unlimited) in this mode's integer quota dimensions."""
        out = {}
        for r, v in amounts.items():
            if v == KAI_UNLIMITED:
                out[GPU_MILLI if r == GPU_RESOURCE and self.gpu_milli else r] = UNLIMITED
            elif r == GPU_RESOURCE and self.gpu_milli:
                out[GPU_MILLI] = math.floor(v * 1000 + 1e-6)
            else:
                out[r] = math.floor(v + 1e-9)
        return out

    def from_dims(self, amounts: Mapping[str, int]) -> Amounts:
        """This mode's integer amounts as KAI amounts of its three resources."""
        out = {r: float(amounts.get(r, 0)) for r in KAI_RESOURCES}
        if self.gpu_milli:
            out[GPU_RESOURCE] = amounts.get(GPU_MILLI, 0) / 1000
        return out

    def dim_resource(self, dim: str) -> str | None:
        """The KAI resource a quota dimension counts, None for one KAI does not limit."""
        if dim == GPU_MILLI and self.gpu_milli:
            return GPU_RESOURCE
        if dim == GPU_RESOURCE and self.gpu_milli:
            return None
        return dim if dim in KAI_RESOURCES else None

    # ------------------------------------------------------------------ the tree

    def capabilities(self, snapshot: Snapshot, tree: QueueTree) -> None:
        root = tree.queues[ROOT]
        root.capability = self.view(dict(snapshot.nodes.total))
        root.real_capability = dict(root.capability)
        for name, q in tree.queues.items():
            if name == ROOT:
                continue
            kai = q.spec.kai if q.spec is not None else None
            limit = self.to_dims(kai.limit if kai else {})
            q.capability = {r: v for r, v in limit.items() if v < UNLIMITED}
            # a resource KAI limits but the Queue does not name: limit 0 (unset)
            for r in KAI_RESOURCES:
                dim = GPU_MILLI if r == GPU_RESOURCE and self.gpu_milli else r
                if kai is not None and r not in kai.limit:
                    q.capability[dim] = 0
            q.real_capability = dict(q.capability)
            quota = self.to_dims(kai.quota if kai else {})
            q.deserved = {r: v for r, v in quota.items() if 0 < v < UNLIMITED}

    def kai_numbers(self, tree: QueueTree, name: str, field: str) -> Amounts:
        """A queue's `quota`, `limit` or `over_quota_weight` on KAI's three resources (a
        queue with no KAI spec, the implicit root: limit unlimited, the rest 0)."""
        spec = tree.queues[name].spec
        kai = spec.kai if spec is not None else None
        values: Mapping[str, float] = getattr(kai, field) if kai is not None else {}
        missing = KAI_UNLIMITED if kai is None and field == "limit" else 0.0
        return {r: values.get(r, missing) for r in KAI_RESOURCES}

    # ------------------------------------------------------------------ fair share

    def settle(
        self,
        snapshot: Snapshot,
        workload: Workload,
        tree: QueueTree,
        call_queues: Sequence[str | None],
    ) -> None:
        requests: dict[str, Amounts] = {}
        for leaf, asked in call_requests(snapshot, workload, self).items():
            if leaf in tree.queues:
                amounts = self.from_dims(asked)
                for name in tree.path(leaf):
                    mine = requests.setdefault(name, {})
                    for r, v in amounts.items():
                        mine[r] = mine.get(r, 0.0) + v
        total = self.from_dims(tree.queues[ROOT].capability)
        specs = snapshot.memo(("kaishare", "specs", self.key), lambda: self._specs(tree))
        children = {n: tree.queues[n].children for n in tree.queues}
        self.fair = {n: {} for n in specs}
        held = {n: self.from_dims(tree.queues[n].allocated) for n in specs}
        none: Amounts = {}
        params = self.usage_params
        self.history = queue_usage(snapshot, tree, params) if params is not None else {}
        for r in KAI_RESOURCES:
            shares = {
                n: Share(
                    name=n, deserved=quota[r], limit=limit[r], weight=weight[r],
                    request=held[n][r] + requests.get(n, none).get(r, 0.0),
                    priority=priority, created=created,
                    usage=self.history.get(n, none).get(r, 0.0),
                )
                for n, (quota, limit, weight, priority, created) in specs.items()
            }  # fmt: skip
            divide(total[r], shares, children, children[ROOT], self.k)
            for n, share in shares.items():
                self.fair[n][r] = share.fair

    def _specs(self, tree: QueueTree) -> dict[str, tuple[Amounts, Amounts, Amounts, int, str]]:
        """Per queue (the root left out): quota, limit, weight, priority and creation time,
        read once per snapshot generation (they are the specs')."""
        out = {}
        for n, q in tree.queues.items():
            if n == ROOT:
                continue
            spec = q.spec
            out[n] = (
                self.kai_numbers(tree, n, "quota"),
                self.kai_numbers(tree, n, "limit"),
                self.kai_numbers(tree, n, "over_quota_weight"),
                spec.priority if spec is not None else KAI_DEFAULT_PRIORITY,
                spec.kai.created if spec is not None and spec.kai else "",
            )
        return out

    # ------------------------------------------------------------------ gates and order

    def fair_dims(self, tree: QueueTree, name: str) -> dict[str, int]:
        """The queue's fair share for the call (`settle`), in this mode's dimensions."""
        return self.to_dims(self.fair.get(name, {}))

    def order_units(
        self, ctx: CompileContext, tree: QueueTree, unit_queue: Sequence[str | None]
    ) -> list[int]:
        """KAI's order (re-sorted after every job), the same for the admission walk."""
        if self._order is None:
            self._order = kai_order(self, ctx, tree, unit_queue)
        return self._order

    def enqueue_order(
        self, ctx: CompileContext, tree: QueueTree, unit_queue: Sequence[str | None]
    ) -> list[int]:
        return self.order_units(ctx, tree, unit_queue)

    def queue_cmp(self, tree: QueueTree, a: str, b: str) -> int:
        """Between two queues without their jobs: criteria 1-8 with empty jobs."""
        return KaiOrder(self, tree).compare(a, b, {}, {})

    def allocate_limit(self, tree: QueueTree, name: str, resource: str) -> int:
        if name == ROOT or self.dim_resource(resource) is None:
            return UNLIMITED
        return tree.queues[name].capability.get(resource, UNLIMITED)

    def gate(
        self, tree: QueueTree, leaf: str, request: dict[str, int], *, enqueue: bool
    ) -> str | None:
        """KAI's `resultsOverLimit`, at the leaf and every ancestor."""
        for name in tree.path(leaf):
            if name == ROOT:
                continue
            q = tree.queues[name]
            for r, v in sorted(request.items()):
                resource = self.dim_resource(r)
                limit = q.capability.get(r, UNLIMITED)
                if v <= 0 or resource is None or limit >= UNLIMITED:
                    continue
                used = q.allocated.get(r, 0)
                if used + v > limit:
                    return (
                        f"{name} quota has reached the allowable limit of {resource}: limit "
                        f"{format_quantity(r, limit)}, {format_quantity(r, used)} allocated and "
                        f"the workload requested {format_quantity(r, v)}"
                    )
        return None

    def reason(self, dim: str, dims: Sequence[str]) -> str:
        return "KAI queue limit reached"

    def extra_rows(
        self, ctx: CompileContext, tree: QueueTree, type_leaf: Sequence[str | None],
        quota: TypeQuota,
    ) -> list[ExtraRow]:  # fmt: skip
        """`resultsWithNonPreemptibleOverQuota`: per queue on the path of a non-preemptible
        pod type, a row `allocatedNonPreemptible + placed ≤ quota` on its finite quotas."""
        held = ctx.snapshot.memo(
            ("kaishare", "non-preemptible", self.key), lambda: self.non_preemptible(ctx.snapshot)
        )
        rows: dict[str, ExtraRow] = {}
        for t, leaf in enumerate(type_leaf):
            gang = ctx.workload.gangs[ctx.gangs.gang_ids[ctx.type_gang[t]]]
            priority = gang.priority if gang.priority is not None else ctx.first_pod(t).priority
            if leaf not in tree.queues or kai_preemptible(gang, priority, ctx.first_pod(t).labels):
                continue  # a queue that is not a KAI Queue is refused at enqueue
            for name in tree.path(leaf):
                if name == ROOT:
                    continue
                if name not in rows:
                    quota_dims = self.to_dims(self.kai_numbers(tree, name, "quota"))
                    mine = held.get(name, {})
                    rows[name] = ExtraRow(
                        name=f"{name} (non-preemptible)",
                        limit=[quota_dims.get(d, UNLIMITED) if self.dim_resource(d) else UNLIMITED
                               for d in quota.dims],
                        allocated=[mine.get(d, 0) for d in quota.dims],
                        types=[],
                        queue=name,
                        noun="quota for non-preemptible jobs",
                    )  # fmt: skip
                rows[name].types.append(t)
        return [row for row in rows.values() if any(v < UNLIMITED for v in row.limit)]

    def non_preemptible(self, snapshot: Snapshot) -> dict[str, dict[str, int]]:
        """Per queue (its subtree's total), what its running non-preemptible pods use."""
        running = snapshot.running
        rows = running.rows()
        # a job is its PodGroup's (its preemptibility, else its priorityClassName), else
        # its pod's priority decides
        firm = np.array(
            [
                -1 if (g := snapshot.gangs.get(running.gang_name(i))) is None
                else int(not kai_preemptible(g, g.priority if g.priority is not None else 0))
                if g.priority is not None or KAI_PREEMPTIBILITY in g.annotations else -1
                for i in range(len(running.gang_names))
            ],
            dtype=np.int64,
        )  # fmt: skip
        gang = running.gang[rows].astype(np.int64)
        named = (
            np.where(gang >= 0, firm[np.clip(gang, 0, max(firm.size - 1, 0))], -1)
            if firm.size
            else np.full(rows.size, -1)
        )
        own = np.where(  # a pod of no PodGroup: its label, else its priority
            labelled := label_verdicts(running, rows),
            labelled == 1,
            running.priority[rows] >= NON_PREEMPTIBLE,
        )
        rows = rows[np.where(named >= 0, named == 1, own)]
        if not rows.size:
            return {}
        queue = charged_queue(running, rows, snapshot.gang_queue)
        keep = queue >= 0
        rows, queue = rows[keep], queue[keep]
        requests = running.requests()[rows]
        out: dict[str, dict[str, int]] = {}
        for q in np.unique(queue).tolist():
            summed = requests[queue == q].sum(axis=0).tolist()
            leaf = running.queue_names.value(int(q))
            use = self.view(dict(zip(running.resources, summed, strict=False)))
            name: str | None = leaf
            while name is not None and name in snapshot.queues:
                mine = out.setdefault(name, {})
                for r, v in use.items():
                    mine[r] = mine.get(r, 0) + int(v)
                name = snapshot.queues[name].parent
        return out


def label_verdicts(running: RunningPods, rows: IntArray) -> IntArray:
    """Per row, its pod's `kai.scheduler/preemptibility` label: 1 non-preemptible,
    0 preemptible, -1 none (read once per distinct label set)."""
    if not rows.size:
        return np.zeros(0, dtype=np.int64)
    uniq, inverse = np.unique(running.label_set[rows], return_inverse=True)
    codes = {"non-preemptible": 1, "preemptible": 0}
    values = np.array(
        [
            codes.get(running.label_sets[i].get(KAI_PREEMPTIBILITY_LABEL, ""), -1)
            for i in uniq.tolist()
        ],
        dtype=np.int64,
    )
    return values[inverse]
