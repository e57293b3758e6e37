"""KAI-Scheduler's `minruntime` plugin: a job that started recently is not a victim yet.

Ported from `pkg/scheduler/plugins/minruntime/` (`minruntime.go`, `resolver.go`). A KAI
Queue may set `preemptMinRuntime` and `reclaimMinRuntime`; the plugin's arguments give
`defaultPreemptMinRuntime`, `defaultReclaimMinRuntime` (both 0s unless set) and
`reclaimResolveMethod` (`lca`, the default, or `queue`).

* **Which minimum** (`resolver.go`):
  - preempt: the victim's queue's `preemptMinRuntime`, else the nearest ancestor's, else
    the default;
  - reclaim, `queue`: the same walk with `reclaimMinRuntime`;
  - reclaim, `lca`: below the lowest common ancestor of the reclaimer's and the victim's
    queues, one step down towards the victim (the victim's own queue when it is the
    reclaimer's), then up towards the root; for queues under different top-level queues
    only the victim's top-level queue is read (KAI's "shadow parent"), else the default.
* **Protected** (`isPreemptMinRuntimeProtected`): the victim job's last start plus its
  minimum is after T, the snapshot's time. gangplan takes a job's last start as the latest
  creation time among its running pods; a job without one is not protected, as in KAI.
* **What protection means**: a job whose running pods are no more than its minMember is
  not a victim at all (`preemptFilterFn`, `reclaimFilterFn`); an elastic one (more pods
  than minMember) may still lose the pods beyond it, never its minMember core (the
  scenario validators' `validVictimForMinAvailable`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from solver.conf_keys import parse_go_duration
from solver.config import Plugin, SchedulerConf
from solver.model import Queue
from solver.problem import IntArray
from solver.snapshot import NONE, Snapshot, charged_queue

__all__ = ["PLUGIN", "MinRuntime", "job_started", "preempt_held_rows"]

PLUGIN = Plugin.MINRUNTIME
_METHODS = ("lca", "queue")


@dataclass(frozen=True)
class MinRuntime:
    """The plugin's arguments (seconds) and the KAI Queues it reads."""

    queues: Mapping[str, Queue]
    default_preempt: float = 0.0
    default_reclaim: float = 0.0
    method: str = "lca"

    @classmethod
    def of(cls, queues: Mapping[str, Queue], conf: SchedulerConf) -> MinRuntime:
        """From the conf's `minruntime` plugin arguments (KAI: an unreadable or negative
        duration is 0s, an unknown method is `lca`)."""
        plugin = conf.plugin(PLUGIN)
        args = plugin.arguments if plugin is not None else {}

        def seconds(key: str) -> float:
            value = parse_go_duration(args.get(key, "0s"))
            return value if value is not None and value >= 0 else 0.0

        method = args.get("reclaimResolveMethod") or "lca"
        return cls(
            queues,
            seconds("defaultPreemptMinRuntime"),
            seconds("defaultReclaimMinRuntime"),
            method if method in _METHODS else "lca",
        )

    def _path(self, name: str) -> list[str]:
        """`name` and its ancestors, top-level first (a missing parent ends the path)."""
        path: list[str] = []
        current: str | None = name
        while current is not None and current in self.queues and current not in path:
            path.insert(0, current)
            current = self.queues[current].parent
        return path

    def _own(self, name: str, field: str) -> float | None:
        queue = self.queues.get(name)
        kai = queue.kai if queue is not None else None
        return getattr(kai, field) if kai is not None else None

    def _walk_up(self, path: list[str], start: int, field: str, default: float) -> float:
        for i in range(start, -1, -1):
            if (value := self._own(path[i], field)) is not None:
                return value
        return default

    def preempt(self, victim: str) -> float:
        """`resolvePreemptMinRuntime`."""
        path = self._path(victim)
        if not path:  # a queue gangplan does not know
            return self.default_preempt
        return self._walk_up(path, len(path) - 1, "preempt_min_runtime", self.default_preempt)

    def reclaim(self, reclaimer: str, victim: str) -> float:
        """`getReclaimMinRuntime` with the configured method."""
        field = "reclaim_min_runtime"
        theirs = self._path(victim)
        if not theirs:  # a queue gangplan does not know: its own value, else the default
            own = self._own(victim, field)
            return self.default_reclaim if own is None else own
        if self.method == "queue":
            return self._walk_up(theirs, len(theirs) - 1, field, self.default_reclaim)
        mine = self._path(reclaimer) or [reclaimer]
        if mine[0] != theirs[0]:  # different top-level queues: the shadow parent
            own = self._own(theirs[0], field)
            return self.default_reclaim if own is None else own
        lca = 0
        for i in range(min(len(mine), len(theirs))):
            if mine[i] != theirs[i]:
                break
            lca = i
        if lca + 1 < len(theirs):
            lca += 1
        return self._walk_up(theirs, lca, field, self.default_reclaim)


def protected(started: float | None, minimum: float, now: float) -> bool:
    """`LastStartTimestamp + minRuntime` is after `now` (a job never started is not)."""
    return started is not None and math.isfinite(started) and now < started + minimum


def job_started(snapshot: Snapshot, rows: IntArray) -> float | None:
    """A job's last start: the latest creation time among its running `rows`."""
    started = snapshot.running.started[rows]
    known = started[np.isfinite(started)]
    return float(known.max()) if known.size else None


def preempt_held_rows(snapshot: Snapshot, conf: SchedulerConf, rows: IntArray) -> IntArray:
    """Of the evictable `rows`, those `preempt` may not take: every pod of a protected job
    in a KAI queue with no more running pods than its minMember, and the minMember core
    (its first pods by key) of a protected elastic one. Columns, not a loop over pods: only
    the protected elastic jobs are walked."""
    empty = np.zeros(0, dtype=np.int64)
    if not rows.size or not any(q.kai is not None for q in snapshot.queues.values()):
        return empty
    rules = MinRuntime.of(snapshot.queues, conf)
    if not rules.default_preempt and not any(
        q.kai is not None and q.kai.preempt_min_runtime for q in snapshot.queues.values()
    ):
        return empty
    running = snapshot.running
    queue_ids = charged_queue(running, rows, snapshot.gang_queue)
    minimum = np.full(len(running.queue_names) + 1, -np.inf)  # [queue id] (last: none)
    for qid in np.unique(queue_ids[queue_ids != NONE]).tolist():
        name = running.queue_names.value(qid)
        spec = snapshot.queues.get(name)
        if spec is not None and spec.kai is not None:
            minimum[qid] = rules.preempt(name)
    per_row = minimum[np.where(queue_ids == NONE, -1, queue_ids)]
    gangs = running.gang[rows].astype(np.int64)
    job_key = np.where(gangs != NONE, gangs, -(rows.astype(np.int64) + 1))
    keys, job = np.unique(job_key, return_inverse=True)
    started = running.started[rows]
    last = np.full(keys.size, -np.inf)
    np.fmax.at(last, job, np.where(np.isfinite(started), started, -np.inf))
    least = np.full(keys.size, -np.inf)
    np.fmax.at(least, job, per_row)
    young = np.isfinite(last) & np.isfinite(least) & (snapshot.observed < last + least)
    if not young.any():
        return empty
    held = young[job].copy()
    for j in np.flatnonzero(young & (keys >= 0)).tolist():  # gangs: all go, or the core
        gang = snapshot.gangs.get(running.gang_name(int(keys[j])))
        core = max(gang.min_member if gang is not None else 1, 1)
        count = snapshot.gang_running(gang.id) if gang is not None else int((job == j).sum())
        if count > core:  # elastic: the pods beyond minMember may go
            members = np.flatnonzero(job == j)
            keep = sorted(members.tolist(), key=lambda v: running.key(int(rows[v])))[:core]
            held[members] = False
            held[keep] = True
    return np.sort(rows[held]).astype(np.int64)
