"""Volcano's `drf` plugin: jobs in dominant-share order (`drf.go`, `JobOrderFn`).

A job's dominant share is the largest, over the cluster's resources, of what its running
pods use divided by the cluster's allocatable (`calculateShare`; `pods` is not a resource
here). Inside a queue, jobs of one priority go lower share first (`CompileContext.unit_key`
criterion 3); a gang group's share is that of its gangs' running pods together. As for the
queue order, shares are those at the start of the cycle (Volcano updates a job's share
after each of its tasks is allocated).

Its preemption rule — victims only from jobs whose dominant share stays at least the
preemptor's — is `preempt.py`, applied by `features.preemption`.

With `enableHierarchy` (hierarchical DRF, upstream's `hdrf`) the queues are ordered by
their hDRF shares down the paths their annotations give (`hdrf.py`), and the greedy takes
the jobs as Volcano's allocate loop does — until ready, then one task a turn, every order
taken again after each step (`order.py` on `features.queues.loop`). CP-SAT does not encode that
order: `cpsat` and `auto` answer with the greedy's placement, saying so. With the
`reclaim` action, hDRF's reclaim rule (`ReclaimableFn`) judges every victim the quota
plugin's reclaim offers (`reclaim.py`).
"""

from __future__ import annotations

import numpy as np

from solver.config import Plugin, SchedulerConf
from solver.features._base import CompileContext, Feature
from solver.features._steps import CpsatSteps, GreedySteps
from solver.features.drf.hdrf import HdrfTree, hierarchy_path
from solver.features.drf.order import HdrfBlock, hdrf_block, hdrf_loop
from solver.features.drf.reclaim import FilteredReclaimer, HdrfReclaim
from solver.features.drf.view import hdrf_view
from solver.features.queues import MAX_STEP_COMPARISONS, loop_fits, queue_dialect
from solver.problem import Problem
from solver.snapshot import Snapshot

__all__ = [
    "FEATURE",
    "FilteredReclaimer",
    "HdrfBlock",
    "HdrfReclaim",
    "HdrfTree",
    "dominant_shares",
    "hdrf_view",
    "hierarchical",
    "hierarchy_path",
]


def hierarchical(conf: SchedulerConf, snapshot: Snapshot) -> bool:
    """hDRF is on: `drf` listed with `enableHierarchy`, and the queues are Volcano's (KAI's
    Queues run KAI's own order whatever Volcano plugins a conf lists)."""
    drf = conf.plugin(Plugin.DRF)
    hdrf = drf is not None and drf.options.get("enableHierarchy") is True
    return hdrf and queue_dialect(snapshot) == "volcano"


def dominant_shares(snapshot: Snapshot, gang_ids: list[list[str]]) -> list[float]:
    """Per group of gangs, the dominant share of their running pods together."""
    total = snapshot.nodes.total
    names = snapshot.running.resources
    usage = snapshot.usage.gang_requests
    cols = [i for i, r in enumerate(names) if total.get(r, 0) > 0]
    if not cols:
        return [0.0] * len(gang_ids)
    capacity = np.array([total[names[i]] for i in cols], dtype=np.float64)
    out = []
    for gangs in gang_ids:
        rows = [g for gid in gangs if 0 <= (g := snapshot.running.gang_id(gid)) < usage.shape[0]]
        if not rows:
            out.append(0.0)
            continue
        used = usage[np.array(rows)][:, cols].sum(axis=0)
        out.append(float((used / capacity).max()))
    return out


def _compile(ctx: CompileContext) -> None:
    plan = ctx.gangs
    groups: list[list[str]] = [[] for _ in plan.unit_ids]
    for g, u in enumerate(plan.unit):
        groups[u].append(plan.gang_ids[g])
    ctx.unit_share = dominant_shares(ctx.snapshot, groups)
    if hierarchical(ctx.conf, ctx.snapshot) and len(plan.unit_ids) > 1:
        if loop_fits(ctx):
            ctx.add_block(hdrf_block(ctx))
        else:
            ctx.notes.append(
                "drf: enableHierarchy: the call is too large for Volcano's allocate loop "
                f"(steps × queues above {MAX_STEP_COMPARISONS:,}): jobs are taken whole in "
                "the quota plugin's order"
            )


def _unsupported(problem: Problem) -> str | None:
    if problem.block(HdrfBlock) is None:
        return None
    return "hierarchical DRF's order (drf enableHierarchy), which moves with every task"


FEATURE = Feature(
    name="drf",
    plugins=(Plugin.DRF,),
    compile=_compile,
    greedy=GreedySteps(order=hdrf_loop),
    cpsat=CpsatSteps(unsupported=(_unsupported,)),
)
