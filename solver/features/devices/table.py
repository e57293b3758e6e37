"""The GPU devices of a snapshot and what running pods hold of them, as flat numpy columns.

Devices of all nodes in one array (node n owns rows `start[n]:start[n + 1]`, local index =
row − start[n]): compute left (milli), memory left and memory capacity (MiB, or 1000 milli
of ratio when the node does not say its GPU memory). Built once per snapshot generation
(`Snapshot.memo`): a call copies the columns, it never walks the running pods.

Running pods are charged where their dialect recorded the device (`allocated_devices`, the
pod fact `devices.allocated`); running whole-GPU pods that record nothing (the NVIDIA device
plugin chooses) take fully free devices, highest index first, one per `nvidia.com/gpu` not
accounted by a recorded assignment. A running sharing pod without a recorded assignment
cannot be located: it is counted in the note `unplaced`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from solver.model import (
    DEVICE_ANNOTATIONS,
    GPU_RESOURCE,
    WHOLE,
    DeviceUse,
    allocated_devices,
    node_devices,
)
from solver.problem import IntArray
from solver.snapshot import NONE, Fact, NodeTable, Snapshot

__all__ = ["ALLOCATED_FACT", "DeviceTable", "device_table", "encode_uses"]


def encode_uses(uses: tuple[DeviceUse, ...]) -> str:
    return ";".join(f"{u.index}:{u.core}:{u.memory_ratio}:{u.memory_mib}" for u in uses)


def _decode(text: str) -> list[tuple[int, int, int, int]]:
    out = []
    for part in text.split(";"):
        i, core, ratio, mib = (int(x) for x in part.split(":"))
        out.append((i, core, ratio, mib))
    return out


def _extract(_labels: Mapping[str, str], annotations: Mapping[str, str]) -> str | None:
    uses = allocated_devices(annotations)
    return encode_uses(uses) if uses else None


ALLOCATED_FACT = Fact("devices.allocated", _extract, DEVICE_ANNOTATIONS)


@dataclass(frozen=True, eq=False)
class DeviceTable:
    start: IntArray  # [N + 1] first device row of each node
    node: IntArray  # [D] node of each device
    core_free: IntArray  # [D] milli
    memory_free: IntArray  # [D] MiB (or milli when memory_known is False)
    memory_cap: IntArray  # [D] MiB per device, or 1000
    memory_known: IntArray  # [D] 1 when the node states its GPU memory
    shared_use: bool  # some running pod's devices are recorded
    unplaced: int  # running pods that hold devices gangplan cannot locate

    @property
    def size(self) -> int:
        return int(self.node.size)

    def local(self, row: int) -> int:
        return row - int(self.start[self.node[row]])


def _capacity(nodes: NodeTable) -> tuple[IntArray, IntArray, IntArray, IntArray]:
    """(start, node, memory capacity, memory known) of the nodes' devices: once per node list."""
    counts, sizes = [], []
    for node in nodes.nodes:
        count, size = node_devices(node)
        counts.append(count)
        sizes.append(size)
    start = np.zeros(len(counts) + 1, dtype=np.int64)
    start[1:] = np.cumsum(counts)
    dev_node = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    known = np.repeat(np.array([m > 0 for m in sizes], dtype=np.int64), counts)
    cap = np.repeat(np.array([m if m > 0 else WHOLE for m in sizes], dtype=np.int64), counts)
    for array in (start, dev_node, cap, known):
        array.flags.writeable = False
    return start, dev_node, cap, known


def _build(snapshot: Snapshot) -> DeviceTable:
    nodes = snapshot.nodes
    start, dev_node, cap, known = nodes.memo(("devices", "capacity"), lambda: _capacity(nodes))
    counts = np.diff(start).tolist()
    core = np.full(dev_node.size, WHOLE, dtype=np.int64)
    memory = cap.copy()
    running = snapshot.running
    shared = False
    unplaced = 0
    recorded_whole = np.zeros(len(counts), dtype=np.int64)
    if "devices.allocated" in running.schema.names:
        fact = running.fact("devices.allocated")
        rows = np.flatnonzero((fact != NONE) & running.alive)
        where = running.node
        for row in rows.tolist():
            n = int(where[row])
            if n < 0:
                continue
            for index, used_core, ratio, mib in _decode(running.value(int(fact[row]))):
                if index >= counts[n]:
                    unplaced += 1
                    continue
                d = int(start[n]) + index
                core[d] -= used_core
                memory[d] -= (mib + ratio * int(cap[d]) // WHOLE) if known[d] else ratio
                shared = True
                recorded_whole[n] += int(used_core >= WHOLE)
    gpus = snapshot.used((GPU_RESOURCE,))[:, 0]
    for n in np.flatnonzero(gpus > recorded_whole).tolist():
        left = int(gpus[n] - recorded_whole[n])
        for d in range(int(start[n + 1]) - 1, int(start[n]) - 1, -1):
            if left <= 0:
                break
            if core[d] == WHOLE and memory[d] == cap[d]:
                core[d], memory[d] = 0, 0
                left -= 1
        unplaced += left
    core.flags.writeable = memory.flags.writeable = False
    return DeviceTable(start, dev_node, core, memory, cap, known, shared, unplaced)


def device_table(snapshot: Snapshot) -> DeviceTable:
    """The snapshot's devices and their free room (once per generation)."""
    return snapshot.memo(("devices", "table"), lambda: _build(snapshot))
