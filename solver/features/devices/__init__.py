"""GPU devices shared by fractional pods (Koordinator DeviceShare, Volcano/HAMi vGPU, KAI
gpu-fraction, Alibaba/openb gpu-milli) — placed and checked device by device.

    table.py    the snapshot's devices and what running pods hold (memoised per generation)
    greedy.py   a tracker: which nodes still have a device for one more pod, best-fit devices
    cpsat.py    device patterns per (node, free-capacity bucket)
    quota.py    GPU shares in queue quotas (milli-GPUs)
    fgd.py      FGD's fragmentation measure (also the openb benchmark's)
    policy.py   deviceshare.SchedulePolicy: best fit or FGD, and FGD's target workload

A node's aggregate room hides fragmentation: three pods of 0.6 GPU fit 2 GPUs by the sum
(1.8 ≤ 2) but no device holds the third. The model is on (`DeviceBlock`) when some pending
pod of the call asks the device-sharing way (any dialect but a plain `nvidia.com/gpu`
request — a KAI or openb pod requests no resource at all) or some running pod's devices are
recorded; then every GPU pod of the call (whole GPUs too) is placed on devices. A pod fits a node only where `k`
distinct devices each have its compute share and memory left; else the node's reason is
"node(s) had no GPU device with enough free share". A request its dialect rejects (e.g.
`koordinator.sh/gpu-core: 150`) fits no node ("invalid GPU share request: ...").

Always on: the device limit is physical, not a plugin's choice (Koordinator's DeviceShare
and Volcano's deviceshare enforce it; a scheduler without either would overcommit).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

import numpy as np

from solver.config import SchedulerConf
from solver.features._base import CompileContext, Feature
from solver.features.devices.policy import Scoring, scoring
from solver.features.devices.quota import SHARE_FACT
from solver.features.devices.table import ALLOCATED_FACT, DeviceTable, device_table
from solver.model import (
    DEVICE_ANNOTATIONS,
    DeviceDemand,
    DeviceError,
    Pod,
    assignment_annotations,
    device_demand,
)
from solver.problem import Block, IntArray, Problem

__all__ = [
    "FEATURE",
    "REASON_NO_DEVICE",
    "DeviceBlock",
    "device_placement",
    "fitting_nodes",
]

REASON_NO_DEVICE = "node(s) had no GPU device with enough free share"


@dataclass(frozen=True, eq=False)
class DeviceBlock(Block):
    table: DeviceTable
    demand: tuple[DeviceDemand | None, ...]  # per type
    reason_code: int
    scoring: Scoring  # deviceshare.SchedulePolicy and its weight, FGD's target workload
    _need: dict[int, IntArray] = field(default_factory=dict)

    def involved(self, t: int) -> bool:
        return self.demand[t] is not None

    def memory_need(self, t: int) -> IntArray:
        """[D] memory one device gives a pod of type t (MiB, or milli of an unknown size)."""
        need = self._need.get(t)
        if need is None:
            d = self.demand[t]
            assert d is not None
            cap, known = self.table.memory_cap, self.table.memory_known.astype(bool)
            need = np.where(known, d.memory_mib + d.memory_ratio * cap // 1000, d.memory_ratio)
            self._need[t] = need
        return need


def fitting_nodes(
    block: DeviceBlock, t: int, core_free: IntArray, memory_free: IntArray, num_nodes: int
) -> IntArray:
    """[N] devices per node that can take one more pod of type t now."""
    demand = block.demand[t]
    assert demand is not None
    fits = (core_free >= demand.core) & (memory_free >= block.memory_need(t))
    return np.bincount(block.table.node[fits], minlength=num_nodes).astype(np.int64)


def _type_key(pod: Pod) -> tuple[str, ...]:
    return tuple(pod.annotations.get(k, "") for k in DEVICE_ANNOTATIONS)


def _compile(ctx: CompileContext) -> None:
    demands: list[DeviceDemand | None] = []
    errors: dict[int, str] = {}
    for t in range(ctx.num_types):
        pod = ctx.first_pod(t)
        try:
            demands.append(device_demand(pod.requests, pod.annotations))
        except DeviceError as exc:
            demands.append(None)
            errors[t] = str(exc)
    nothing = np.zeros(len(ctx.nodes), dtype=bool)
    for t, why in errors.items():
        ctx.restrict([t], nothing, f"invalid GPU share request: {why}")
    table = device_table(ctx.snapshot)
    shared = table.shared_use or any(d is not None and d.sharing for d in demands)
    if not shared or table.size == 0:
        return
    if table.unplaced:
        ctx.notes.append(
            f"{table.unplaced} running GPU pod device(s) not recorded in a device annotation "
            "and not located on a device"
        )
    how = scoring(ctx.snapshot, ctx.workload, ctx.conf)
    ctx.notes.extend(how.notes)
    block = DeviceBlock(table, tuple(demands), ctx.code(REASON_NO_DEVICE), how)
    for t, demand in enumerate(demands):
        if demand is None:
            continue
        count = fitting_nodes(block, t, table.core_free, table.memory_free, len(ctx.nodes))
        allowed = ctx.memo(("devices", demand), partial(np.greater_equal, count, demand.devices))
        ctx.restrict([t], allowed, REASON_NO_DEVICE)
    ctx.add_block(block)


def device_placement(
    problem: Problem, t: int, n: int, local: tuple[int, ...]
) -> tuple[tuple[int, ...], dict[str, str]]:
    """The device indices and the dialect's annotation of a pod of type t placed on node n
    on devices `local` (indices within the node)."""
    block = problem.block(DeviceBlock)
    if block is None or not local or block.demand[t] is None:
        return (), {}
    demand = block.demand[t]
    assert demand is not None
    first = int(block.table.start[n])
    known = bool(block.table.memory_known[first]) if block.table.start[n + 1] > first else False
    memory = int(block.table.memory_cap[first]) if known else 0
    return local, assignment_annotations(demand, local, memory)


@dataclass(frozen=True)
class _AlwaysOn(Feature):
    def enabled(self, conf: SchedulerConf) -> bool:
        return True


FEATURE = _AlwaysOn(
    name="devices",
    plugins=(),
    compile=_compile,
    facts=(ALLOCATED_FACT, SHARE_FACT),
    type_key=_type_key,
)
