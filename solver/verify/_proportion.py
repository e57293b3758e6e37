"""Volcano `proportion`, re-derived from the Queue specs and the pods.

* Every `reclaim` victim is of another queue than the reclaiming one, and its queue held
  more than its deserved share when its last victim was taken (`ReclaimableFn`).
* With `enabledAllocatable` (the default): at every queue receiving pods,
  allocated (its running pods, less the Decision's victims) + the placed pods' requests
  ≤ deserved, on each resource those pods request. deserved is upstream's weighted
  water-fill (`proportion.go` `OnSessionOpen`), computed here on its own:
  the cluster's allocatable shared by `spec.weight` among the queues that have jobs, each
  capped by its realCapability (min(max(cluster − Σ guarantees, 0) + guarantee,
  capability)) and by its request (its running pods' use plus its pending pods' requests),
  floored at its guarantee, round after round until nothing is left or nothing changes
  (float64 as upstream; a placement within 1e-6 of the share passes).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from functools import partial

import numpy as np

from solver.config import Plugin
from solver.decision import Victim
from solver.model import GPU_MILLI, Pod, gpu_milli, in_gpu_milli, pod_queue
from solver.verify._context import VerifyContext
from solver.verify._queues import (
    UNLIMITED,
    _charged_queue,
    _evicted_use,
)
from solver.verify._shares import shares

__all__ = ["proportion"]

Amounts = dict[str, int]


def _plain(amounts: Amounts) -> Amounts:
    return {r: v for r, v in amounts.items() if r != "pods" and v}


def _fill(
    total: Amounts, weight: dict[str, int], cap: dict[str, Amounts], ask: dict[str, Amounts],
    floor: dict[str, Amounts],
) -> dict[str, dict[str, float]]:  # fmt: skip
    """The water-fill, in float64 as upstream (0.1: its `minResource`)."""
    names = sorted(weight)
    dims = sorted(set(total) | {r for q in names for r in (*ask[q], *floor[q])})
    if not names:
        return {}
    grid = np.array(
        [[[cap[q].get(r, UNLIMITED), ask[q].get(r, 0), floor[q].get(r, 0)] for r in dims]
         for q in names],
        dtype=np.float64,
    ).reshape(len(names), len(dims), 3)  # fmt: skip
    limit = np.where(grid[:, :, 0] >= UNLIMITED, np.inf, grid[:, :, 0])
    wants, least = grid[:, :, 1], grid[:, :, 2]
    w = np.array([weight[q] for q in names], dtype=np.float64)
    left = np.array([total.get(r, 0) for r in dims], dtype=np.float64)
    got = np.zeros_like(wants)
    waiting = np.ones(len(names), dtype=bool)
    for turn in range(len(names) + len(dims) + 2):
        if not waiting.any() or w[waiting].sum() <= 0:
            break
        part = np.where(waiting, w / w[waiting].sum(), 0.0)[:, None]
        new = np.clip(np.minimum(got + left * part, limit), None, wants)
        new = np.where(waiting[:, None], np.maximum(new, least), got)
        satisfied = (wants <= new) | (np.abs(wants - new) < 0.1)
        still = (new == got).all(axis=1) & (turn > 0)
        start = left.copy()
        left = np.maximum(left - (new - got).sum(axis=0), 0.0)
        waiting &= ~(satisfied.all(axis=1) | still)
        got = new
        if (left < 0.1).all() or np.array_equal(left, start):
            break
    return {q: dict(zip(dims, got[i].tolist(), strict=True)) for i, q in enumerate(names)}


def _requests(
    pods: Iterable[Pod], queue_of: dict[str, str | None], milli: bool
) -> dict[str, Amounts]:
    out: dict[str, Amounts] = defaultdict(dict)
    for pod in pods:
        q = queue_of.get(pod.gang) or pod_queue(pod.labels, pod.annotations)
        if q is None:
            continue
        use = _plain(pod.requests)
        if milli:
            use = in_gpu_milli(use, UNLIMITED)
            use[GPU_MILLI] = gpu_milli(pod.requests, pod.annotations)[0]
        for r, v in use.items():
            out[q][r] = out[q].get(r, 0) + v
    return out


def _total(ctx: VerifyContext) -> Amounts:
    """The cluster's allocatable (the verifier's own sum, once per snapshot generation)."""
    total: Amounts = defaultdict(int)
    for node in ctx.snapshot.nodes.nodes:
        for r, v in _plain(node.allocatable).items():
            total[r] += v
    return dict(total)


def _held(ctx: VerifyContext, extra: dict[str, int] | None) -> dict[str, Amounts]:
    """Per queue, what its running pods use (milli-GPUs when `extra` is given): the
    snapshot's per-queue request totals, read as one matrix."""
    running = ctx.snapshot.running
    names = [r for r in running.resources]
    held: dict[str, Amounts] = {}
    for row, values in enumerate(ctx.snapshot.usage.queue_requests.tolist()):
        use = {r: int(v) for r, v in zip(names, values, strict=False) if v and r != "pods"}
        name = running.queue_names.value(row)
        if extra is not None:
            use = in_gpu_milli(use, UNLIMITED)
            use[GPU_MILLI] = use.get(GPU_MILLI, 0) + extra.get(name, 0)
        if use:
            held[name] = use
    return held


Limits = tuple[Amounts, dict[str, int], dict[str, Amounts], dict[str, Amounts]]


def _limits(ctx: VerifyContext, milli: bool) -> Limits:
    """The cluster's total and, per Queue (and the implicit `default`), weight,
    realCapability and guarantee: spec-only, once per snapshot generation."""
    snapshot = ctx.snapshot

    def view(amounts: Amounts) -> Amounts:
        plain = _plain(amounts)
        return in_gpu_milli(plain, UNLIMITED) if milli else plain

    total = view(snapshot.nodes.memo(("verify", "allocatable"), partial(_total, ctx)))
    guaranteed: Amounts = defaultdict(int)
    for queue in snapshot.queues.values():
        for r, v in view(queue.guarantee).items():
            guaranteed[r] += v
    weight, cap, floor = {}, {}, {}
    for name in {*snapshot.queues, "default"}:
        spec = snapshot.queues.get(name)
        floor[name] = view(spec.guarantee) if spec else {}
        limit = view(spec.capability) if spec else {}
        for r in ("cpu", "memory"):
            if limit.get(r, 0) <= 0:
                limit[r] = UNLIMITED
        cap[name] = {
            r: min(
                max(total.get(r, 0) - guaranteed[r], 0) + floor[name].get(r, 0),
                limit.get(r, UNLIMITED),
            )
            for r in set(total) | set(limit) | set(floor[name])
        }
        weight[name] = spec.weight if spec else 1
    return total, weight, cap, floor


def _deserved(
    ctx: VerifyContext, with_jobs: set[str], held: dict[str, Amounts],
    asked: dict[str, Amounts], milli: bool,
) -> dict[str, dict[str, float]]:  # fmt: skip
    total, weights, caps, floors = ctx.snapshot.memo(
        ("verify", "proportion limits", milli), partial(_limits, ctx, milli)
    )
    ask = {}
    for name in with_jobs:
        mine, wants = held.get(name, {}), asked.get(name, {})
        ask[name] = {r: mine.get(r, 0) + wants.get(r, 0) for r in set(mine) | set(wants)}
    pick = sorted(with_jobs)
    return _fill(
        total,
        {q: weights[q] for q in pick},
        {q: caps[q] for q in pick},
        ask,
        {q: floors[q] for q in pick},
    )


def proportion(ctx: VerifyContext) -> list[str]:
    problems: list[str] = []
    placed = [pod for pods in ctx.new_on.values() for pod in pods]
    plugin = ctx.conf.plugin(Plugin.PROPORTION)
    allocatable = plugin is not None and plugin.options.get("enabledAllocatable") is not False
    reclaimed = [v for v in ctx.decision.victims if v.cause == "reclaim"]
    if not (allocatable and placed) and not reclaimed:
        return problems
    if any(q.kai is not None or q.kueue is not None for q in ctx.snapshot.queues.values()):
        return problems  # KAI Queues: `_kai`
    snapshot = ctx.snapshot
    gangs = {**snapshot.gangs, **ctx.workload.gangs}
    queue_of = {gid: g.queue or None for gid, g in gangs.items()}
    pending = {**snapshot.pending, **ctx.workload.pod_by_key}
    shared = shares(snapshot, ctx.workload, partial(_charged_queue, ctx))
    milli = shared is not None
    asked = _requests(pending.values(), queue_of, milli)
    held = _held(ctx, shared[1] if shared is not None else None)
    named = {q for q in queue_of.values() if q}
    with_jobs = (set(held) | set(asked) | named) & (set(snapshot.queues) | {"default"})
    deserved = _deserved(ctx, with_jobs, held, asked, milli)
    if allocatable:
        freed = _evicted_use(ctx, False, False)
        for name, extra in sorted(_requests(placed, queue_of, milli).items()):
            for r, v in sorted(extra.items()):
                now = held.get(name, {}).get(r, 0) - freed.get(name, {}).get(r, 0)
                limit = deserved.get(name, {}).get(r, 0.0)
                if v and now + v > limit + 1e-6:
                    problems.append(
                        f"queue {name}: {r} allocated {now} + placed {v} > deserved {limit:g}"
                    )
    problems.extend(_reclaimed_over_share(ctx, reclaimed, held, deserved))
    return problems


def _reclaimed_over_share(
    ctx: VerifyContext,
    reclaimed: list[Victim],
    held: dict[str, Amounts],
    deserved: dict[str, dict[str, float]],
) -> list[str]:
    """A reclaim victim's queue was above its deserved share when its last victim was taken:
    its use less every other victim of it is still beyond deserved on some resource (0.1
    tolerance, upstream's `LessEqual`), and the victim is not of the reclaiming queue."""
    running = ctx.snapshot.running
    taken: dict[str, list[Amounts]] = defaultdict(list)
    problems = []
    for victim in reclaimed:
        row = running.find(victim.pod)
        queue = _charged_queue(ctx, row) if row >= 0 else None
        if queue is None or queue == victim.queue:
            problems.append(f"{victim.pod}: reclaimed for queue {victim.queue} from its own queue")
            continue
        use = dict(zip(running.resources, running.requests()[row].tolist(), strict=False))
        taken[queue].append(_plain(use))
    for queue, uses in sorted(taken.items()):
        mine, share = held.get(queue, {}), deserved.get(queue, {})
        dims = set(mine) | {r for u in uses for r in u}
        last = {r: max(u.get(r, 0) for u in uses) for r in dims}
        left = {r: mine.get(r, 0) - sum(u.get(r, 0) for u in uses) + last[r] for r in dims}
        if all(v <= share.get(r, 0.0) + 0.1 for r, v in left.items()):
            problems.append(
                f"queue {queue}: {len(uses)} pod(s) reclaimed although it was within its "
                "deserved share"
            )
    return problems
