"""GPU devices in the greedy: a tracker the device pods are placed through, one at a time.

`verdict(t)`: nodes with fewer than k devices that hold one more pod of type t get the
reason "node(s) had no GPU device with enough free share". `place(t, n)` takes the
devices of node n by best fit: the k fitting devices with the least compute left after the
pod (then least memory left, then lowest index) — whole GPUs thus take fully free devices
and shares stack on the devices already shared. The devices each placed pod received are
kept per (type, node); `assignment` hands them to the pods of the final answer.
"""

from __future__ import annotations

import numpy as np

from solver.features.devices import DeviceBlock, fitting_nodes
from solver.problem import IntArray, Problem, Tracker

__all__ = ["DeviceTracker", "device_tracker"]


class DeviceTracker(Tracker):
    def __init__(self, problem: Problem, block: DeviceBlock) -> None:
        self.problem = problem
        self.block = block
        self.core = block.table.core_free.copy()
        self.memory = block.table.memory_free.copy()
        self.taken: dict[tuple[int, int], list[tuple[int, ...]]] = {}

    def involved(self, t: int) -> bool:
        return self.block.involved(t)

    def verdict(self, t: int) -> IntArray:
        demand = self.block.demand[t]
        assert demand is not None
        count = fitting_nodes(self.block, t, self.core, self.memory, self.problem.num_nodes)
        return np.where(count >= demand.devices, 0, self.block.reason_code).astype(np.int64)

    def place(self, t: int, node: int) -> None:
        demand = self.block.demand[t]
        assert demand is not None
        first, last = int(self.block.table.start[node]), int(self.block.table.start[node + 1])
        need = self.block.memory_need(t)[first:last]
        core, memory = self.core[first:last], self.memory[first:last]
        fits = np.flatnonzero((core >= demand.core) & (memory >= need))
        if fits.size < demand.devices:
            raise AssertionError(f"device tracker: node {node} cannot take a pod of type {t}")
        # best fit: least compute left, then least memory left, then lowest index
        order = np.lexsort((fits, memory[fits] - need[fits], core[fits] - demand.core))
        chosen = np.sort(fits[order[: demand.devices]])
        core[chosen] -= demand.core
        memory[chosen] -= need[chosen]
        self.taken.setdefault((t, node), []).append(tuple(int(i) for i in chosen))

    def checkpoint(self) -> object:
        return self.core.copy(), self.memory.copy(), {k: len(v) for k, v in self.taken.items()}

    def restore(self, saved: object) -> None:
        assert isinstance(saved, tuple)
        core, memory, lengths = saved
        self.core[:] = core
        self.memory[:] = memory
        for key in list(self.taken):
            kept = lengths.get(key, 0)
            if kept:
                del self.taken[key][kept:]
            else:
                del self.taken[key]

    def assignment(self, pod_node: list[IntArray]) -> list[list[tuple[int, ...]]]:
        """Per type, per pod (type_pods order): the devices (indices within its node) of
        each placed device pod, () for the others."""
        pools = {key: list(devices) for key, devices in self.taken.items()}
        out: list[list[tuple[int, ...]]] = []
        for t, nodes in enumerate(pod_node):
            row: list[tuple[int, ...]] = []
            for n in nodes.tolist():
                pool = pools.get((t, n)) if n >= 0 else None
                row.append(pool.pop(0) if pool else ())
            out.append(row)
        return out


def device_tracker(problem: Problem) -> DeviceTracker | None:
    """The tracker of a Problem whose GPU pods are placed on devices, else None."""
    block = problem.block(DeviceBlock)
    return DeviceTracker(problem, block) if block is not None else None
