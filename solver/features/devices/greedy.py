"""GPU devices in the greedy: a tracker the device pods are placed through, one at a time.

`verdict(t)`: nodes with fewer than k devices that hold one more pod of type t get the
reason "node(s) had no GPU device with enough free share". `place(t, n)` takes the
devices of node n by best fit: the k fitting devices with the least compute left after the
pod (then least memory left, then lowest index) — whole GPUs thus take fully free devices
and shares stack on the devices already shared. The devices each placed pod received are
kept per (type, node); `assignment` hands them to the pods of the final answer.

With `deviceshare.SchedulePolicy: fgd` or `bestfit` the tracker also scores nodes (`score`):
FGD's integer score of the best device of each node for one more pod (`fgd.py`), or the
simulator's best-fit score, × ScheduleWeight, kept per type and moved only on the node that
receives a pod; with FGD a share then takes the first device with the node's score. Pods
without GPUs are scored too (their cpu can strand a node's GPUs), so every pod goes through
here. The cpu both scores read is the node's free cpu as the call's own pods use it.
"""

from __future__ import annotations

import numpy as np

from solver.features.devices.bestfit import best_fit_score
from solver.features.devices.block import DeviceBlock, fitting_nodes
from solver.features.devices.fgd import fgd_score
from solver.features.devices.policy import BESTFIT, FGD
from solver.model import WHOLE
from solver.problem import FloatArray, IntArray, Problem, Tracker
from solver.quantity import CPU

__all__ = ["DeviceTracker", "device_tracker"]


class DeviceTracker(Tracker):
    def __init__(self, problem: Problem, block: DeviceBlock) -> None:
        self.problem = problem
        self.block = block
        self.core = block.table.core_free.copy()
        self.memory = block.table.memory_free.copy()
        self.taken: dict[tuple[int, int], list[tuple[int, ...]]] = {}
        how = block.scoring
        self.scored = how.policy in (FGD, BESTFIT)
        self.target = how.target if how.policy == FGD else None
        if self.scored:
            counts = np.diff(block.table.start)
            width = int(counts.max()) if counts.size else 0
            offsets = np.arange(width)[None, :]
            self.slot = np.where(
                offsets < counts[:, None], block.table.start[:-1, None] + offsets, -1
            )
            self.model = how.node_model
            cpu = problem.resources.index(CPU) if CPU in problem.resources else -1
            self.cpu_col = cpu
            self.cpu = problem.free[:, cpu].copy() if cpu >= 0 else np.full(len(counts), 1 << 40)
            # best fit normalises by the largest node (the simulator: MaxSpecCpu, MaxSpecGpu)
            self.max_cpu = (
                float(problem.capacity[:, cpu].max()) if cpu >= 0 and counts.size else 1.0
            )
            self.max_gpu = float(WHOLE * max(width, 1))
            every = np.arange(len(counts))
            self.frag = self._frag(every, self._dev(every)) if self.target is not None else None
            self._scores: dict[int, FloatArray] = {}

    def involved(self, t: int) -> bool:
        # node scores see every pod (a CPU-only pod's cpu strands GPUs): all go through here
        return self.block.involved(t) or self.scored

    def verdict(self, t: int) -> IntArray:
        demand = self.block.demand[t]
        if demand is None:
            return np.zeros(self.problem.num_nodes, dtype=np.int64)
        count = fitting_nodes(self.block, t, self.core, self.memory, self.problem.num_nodes)
        return np.where(count >= demand.devices, 0, self.block.reason_code).astype(np.int64)

    def place(self, t: int, node: int) -> None:
        demand = self.block.demand[t]
        if demand is None:  # a pod without GPUs, scored: only its cpu moves
            self._moved(t, node)
            return
        first, last = int(self.block.table.start[node]), int(self.block.table.start[node + 1])
        need = self.block.memory_need(t)[first:last]
        core, memory = self.core[first:last], self.memory[first:last]
        fits = np.flatnonzero((core >= demand.core) & (memory >= need))
        if fits.size < demand.devices:
            raise AssertionError(f"device tracker: node {node} cannot take a pod of type {t}")
        # best fit: least compute left, then least memory left, then lowest index
        order = np.lexsort((fits, memory[fits] - need[fits], core[fits] - demand.core))
        chosen = np.sort(fits[order[: demand.devices]])
        if self.target is not None and demand.devices == 1 and demand.fractional:
            chosen = fits[[int(np.argmax(self._device_scores(t, node, fits)))]]
        core[chosen] -= demand.core
        memory[chosen] -= need[chosen]
        self.taken.setdefault((t, node), []).append(tuple(int(i) for i in chosen))
        if self.scored:
            self._moved(t, node)

    # ------------------------------------------------------------------ node scores

    def _dev(self, nodes: IntArray) -> IntArray:
        """[B, G] free milli per device slot of `nodes` (−1: no device)."""
        slot = self.slot[nodes]
        return np.where(slot >= 0, self.core[np.maximum(slot, 0)], -1)

    def _best_fit(self, t: int, nodes: IntArray) -> IntArray:
        """The simulator's BestFitScore of one more pod of t on each of `nodes`."""
        demand = self.block.demand[t]
        dev = self._dev(nodes)
        gpu_left = np.where(dev > 0, dev, 0).sum(axis=1).astype(np.float64)
        if demand is not None:
            gpu_left -= float(demand.core * demand.devices)
        cpu_left = (self.cpu[nodes] - self._cpu_use(t)).astype(np.float64)
        return best_fit_score(cpu_left, gpu_left, self.max_cpu, self.max_gpu)

    def _frag(self, nodes: IntArray, dev: IntArray, cpu_use: int = 0) -> FloatArray:
        assert self.target is not None
        return self.target.fragmentation(self.cpu[nodes] - cpu_use, dev, self.model[nodes])

    def _cpu_use(self, t: int) -> int:
        return int(self.problem.type_demand[t, self.cpu_col]) if self.cpu_col >= 0 else 0

    def _device_scores(self, t: int, node: int, local: IntArray) -> IntArray:
        """FGD score of putting one share of type t on each of `local` devices of `node`."""
        demand = self.block.demand[t]
        assert demand is not None and self.target is not None and self.frag is not None
        rows = np.array([node])
        dev = np.repeat(self._dev(rows), local.size, axis=0)
        dev[np.arange(local.size), local] -= demand.core
        after = self._frag(np.repeat(rows, local.size), dev, self._cpu_use(t))
        return fgd_score(self.target, np.repeat(self.frag[rows], local.size), after)

    def _node_scores(self, t: int, nodes: IntArray) -> FloatArray:
        """The policy's score of one more pod of t on each of `nodes` (FGD: of its best
        device placement), × ScheduleWeight."""
        weight = self.block.scoring.weight
        points = self._best_fit(t, nodes) if self.target is None else self._fgd(t, nodes)
        return np.asarray(points * weight, dtype=np.float64)

    def _fgd(self, t: int, nodes: IntArray) -> IntArray:
        """FGD score of the best device placement of one more pod of t on each of `nodes`."""
        demand = self.block.demand[t]
        assert self.target is not None and self.frag is not None
        dev = self._dev(nodes)
        if demand is None:  # no GPUs: only the cpu it takes moves F (where the cpu fits)
            rows = np.flatnonzero(self.cpu[nodes] >= self._cpu_use(t))
            after = self._frag(nodes[rows], dev[rows], self._cpu_use(t))
            out = np.zeros(nodes.size, dtype=np.int64)
            out[rows] = fgd_score(self.target, self.frag[nodes[rows]], after)
            return out
        slot = self.slot[nodes]
        need = self.block.memory_need(t)[np.maximum(slot, 0)]
        fits = (slot >= 0) & (dev >= demand.core) & (self.memory[np.maximum(slot, 0)] >= need)
        cpu = self._cpu_use(t)
        best = np.full(nodes.size, -1, dtype=np.int64)
        if demand.devices == 1 and demand.fractional:
            # one candidate per (node, distinct free level): equal devices score alike
            distinct = np.ones_like(fits)
            for g in range(1, dev.shape[1]):
                distinct[:, g] = (dev[:, :g] != dev[:, g : g + 1]).all(axis=1)
            rows, cols = np.nonzero(fits & distinct)
            after_dev = dev[rows]
            after_dev[np.arange(rows.size), cols] -= demand.core
            after = self._frag(nodes[rows], after_dev, cpu)
            np.maximum.at(best, rows, fgd_score(self.target, self.frag[nodes[rows]], after))
        elif dev.size:  # k devices, best fit (for whole GPUs which ones does not change F)
            rank = np.cumsum(fits, axis=1)
            rows = np.flatnonzero(rank[:, -1] >= demand.devices)
            take = fits[rows] & (rank[rows] <= demand.devices)
            after_dev = np.where(take, dev[rows] - demand.core, dev[rows])
            after = self._frag(nodes[rows], after_dev, cpu)
            best[rows] = fgd_score(self.target, self.frag[nodes[rows]], after)
        return np.maximum(best, 0)

    def _moved(self, t: int, node: int) -> None:
        self.cpu[node] -= self._cpu_use(t)
        rows = np.array([node])
        if self.frag is not None:
            self.frag[node] = self._frag(rows, self._dev(rows))[0]
        for u, row in self._scores.items():
            row[node] = self._node_scores(u, rows)[0]

    def score(self, t: int) -> FloatArray | None:
        if not self.scored:
            return None
        row = self._scores.get(t)
        if row is None:
            nodes = np.arange(self.problem.num_nodes)
            row = self._scores[t] = self._node_scores(t, nodes).astype(np.float64)
        return row

    def checkpoint(self) -> object:
        fgd = (
            (self.cpu.copy(), None if self.frag is None else self.frag.copy())
            if self.scored
            else None
        )
        return self.core.copy(), self.memory.copy(), {k: len(v) for k, v in self.taken.items()}, fgd

    def restore(self, saved: object) -> None:
        assert isinstance(saved, tuple)
        core, memory, lengths, fgd = saved
        self.core[:] = core
        self.memory[:] = memory
        if fgd is not None:
            cpu, frag = fgd
            self.cpu[:] = cpu
            if self.frag is not None:
                self.frag[:] = frag
            self._scores.clear()
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
