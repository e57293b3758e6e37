"""KAI's `reclaim` (`pkg/scheduler/actions/reclaim`, the proportion plugin's
`reclaimable/`): a queue below its fair share takes room back from queues above theirs.

* **Who may reclaim** (`CanReclaimResources`, and the boundary's non-preemptible rule): the
  job's queue, with the job, stays within its fair share on every resource; for a
  non-preemptible job, every queue of its path keeps its non-preemptible use within quota;
  and the job is within its queues' limits.
* **Victims** (`getOrderedVictimsQueue`): running jobs of other queues, preemptible ones
  only (priority below 100), evictable at all (not protected, not terminating), queues in
  the reverse of KAI's queue order, jobs inside a queue in the reverse of the task order
  (`features.queues.victims`). A job's pods beyond its minMember are victims one by one
  (KAI's elastic tasks); its core, the minMember pods, goes together (`splitVictimTasks`).
* **Each victim judged** (`Reclaimable`), at the two queues where the reclaimer's and the
  victim's paths part, with what the victim's queue holds less the victims taken before:
  1. *MaintainFairShare*: the victim's queue holds more than its allocatable share
     (max(quota, fair share) capped by the limit) on some resource; or
  2. *GuaranteeDeservedQuota*: the reclaimer's queue stays within its quota with the job,
     and the victim's queue holds more than its quota on some resource;
  then, with the victim taken, at every level of the reclaimer's path no sibling that lost
  pods is left more saturated than the reclaimer: on each resource the victims or the job
  involve, the reclaimer's allocated + job over its fair share may not exceed 1 while
  reaching the sibling's ratio (× `relcaimerSaturationMultiplier`, KAI's spelling, ≥ 1).
  A victim that fails is skipped: later ones are judged without it.
* **Young jobs are kept** (KAI's `minruntime`, `minruntime.py`): a job that started less
  than its reclaim minimum runtime ago loses no core pods (its elastic pods beyond
  minMember stay victims).

The engine evicts in this order only until the job fits, or nothing at all.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cmp_to_key

import numpy as np

from solver.config import Plugin, SchedulerConf
from solver.features.devices.quota import shares_in_play
from solver.features.kaishare.minruntime import MinRuntime, job_started, protected
from solver.features.kaishare.mode import KaiMode
from solver.features.kaishare.order import KaiOrder, allocatable_share, less_equal
from solver.features.queues import ROOT, QueueTree, build_queue_tree
from solver.features.queues.victims import in_tree, victim_cmp
from solver.model import KAI_RESOURCES, KAI_UNLIMITED, Gang, job_queue, kai_preemptible
from solver.problem import IntArray
from solver.snapshot import NONE, Snapshot, Workload

__all__ = ["KaiReclaim", "kai_reclaim"]

Amounts = dict[str, float]


@dataclass
class KaiReclaim:
    tree: QueueTree  # the call's, with fair shares divided (`mode.fair`)
    mode: KaiMode
    snapshot: Snapshot
    rows: IntArray  # [V] evictable snapshot rows charged to a queue of the tree
    queue: list[str]  # [V] their queue
    multiplier: float = 1.0
    _firm: dict[str, dict[str, int]] = field(default_factory=dict)
    gangs: Mapping[str, Gang] = field(default_factory=dict)  # the call's and the snapshot's
    labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # gang -> a pod's
    runtime: MinRuntime | None = None  # KAI's `minruntime`: young jobs are kept
    refused: str = ""  # `Reclaimer.refused`: no rule is wrapped around KAI's

    # ------------------------------------------------------------------ who may reclaim

    def may_reclaim(
        self, queue: str, request: dict[str, int], priority: int = 0, gangs: Sequence[str] = ()
    ) -> str | None:
        if self.tree.queues[queue].children:
            return f"queue {queue} is not a leaf queue"
        ask = self.mode.from_dims(self.mode.view(request))
        held = self._held(queue)
        fair = self.mode.fair.get(queue, {})
        if not less_equal({r: held[r] + ask[r] for r in KAI_RESOURCES}, fair):
            return f"queue {queue} would go over its fair share: it may not reclaim"
        specs: list[Gang | None] = [self.gangs[g] for g in gangs if g in self.gangs] or [None]
        labels = self.labels.get(gangs[0], {}) if gangs else {}
        if not all(kai_preemptible(g, priority, labels) for g in specs):  # path within quota
            for name in self.tree.path(queue):
                if name == ROOT:
                    continue
                firm = self.mode.from_dims(self._firm.get(name, {}))
                quota = self.mode.kai_numbers(self.tree, name, "quota")
                if not less_equal({r: firm[r] + ask[r] for r in KAI_RESOURCES}, quota):
                    return f"queue {name}: its non-preemptible jobs would go over its quota"
        return self.mode.gate(self.tree, queue, self.mode.view(request), enqueue=False)

    # ------------------------------------------------------------------ victims

    def order(self, reclaimer: str) -> list[int]:
        """Victim indices (other queues, preemptible) in KAI's victim order."""
        running, rows = self.snapshot.running, self.rows
        order = KaiOrder(self.mode, self.tree)

        def before(a: int, b: int) -> int:
            qa, qb = self.queue[a], self.queue[b]
            if qa != qb:
                return -order.compare(qa, qb, {}, {})
            return victim_cmp(running, int(rows[a]), int(rows[b]))

        others = [v for v, q in enumerate(self.queue) if q != reclaimer and self._preemptible(v)]
        return sorted(others, key=cmp_to_key(before))

    def eligible_in_order(
        self, reclaimer: str, request: dict[str, int], gangs: Sequence[str] = ()
    ) -> Iterator[int]:
        """The victims `Reclaimable` accepts, in order: a job's pods beyond its minMember
        one by one (KAI's elastic tasks), then its core (minMember pods) together."""
        ask = self.mode.from_dims(self.mode.view(request))
        remaining: dict[str, Amounts] = {}
        taken: set[int] = set()
        running = self.snapshot.running
        members = self._jobs()
        elastic = self._elastic(members)
        for i in self.order(reclaimer):
            if i in taken:
                continue
            g = int(running.gang[int(self.rows[i])])
            if g != NONE and elastic.get(g, 0) > 0:
                job = [i]
            else:
                job = [j for j in members.get(g, [i]) if j not in taken] if g != NONE else [i]
                if self._young(reclaimer, i, members.get(g, [i]) if g != NONE else [i]):
                    continue  # minruntime: a young job's core stays
            mine, theirs = self.tree.parting(reclaimer, self.queue[i])
            left = remaining.setdefault(theirs, self._held(theirs))
            if not self._strategy(mine, theirs, left, ask):
                continue
            use = self._use(job)
            saved = {name: dict(v) for name, v in remaining.items()}
            for name in self.tree.path(self.queue[i]):
                if name == ROOT:
                    continue
                held = remaining.setdefault(name, self._held(name))
                for r in KAI_RESOURCES:
                    held[r] -= use[r]
            if not self._within_boundaries(reclaimer, ask, remaining, self._involved(use, ask)):
                remaining = saved
                continue
            taken.update(job)
            if len(job) == 1 and g != NONE and elastic.get(g, 0) > 0:
                elastic[g] -= 1
            yield from job

    def _strategy(self, mine: str, theirs: str, left: Amounts, ask: Amounts) -> bool:
        """MaintainFairShare or GuaranteeDeservedQuota (`strategies.go`)."""
        mode, tree = self.mode, self.tree
        quota = mode.kai_numbers(tree, theirs, "quota")
        limit = mode.kai_numbers(tree, theirs, "limit")
        if not less_equal(left, allocatable_share(quota, mode.fair.get(theirs, {}), limit)):
            return True
        held = self._held(mine)
        with_job = {r: held[r] + ask[r] for r in KAI_RESOURCES}
        if not less_equal(with_job, mode.kai_numbers(tree, mine, "quota")):
            return False
        return not less_equal(left, quota)

    def _within_boundaries(
        self, reclaimer: str, ask: Amounts, remaining: dict[str, Amounts], involved: set[str]
    ) -> bool:
        """`reclaimingQueuesRemainWithinBoundaries`' saturation rule, level by level."""
        for name in self.tree.path(reclaimer):
            if name == ROOT:
                continue
            parent = self.tree.queues[name].parent
            mine = dict(remaining.get(name, self._held(name)))
            for r in KAI_RESOURCES:
                mine[r] += ask[r]
            fair = self.mode.fair.get(name, {})
            for sibling, left in remaining.items():
                if sibling == name or self.tree.queues[sibling].parent != parent:
                    continue
                theirs = self.mode.fair.get(sibling, {})
                for r in involved:
                    ratio = _saturation(mine[r], fair.get(r, 0.0))
                    other = _saturation(left[r], theirs.get(r, 0.0))
                    if ratio > 1 and theirs.get(r, 0.0) > 0 and ratio * self.multiplier >= other:
                        return False
        return True

    # ------------------------------------------------------------------ numbers

    def _young(self, reclaimer: str, v: int, job: list[int]) -> bool:
        """The victim's job is protected by its reclaim minimum runtime."""
        if self.runtime is None:
            return False
        minimum = self.runtime.reclaim(reclaimer, self.queue[v])
        started = job_started(self.snapshot, self.rows[np.array(job, dtype=np.int64)])
        return protected(started, minimum, self.snapshot.observed)

    def _held(self, name: str) -> Amounts:
        return self.mode.from_dims(self.tree.queues[name].allocated)

    def _preemptible(self, v: int) -> bool:
        """KAI's preemptibility of the running pod's job (`kai_preemptible`)."""
        running = self.snapshot.running
        row = int(self.rows[v])
        g = int(running.gang[row])
        spec = self.snapshot.gangs.get(running.gang_name(g)) if g != NONE else None
        own = int(running.priority[row])
        priority = spec.priority if spec is not None and spec.priority is not None else own
        return kai_preemptible(spec, priority, running.labels(row))

    def _jobs(self) -> dict[int, list[int]]:
        running = self.snapshot.running
        out: dict[int, list[int]] = {}
        for v, row in enumerate(self.rows.tolist()):
            g = int(running.gang[row])
            if g != NONE:
                out.setdefault(g, []).append(v)
        return out

    def _elastic(self, members: dict[int, list[int]]) -> dict[int, int]:
        """Per running job: how many of its pods are beyond its minMember (elastic)."""
        running = self.snapshot.running
        out = {}
        for g in members:
            name = running.gang_name(g)
            spec = self.snapshot.gangs.get(name)
            least = spec.min_member if spec is not None else 1
            out[g] = max(self.snapshot.gang_running(name) - max(least, 1), 0)
        return out

    def _use(self, job: list[int]) -> Amounts:
        running = self.snapshot.running
        requests = running.requests()
        total: dict[str, int] = {}
        for v in job:
            row = int(self.rows[v])
            for r, x in zip(running.resources, requests[row].tolist(), strict=False):
                if x:
                    total[r] = total.get(r, 0) + int(x)
        return self.mode.from_dims(self.mode.view(total))

    @staticmethod
    def _involved(use: Amounts, ask: Amounts) -> set[str]:
        return {r for r in KAI_RESOURCES if use[r] > 0 or ask[r] > 0}


def _saturation(allocated: float, fair: float) -> float:
    """`fairShareSaturationRatio`."""
    if fair == 0:
        return math.inf if allocated > 0 else 0.0
    if fair == KAI_UNLIMITED:
        return 0.0
    return allocated / fair


def kai_reclaim(
    snapshot: Snapshot, conf: SchedulerConf, workload: Workload, rows: IntArray
) -> KaiReclaim | None:
    """The call's KAI reclaim over the evictable running rows `rows`; None without KAI
    Queues or with a broken tree."""
    mode = KaiMode(conf, gpu_milli=shares_in_play(snapshot, workload))
    queues = [job_queue(g, workload.members(gid)) for gid, g in workload.gangs.items()]
    tree = build_queue_tree(snapshot, mode, (q for q in queues if q))
    if tree is None or tree.broken:
        return None
    mode.settle(snapshot, workload, tree, queues)
    kept, names = in_tree(snapshot, rows, tree)
    plugin = conf.plugin(Plugin.PROPORTION)
    multiplier = plugin.arguments.get("relcaimerSaturationMultiplier", 1.0) if plugin else 1.0
    ok = isinstance(multiplier, int | float) and not isinstance(multiplier, bool)
    firm = snapshot.memo(
        ("kaishare", "non-preemptible", mode.key), lambda: mode.non_preemptible(snapshot)
    )
    return KaiReclaim(
        tree, mode, snapshot, kept, names,
        multiplier=max(float(multiplier), 1.0) if ok and math.isfinite(multiplier) else 1.0,
        _firm=firm,
        gangs={**snapshot.gangs, **workload.gangs},
        labels={p.gang: p.labels for p in workload.pods},
        runtime=MinRuntime.of(snapshot.queues, conf),
    )  # fmt: skip
