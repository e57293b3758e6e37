"""KAI-Scheduler's `proportion` plugin: fair share down a tree of KAI Queues.

    division.py    the fair shares: quota first, then the surplus by over-quota weight
                   within each priority, level by level down the tree
    mode.py        the plugin as a `QuotaMode` of the shared queue machinery
                   (`features.queues`): limits at every level, non-preemptible jobs
                   within quota, the call's fair shares
    order.py       KAI's queue order, as numbered criteria
    reclaim.py     KAI's reclaim: who may, the victims, their order and the strategies
    usage.py       time-based fair share: each queue's historical usage (`usageDBConfig`)
    minruntime.py  KAI's `minruntime`: jobs younger than their queue's minimum runtime
                   are not preemption or reclaim victims

On whenever the snapshot's Queues are KAI's (`scheduling.run.ai/v2`; KAI always runs its
`proportion`), whatever Volcano plugins the conf lists: Volcano's quota plugins read only
Volcano Queues (`QuotaMode.dialect`). A job is in the queue its PodGroup's `spec.queue`
names, else the one its pod's label `kai.scheduler/queue` names; KAI places jobs of leaf
queues only, so a job of a queue with children waits with that reason.
"""

from __future__ import annotations

from solver.config import SchedulerConf
from solver.features._base import CompileContext, Feature
from solver.features.devices.quota import shares_in_play
from solver.features.kaishare.division import Share, divide, set_resource_share
from solver.features.kaishare.mode import NON_PREEMPTIBLE, KaiMode
from solver.features.kaishare.order import KaiOrder, allocatable_share, dominant_share
from solver.features.kaishare.reclaim import KaiReclaim, kai_reclaim
from solver.features.queues import QueueTree, build_queue_tree, compile_quotas
from solver.model import job_queue
from solver.snapshot import Snapshot, Workload

__all__ = [
    "FEATURE",
    "NON_PREEMPTIBLE",
    "KaiMode",
    "KaiOrder",
    "KaiReclaim",
    "Share",
    "allocatable_share",
    "divide",
    "dominant_share",
    "kai_reclaim",
    "set_resource_share",
    "settled_kai_tree",
]


def settled_kai_tree(
    snapshot: Snapshot, workload: Workload, conf: SchedulerConf
) -> tuple[QueueTree, KaiMode] | None:
    """The KAI queue tree with every queue's fair share divided for `workload` (in the
    mode's `fair`); None without KAI Queues or with a broken tree."""
    mode = KaiMode(conf)
    if not any(q.kai is not None for q in snapshot.queues.values()):
        return None
    queues = [job_queue(g, workload.members(gid)) for gid, g in workload.gangs.items()]
    tree = build_queue_tree(snapshot, mode, (q for q in queues if q))
    if tree is None or tree.broken:
        return None
    mode.settle(snapshot, workload, tree, queues)
    return tree, mode


def _compile(ctx: CompileContext) -> None:
    mode = KaiMode(ctx.conf, gpu_milli=shares_in_play(ctx.snapshot, ctx.workload))
    tree = compile_quotas(ctx, mode)
    if tree is None or tree.broken:
        return
    for g, gid in enumerate(ctx.gangs.gang_ids):
        queue = job_queue(ctx.workload.gangs[gid], ctx.workload.members(gid))
        if queue in tree.queues and tree.queues[queue].children:
            ctx.block_gang(
                g, f"queue {queue} is not a leaf queue: KAI schedules jobs of leaf queues only"
            )


FEATURE = Feature(name="kaishare", plugins=(), compile=_compile, always=True)
