"""GPU devices shared by fractional pods (Koordinator DeviceShare, Volcano/HAMi vGPU, KAI
gpu-fraction, Alibaba/openb gpu-milli) — placed and checked device by device.

    block.py    the Problem block: device demand per type, devices that fit one more pod
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

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from solver.config import SchedulerConf
from solver.features._base import CompileContext, Feature
from solver.features._steps import CpsatSteps, DecideSteps, ExplainSteps, GreedySteps
from solver.features.devices import cpsat
from solver.features.devices.block import REASON_NO_DEVICE, DeviceBlock, fitting_nodes
from solver.features.devices.bound import device_bound
from solver.features.devices.greedy import device_tracker
from solver.features.devices.policy import scoring
from solver.features.devices.quota import SHARE_FACT
from solver.features.devices.table import ALLOCATED_FACT, device_table
from solver.model import (
    DEVICE_ANNOTATIONS,
    GPU_MEMORY_LABEL,
    DeviceDemand,
    DeviceError,
    Node,
    Pod,
    assignment_annotations,
    device_demand,
    device_memory_label,
)
from solver.problem import Problem

__all__ = [
    "FEATURE",
    "REASON_NO_DEVICE",
    "DeviceBlock",
    "device_placement",
    "fitting_nodes",
]


def _unread(nodes: Sequence[Node]) -> tuple[str, ...]:
    """Nodes whose memory label is there but cannot be read."""
    return tuple(
        n.name for n in nodes if GPU_MEMORY_LABEL in n.labels and device_memory_label(n) is None
    )


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
    if unread := ctx.nodes.memo(("devices", "memory labels"), partial(_unread, ctx.nodes.nodes)):
        ctx.notes.append(
            f"{GPU_MEMORY_LABEL} is not a device's memory in MiB on {len(unread)} node(s) "
            f"({', '.join(unread[:5])}{', ...' if len(unread) > 5 else ''}): their GPU "
            "memory is unknown"
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


def device_placement(problem: Problem, t: int, n: int, local: tuple[int, ...]) -> dict[str, Any]:
    """The Placement fields of a pod of type t placed on node n on devices `local`
    (indices within the node): the devices and the dialect's annotation."""
    block = problem.block(DeviceBlock)
    if block is None or not local or block.demand[t] is None:
        return {}
    demand = block.demand[t]
    assert demand is not None
    first = int(block.table.start[n])
    known = bool(block.table.memory_known[first]) if block.table.start[n + 1] > first else False
    memory = int(block.table.memory_cap[first]) if known else 0
    return {"devices": local, "annotations": assignment_annotations(demand, local, memory)}


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
    greedy=GreedySteps(trackers=(device_tracker,)),
    cpsat=CpsatSteps(
        modules=(cpsat.build,),
        class_splits=(cpsat.class_split,),
        per_node=(cpsat.per_node,),
        unsupported=(cpsat.unsupported,),
        assignment=cpsat.assignment,
    ),
    decide=DecideSteps(placement=device_placement),
    explain=ExplainSteps(bounds=(device_bound,)),
)
