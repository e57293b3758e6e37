"""The devices Problem block: each type's device demand over the snapshot's device table,
and how many devices of a node can take one more pod of a type."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from solver.features.devices.policy import Scoring
from solver.features.devices.table import DeviceTable
from solver.model import DeviceDemand
from solver.problem import Block, IntArray

__all__ = ["REASON_NO_DEVICE", "DeviceBlock", "fitting_nodes"]

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
