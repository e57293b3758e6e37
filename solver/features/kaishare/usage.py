"""Time-based fair share: each KAI queue's historical usage, normalised to the cluster.

KAI-Scheduler keeps every queue's allocation over time in a usage database and hands the
`proportion` plugin, per queue and resource, the usage over a window normalised to what
the cluster could have given in that window (`pkg/scheduler/cache/usagedb`; its fake
client `fake_with_history.go` is the formula). The division then gives a queue with more
usage less of the surplus (`division.py`, s_q = max(0, n_q + k·(n_q − u_q))).

gangplan queries no database. With `usageDBConfig` in the conf, a queue's usage u_q,r is

* its `gangplan.io/usage` annotation (proto `KaiQueueResources.usage`) when given — what a
  front end copies from KAI's usage database; else
* accumulated from the running pods charged to it or to a queue below it, from their
  creationTimestamp to T, the snapshot's time (`Snapshot.observed`):

      d(t)    = 2^(−(T − t)/h)            (1 without a half-life h: no decay)
      U_q,r   = Σ_pods  req_p,r · ∫ d(t) dt   over [max(s_p, T − W), T]
      C_r     = cap_r · ∫ d(t) dt            over [T − W, T]
      u_q,r   = U_q,r / C_r

  with W the window, s_p the pod's creation time, cap_r the cluster's allocatable now, and
  ∫_a^T d(t) dt = (h / ln 2)·(1 − 2^(−(T − a)/h)) (T − a without decay). A pod of unknown
  creation time (or one created after T) counts nothing; pods that ran and ended before
  the snapshot are not in it (give the annotation to count them).

Worked example (`tests/features/kaishare/test_usage.py`): 16 GPUs, W = 10 h, no decay; a
queue running 8 GPUs for the last 3 h used 24 GPU-hours of 160: u = 0.15. With h = 1 h the
same pods count 8·(1 − 2^−3)/ln 2 = 10.10 of 16·(1 − 2^−10)/ln 2 = 23.06: u = 0.438.

Cost: one pass over the running rows' columns (numpy) per snapshot generation, memoised.
"""

from __future__ import annotations

import math

import numpy as np

from solver.conf_keys import UsageParams
from solver.features.queues import ROOT, QueueTree
from solver.model import KAI_RESOURCES
from solver.snapshot import NONE, Snapshot, charged_queue

__all__ = ["decayed_span", "queue_usage"]

Amounts = dict[str, float]


def decayed_span(length: np.ndarray | float, half_life: float | None) -> np.ndarray | float:
    """∫ d(t) dt over the last `length` seconds before T (`length` ≤ 0 gives 0)."""
    span = np.maximum(length, 0.0)
    if not half_life:
        return span
    return (half_life / math.log(2)) * (1.0 - np.exp2(-span / half_life))


def queue_usage(snapshot: Snapshot, tree: QueueTree, params: UsageParams) -> dict[str, Amounts]:
    """u_q,r for every queue of `tree` (the module docstring); memoised per generation."""
    key = ("kaishare", "usage", params, tuple(sorted(tree.queues)))
    return snapshot.memo(key, lambda: _usage(snapshot, tree, params))


def _usage(snapshot: Snapshot, tree: QueueTree, params: UsageParams) -> dict[str, Amounts]:
    given = {
        n: dict(q.spec.kai.usage)
        for n, q in tree.queues.items()
        if q.spec is not None and q.spec.kai is not None and q.spec.kai.usage
    }
    accrued = _accrued(snapshot, tree, params)
    total = snapshot.nodes.total
    window = float(decayed_span(params.window, params.half_life))
    out: dict[str, Amounts] = {}
    for name in tree.queues:
        if name == ROOT:
            continue
        if name in given:
            out[name] = {r: given[name].get(r, 0.0) for r in KAI_RESOURCES}
            continue
        mine = accrued.get(name, {})
        out[name] = {
            r: mine.get(r, 0.0) / (total[r] * window) if total.get(r, 0) > 0 and window else 0.0
            for r in KAI_RESOURCES
        }
    return out


def _accrued(snapshot: Snapshot, tree: QueueTree, params: UsageParams) -> dict[str, Amounts]:
    """U_q,r of every queue, its subtree's pods included."""
    running = snapshot.running
    rows = running.rows()
    if rows.size == 0:
        return {}
    started = running.started[rows]
    known = np.isfinite(started)
    rows, started = rows[known], started[known]
    begin = np.maximum(started, snapshot.observed - params.window)
    weight = np.asarray(decayed_span(snapshot.observed - begin, params.half_life))
    queue_ids = charged_queue(running, rows, snapshot.gang_queue)
    names = running.resources
    columns = [names.index(r) if r in names else -1 for r in KAI_RESOURCES]
    requests = running.requests()[rows]
    out: dict[str, Amounts] = {}
    charged = queue_ids != NONE
    ids = queue_ids[charged]
    if ids.size == 0:
        return out
    width = int(ids.max()) + 1
    per_queue = np.zeros((width, len(KAI_RESOURCES)), dtype=np.float64)
    for j, col in enumerate(columns):
        if col >= 0 and col < requests.shape[1]:
            per_queue[:, j] = np.bincount(
                ids, weights=(requests[charged, col] * weight[charged]), minlength=width
            )
    for qid in np.flatnonzero(per_queue.any(axis=1)).tolist():
        leaf = running.queue_names.value(qid)
        if leaf not in tree.queues:
            continue
        for name in tree.path(leaf):
            mine = out.setdefault(name, {})
            for j, r in enumerate(KAI_RESOURCES):
                mine[r] = mine.get(r, 0.0) + float(per_queue[qid, j])
    return out
