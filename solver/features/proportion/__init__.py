"""Volcano's `proportion` plugin: queues share the cluster by weight.

    waterfill.py   the deserved shares: the cluster water-filled over the queues by weight
    mode.py        the plugin as a `QuotaMode` of the shared queue machinery (`features.queues`)
    reclaim.py     the `reclaim` action under proportion: who may reclaim, victims, their order

Compile: the queue tree (flat), the deserved shares of the call, Volcano's proportion queue
order, admission at realCapability (`enqueue`), and the QuotaBlock whose headroom is each
queue's deserved share less what it holds: both engines' quota steps (`QuotaLedger`, the
CP-SAT quota rows) then keep every queue within its share. Upstream says not to enable it
with `capacity` (or `capacity-card`); the conf refuses that.
"""

from __future__ import annotations

from solver.config import Plugin
from solver.features._base import CompileContext, Feature
from solver.features.devices.quota import shares_in_play
from solver.features.proportion.mode import ProportionMode, settled_tree
from solver.features.proportion.reclaim import ProportionReclaim, proportion_reclaim
from solver.features.proportion.waterfill import Claim, share, water_fill
from solver.features.queues import compile_quotas

__all__ = [
    "FEATURE",
    "Claim",
    "ProportionMode",
    "ProportionReclaim",
    "proportion_reclaim",
    "settled_tree",
    "share",
    "water_fill",
]


def _compile(ctx: CompileContext) -> None:
    mode = ProportionMode(ctx.conf, gpu_milli=shares_in_play(ctx.snapshot, ctx.workload))
    compile_quotas(ctx, mode)


FEATURE = Feature(name="proportion", plugins=(Plugin.PROPORTION,), compile=_compile)
