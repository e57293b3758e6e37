"""Volcano queues: the `capacity` plugin, and the quota machinery `capacity-card` shares.

    tree.py        the queue tree, real capabilities and usage (memoised per snapshot)
    mode.py        what a quota plugin decides (`QuotaMode`: capacity; cards override it)
    admission.py   the enqueue walk and the allocate gate
    order.py       Volcano's queue order, as numbered criteria
    compile.py     the compile step shared by both quota plugins -> QuotaBlock
    block.py       the Problem block
    greedy.py      the quota ledger and fill of the greedy engine
    loop.py        Volcano's allocate loop: the greedy's step order (jobs until ready, then
                   a task a turn, queues and jobs sorted again after each step)
    cpsat.py       the CP-SAT quota rows
    validation.py  `gangplan queues validate`: Volcano's queue admission webhook
    victims.py     the in-queue order of reclaim victims (capacity and proportion)
    report.py      the queues' part of the Decision: limit, held, placed per queue
    requests.py    what each queue's pending pods ask for (the fair-share plugins' request)

Which queue a job is in: its PodGroup's `spec.queue` (a Volcano PodGroup's default
`default`), else its pod's annotation `scheduling.volcano.sh/queue-name` or KAI label
`kai.scheduler/queue` (`solver.model.job_queue`); other jobs are in no queue and not
limited by any. The `root` queue (and `default`, when a job names it) exist implicitly when
the input does not define them. Each quota mode reads one scheduler's Queues
(`QuotaMode.dialect`): these Volcano's, `features.kaishare` KAI's.
"""

from __future__ import annotations

from solver.config import Plugin
from solver.features._base import CompileContext, Feature
from solver.features._steps import CpsatSteps, DecideSteps, ExplainSteps, GreedySteps
from solver.features.devices.quota import shares_in_play
from solver.features.queues import cpsat
from solver.features.queues.block import QuotaBlock
from solver.features.queues.bound import queue_bound
from solver.features.queues.compile import compile_quotas
from solver.features.queues.greedy import QuotaLedger, fill_within_quota
from solver.features.queues.loop import (
    MAX_STEP_COMPARISONS,
    LoopBlock,
    Ranker,
    VolcanoLoop,
    columns,
    loop_block,
    loop_fits,
    picked,
    quota_loop,
)
from solver.features.queues.mode import (
    ExtraRow,
    QuotaMode,
    TypeQuota,
    build_queue_tree,
    queue_dialect,
)
from solver.features.queues.report import queue_uses
from solver.features.queues.requests import call_requests, pending_requests
from solver.features.queues.tree import ROOT, QueueInfo, QueueTree, sum_resources
from solver.features.queues.validation import DEFAULT_MAX_DEPTH, QueueVerdict, validate_queues

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "FEATURE",
    "MAX_STEP_COMPARISONS",
    "ROOT",
    "ExtraRow",
    "LoopBlock",
    "QueueInfo",
    "QueueTree",
    "QueueVerdict",
    "QuotaBlock",
    "QuotaLedger",
    "QuotaMode",
    "Ranker",
    "TypeQuota",
    "VolcanoLoop",
    "build_queue_tree",
    "call_requests",
    "columns",
    "compile_quotas",
    "fill_within_quota",
    "loop_block",
    "loop_fits",
    "pending_requests",
    "picked",
    "queue_dialect",
    "sum_resources",
    "validate_queues",
]


def _compile(ctx: CompileContext) -> None:
    compile_quotas(ctx, QuotaMode(ctx.conf, gpu_milli=shares_in_play(ctx.snapshot, ctx.workload)))


FEATURE = Feature(
    name="queues",
    plugins=(Plugin.CAPACITY,),
    compile=_compile,
    greedy=GreedySteps(ledger=QuotaLedger.of, order=quota_loop),  # every quota plugin's
    cpsat=CpsatSteps(modules=(cpsat.build,), class_splits=(cpsat.class_split,)),
    explain=ExplainSteps(bounds=(queue_bound,)),  # every quota plugin's QuotaBlock
    decide=DecideSteps(decision=queue_uses),  # every quota plugin's QuotaBlock
)
