"""KAI-Scheduler's queue limits, re-derived from the KAI Queue specs and the pods.

For every KAI Queue on the path of a placed pod's job (its leaf queue and every ancestor by
`parentQueue`), on CPU (milli), memory (bytes) and GPUs (a shared GPU pod's fraction
included):

* `limit` (not -1): what the queue's subtree holds (its running pods, less the Decision's
  victims) + what the Decision places in it ≤ limit (`resultsOverLimit`); a resource the
  Queue does not name has limit 0, as KAI reads an unset field;
* for a non-preemptible job (its PodGroup's `preemptibility`, else its PodGroup's priority,
  else its pod's, ≥ 100): what the
  subtree's running non-preemptible pods hold + what the Decision places of non-preemptible
  jobs ≤ quota (not -1) (`resultsWithNonPreemptibleOverQuota`);
* the job's queue is a leaf (KAI schedules jobs of leaf queues only);
* every `reclaim` victim is preemptible and of another queue than the reclaiming one, and
  where the two queues' paths part, the victim's side held more than min(quota, limit) on
  some resource when its last victim was taken (what both of KAI's reclaim strategies
  imply: over its allocatable share, or over its quota).

* no victim's job is younger than its minimum runtime (KAI's `minruntime`) unless it keeps
  its minMember running: the job's last start (its running pods' latest creation time)
  plus the minimum is not after the snapshot's time. The minimum is re-derived from the
  Queues: preemption, the victim's queue's `preemptMinRuntime` or the nearest ancestor's;
  reclaim, `reclaimMinRuntime` from the queue one step below where the two queues' paths
  meet (`lca`; for different top-level queues the victim's top-level one) up to the top,
  or from the victim's queue up (`queue`); else the plugin's default.

A placement within 1e-6 of a fractional limit passes.
"""

from __future__ import annotations

from collections import defaultdict
from functools import partial

import numpy as np

from solver.conf_keys import parse_go_duration
from solver.config import Plugin
from solver.model import GPU_RESOURCE, KAI_UNLIMITED, gpu_milli, kai_preemptible
from solver.snapshot import charged_queue
from solver.verify._context import VerifyContext
from solver.verify._queues import _charged_queue, _queue_of
from solver.verify._shares import shares

__all__ = ["kai_limits"]

RESOURCES = ("cpu", "memory", GPU_RESOURCE)

Amounts = dict[str, float]


def _use(requests: dict[str, int], annotations: dict[str, str]) -> Amounts:
    return {
        "cpu": float(requests.get("cpu", 0)),
        "memory": float(requests.get("memory", 0)),
        GPU_RESOURCE: gpu_milli(requests, annotations)[0] / 1000,
    }


def _path(parents: dict[str, str | None], leaf: str) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    walk: str | None = leaf
    while walk is not None and walk in parents and walk not in seen:
        seen.add(walk)
        out.append(walk)
        walk = parents[walk]
    return out


def kai_limits(ctx: VerifyContext) -> list[str]:
    queues = ctx.snapshot.queues
    if not any(q.kai is not None for q in queues.values()):
        return []
    placed = [pod for pods in ctx.new_on.values() for pod in pods]
    parents = {name: q.parent for name, q in queues.items()}
    problems = _reclaimed(ctx, parents) + _young(ctx, parents)
    if not placed:
        return problems
    children = {p for p in parents.values() if p is not None}
    gangs = {**ctx.snapshot.gangs, **ctx.workload.gangs}
    held, firm = _running(ctx, parents)
    added: dict[str, Amounts] = defaultdict(lambda: defaultdict(float))
    added_firm: dict[str, Amounts] = defaultdict(lambda: defaultdict(float))
    for pod in placed:
        leaf = _queue_of(ctx, pod.gang)
        if leaf is None or leaf not in queues:
            continue
        if leaf in children:
            problems.append(f"{pod.key}: placed although queue {leaf} is not a leaf queue")
        use = _use(pod.requests, pod.annotations)
        gang = gangs.get(pod.gang)
        priority = gang.priority if gang is not None and gang.priority is not None else pod.priority
        non_preemptible = not kai_preemptible(gang, priority, pod.labels)
        for name in _path(parents, leaf):
            for r, v in use.items():
                added[name][r] += v
                if non_preemptible:
                    added_firm[name][r] += v
    for name in sorted(added):
        kai = queues[name].kai
        if kai is None:
            continue
        for r in RESOURCES:
            limit = kai.limit.get(r, 0.0)
            now, more = held.get(name, {}).get(r, 0.0), added[name][r]
            if more and limit != KAI_UNLIMITED and now + more > limit + 1e-6:
                problems.append(
                    f"queue {name}: {r} held {now:g} + placed {more:g} > limit {limit:g}"
                )
            quota = kai.quota.get(r, 0.0)
            mine, firm_more = firm.get(name, {}).get(r, 0.0), added_firm[name][r]
            if firm_more and quota != KAI_UNLIMITED and mine + firm_more > quota + 1e-6:
                problems.append(
                    f"queue {name}: {r} non-preemptible held {mine:g} + placed {firm_more:g} > "
                    f"quota {quota:g}"
                )
    return problems


def _running(
    ctx: VerifyContext, parents: dict[str, str | None]
) -> tuple[dict[str, Amounts], dict[str, Amounts]]:
    """Per queue (its subtree), what its running pods hold, and its non-preemptible ones
    (whole GPUs), less the Decision's victims."""
    snapshot = ctx.snapshot
    base = snapshot.memo(("verify", "kai held"), lambda: _held(ctx))
    held: dict[str, Amounts] = defaultdict(lambda: defaultdict(float))
    firm: dict[str, Amounts] = defaultdict(lambda: defaultdict(float))
    running = snapshot.running
    rows = running.find_many(sorted(ctx.evicted)) if ctx.evicted else np.zeros(0, dtype=np.int64)
    gone = [(int(r), -1.0) for r in rows.tolist() if r >= 0]
    for (leaf, is_firm), use in base.items():
        _add(held, parents, leaf, use, 1.0)
        if is_firm:
            _add(firm, parents, leaf, use, 1.0)
    names = running.resources
    requests = running.requests()
    for row, sign in gone:
        charged = _charged_queue(ctx, row)
        if charged is None:
            continue
        use = _use(
            dict(zip(names, requests[row].tolist(), strict=False)), dict(running.annotations(row))
        )
        _add(held, parents, charged, use, sign)
        if _firm(ctx, row):
            _add(firm, parents, charged, use, sign)
    return held, firm


def _add(
    into: dict[str, Amounts], parents: dict[str, str | None], leaf: str, use: Amounts, sign: float
) -> None:
    for name in _path(parents, leaf):
        for r, v in use.items():
            into[name][r] += sign * v


def _firm(ctx: VerifyContext, row: int) -> bool:
    """A running pod's job is non-preemptible (its PodGroup's preemptibility, else its
    pod's label, else the PodGroup's priority, else the pod's)."""
    running = ctx.snapshot.running
    gang_id = int(running.gang[row])
    gang = ctx.snapshot.gangs.get(running.gang_name(gang_id)) if gang_id >= 0 else None
    own = int(running.priority[row])
    return not kai_preemptible(
        gang,
        gang.priority if gang is not None and gang.priority is not None else own,
        running.labels(row),
    )


def _held(ctx: VerifyContext) -> dict[tuple[str, bool], Amounts]:
    """(leaf queue, non-preemptible) -> what its running pods hold: the rows summed with
    numpy by the queue each is charged to; a shared GPU pod's fraction from `shares`."""
    snapshot = ctx.snapshot
    running = snapshot.running
    rows = running.rows()
    if not rows.size:
        return {}
    ids = charged_queue(running, rows, snapshot.gang_queue)
    queue = np.array(
        [running.queue_names.value(int(q)) if q >= 0 else "" for q in ids.tolist()], dtype=object
    )
    specs = [snapshot.gangs.get(running.gang_name(i)) for i in range(len(running.gang_names))]
    label_sets = running.label_sets
    firm_rows = np.array(
        [
            not kai_preemptible(
                spec := specs[g] if g >= 0 else None,
                spec.priority if spec is not None and spec.priority is not None else p,
                label_sets[ls],
            )
            for g, p, ls in zip(
                running.gang[rows].tolist(),
                running.priority[rows].tolist(),
                running.label_set[rows].tolist(),
                strict=True,
            )
        ],
        dtype=bool,
    )
    cols = running.requests(RESOURCES)[rows].astype(np.float64)
    out: dict[tuple[str, bool], Amounts] = {}
    for leaf in sorted(set(queue.tolist()) - {""}):
        mine = queue == leaf
        for is_firm in (False, True):
            pick = mine & (firm_rows == is_firm)
            if pick.any():
                total = cols[pick].sum(axis=0).tolist()
                out[(leaf, is_firm)] = dict(zip(RESOURCES, total, strict=True))
    shared = shares(snapshot, ctx.workload, partial(_charged_queue, ctx))
    for leaf, extra in (shared[1] if shared is not None else {}).items():
        entry = out.setdefault((leaf, False), dict.fromkeys(RESOURCES, 0.0))
        entry[GPU_RESOURCE] += extra / 1000
    return out


def _reclaimed(ctx: VerifyContext, parents: dict[str, str | None]) -> list[str]:
    victims = [v for v in ctx.decision.victims if v.cause == "reclaim"]
    if not victims:
        return []
    snapshot, running = ctx.snapshot, ctx.snapshot.running
    names, requests = running.resources, running.requests()
    held, _ = _running(ctx, parents)  # victims already gone
    taken: dict[str, dict[str, Amounts]] = defaultdict(dict)  # victims' side -> job -> use
    problems = []
    for v in victims:
        row = running.find(v.pod)
        queue = _charged_queue(ctx, row) if row >= 0 else None
        if queue is None or queue not in parents or v.queue not in parents:
            continue
        if queue == v.queue:
            problems.append(f"{v.pod}: reclaimed for queue {v.queue} from its own queue")
            continue
        if _firm(ctx, row):
            problems.append(f"{v.pod}: a non-preemptible pod reclaimed")
        theirs, mine = _path(parents, queue)[::-1], _path(parents, v.queue)[::-1]
        depth = 0
        while depth < min(len(theirs), len(mine)) - 1 and theirs[depth] == mine[depth]:
            depth += 1
        use = _use(
            dict(zip(names, requests[row].tolist(), strict=False)), dict(running.annotations(row))
        )
        gang = int(running.gang[row])
        job = running.gang_name(gang) if gang >= 0 else v.pod  # KAI takes a job whole
        so_far = taken[theirs[depth]].setdefault(job, dict.fromkeys(RESOURCES, 0.0))
        for r in RESOURCES:
            so_far[r] += use[r]
    for side, jobs in sorted(taken.items()):
        kai = snapshot.queues[side].kai
        if kai is None:
            continue
        uses = list(jobs.values())
        last = {r: max(u[r] for u in uses) for r in RESOURCES}
        left = {r: held.get(side, {}).get(r, 0.0) + last[r] for r in RESOURCES}
        bound = {
            r: min(x for x in (kai.quota.get(r, 0.0), kai.limit.get(r, 0.0)) if x != KAI_UNLIMITED)
            if any(x != KAI_UNLIMITED for x in (kai.quota.get(r, 0.0), kai.limit.get(r, 0.0)))
            else float("inf")
            for r in RESOURCES
        }
        if all(left[r] <= bound[r] + 1e-6 for r in RESOURCES):
            problems.append(
                f"queue {side}: {len(uses)} pod(s) reclaimed although it held no more than "
                "its quota (and limit) before the last"
            )
    return problems


def _minimum(
    ctx: VerifyContext, parents: dict[str, str | None], victim: str, cause: str, by: str
) -> float:
    """The victim queue's minimum runtime in seconds (see the module docstring)."""
    queues = ctx.snapshot.queues
    plugin = ctx.conf.plugin(Plugin.MINRUNTIME)
    args = plugin.arguments if plugin is not None else {}
    field = "preempt_min_runtime" if cause == "preemption" else "reclaim_min_runtime"
    key = "defaultPreemptMinRuntime" if cause == "preemption" else "defaultReclaimMinRuntime"
    default = parse_go_duration(args.get(key, "0s"))
    fallback = default if default is not None and default >= 0 else 0.0
    theirs = _path(parents, victim)[::-1]  # top-level first

    def value(name: str) -> float | None:
        kai = queues[name].kai
        return getattr(kai, field) if kai is not None else None

    start = len(theirs) - 1
    if cause != "preemption" and args.get("reclaimResolveMethod", "lca") != "queue":
        mine = _path(parents, by)[::-1] or [by]
        if mine[0] != theirs[0]:
            own = value(theirs[0])
            return fallback if own is None else own
        depth = 0
        while depth + 1 < min(len(mine), len(theirs)) and mine[depth + 1] == theirs[depth + 1]:
            depth += 1
        start = min(depth + 1, len(theirs) - 1)
    for name in reversed(theirs[: start + 1]):
        if (own := value(name)) is not None:
            return own
    return fallback


def _young(ctx: VerifyContext, parents: dict[str, str | None]) -> list[str]:
    snapshot, running = ctx.snapshot, ctx.snapshot.running
    problems = []
    seen: set[str] = set()
    for v in ctx.decision.victims:
        row = running.find(v.pod)
        queue = _charged_queue(ctx, row) if row >= 0 else None
        if queue is None or queue not in parents or snapshot.queues[queue].kai is None:
            continue
        gang = int(running.gang[row])
        job = running.gang_name(gang) if gang >= 0 else v.pod
        if job in seen:
            continue
        seen.add(job)
        rows = snapshot.rows_of_gang(job) if gang >= 0 else np.array([row])
        started = running.started[rows]
        started = started[np.isfinite(started)]
        if not started.size:
            continue
        minimum = _minimum(ctx, parents, queue, v.cause, v.queue or queue)
        if snapshot.observed >= float(started.max()) + minimum:
            continue
        spec = snapshot.gangs.get(job)
        least = max(spec.min_member if spec is not None else 1, 1)
        left = sum(1 for r in rows.tolist() if running.key(int(r)) not in ctx.evicted)
        if left < least:
            problems.append(
                f"{v.pod}: its job {job} started {snapshot.observed - float(started.max()):.0f}s "
                f"ago, within its {v.cause} minimum runtime of {minimum:g}s, and keeps {left} "
                f"of its {least} minMember pod(s)"
            )
    return problems
