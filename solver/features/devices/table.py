"""The GPU devices of a snapshot and what running pods hold of them, as flat numpy columns.

Devices of all nodes in one array (node n owns rows `start[n]:start[n + 1]`, local index =
row − start[n]): compute left (milli), memory left and memory capacity (MiB, or 1000 milli
of ratio when the node does not say its GPU memory). Built once, then kept current by
deltas (`Snapshot.derive`): a generation pays for the rows its delta added and retired, a
call copies the columns; neither walks the running pods.

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
from solver.snapshot import NONE, Fact, Lineage, NodeTable, Snapshot

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


@dataclass(frozen=True, eq=False)
class _Recorded:
    """What the running pods' recorded assignments hold, kept by deltas: device columns
    after the recorded uses only, per node the whole GPUs recorded and bad indices."""

    core: IntArray  # [D]
    memory: IntArray  # [D]
    whole: IntArray  # [N] recorded whole devices
    bad: IntArray  # [N] recorded uses naming a device the node does not have
    rows: int  # alive rows with a recorded assignment


def _charge(
    snapshot: Snapshot, rec: _Recorded, rows: IntArray, sign: int, touched: list[int]
) -> int:
    """Add (sign −1: take back) the recorded uses of `rows` into `rec`'s columns."""
    running = snapshot.running
    if "devices.allocated" not in running.schema.names or rows.size == 0:
        return 0
    start, _, cap, known = _capacity_of(snapshot)
    fact = running.fact("devices.allocated")
    where = running.node
    counted = 0
    for row in rows[fact[rows] != NONE].tolist():
        n = int(where[row])
        if n < 0:
            continue
        counted += 1
        touched.append(n)
        width = int(start[n + 1] - start[n])
        for index, used_core, ratio, mib in _decode(running.value(int(fact[row]))):
            if index >= width:
                rec.bad[n] += sign
                continue
            d = int(start[n]) + index
            rec.core[d] -= sign * used_core
            rec.memory[d] -= sign * ((mib + ratio * int(cap[d]) // WHOLE) if known[d] else ratio)
            rec.whole[n] += sign * int(used_core >= WHOLE)
    return sign * counted


def _capacity_of(snapshot: Snapshot) -> tuple[IntArray, IntArray, IntArray, IntArray]:
    nodes = snapshot.nodes
    return nodes.memo(("devices", "capacity"), lambda: _capacity(nodes))


def _recorded(snapshot: Snapshot) -> _Recorded:
    start, dev_node, cap, _ = _capacity_of(snapshot)
    n = start.size - 1
    rec = _Recorded(
        np.full(dev_node.size, WHOLE, dtype=np.int64),
        cap.copy(),
        np.zeros(n, dtype=np.int64),
        np.zeros(n, dtype=np.int64),
        0,
    )
    alive = np.flatnonzero(snapshot.running.alive)
    counted = _charge(snapshot, rec, alive, 1, [])
    return _Recorded(rec.core, rec.memory, rec.whole, rec.bad, counted)


def _overlay(
    snapshot: Snapshot, rec: _Recorded, core: IntArray, memory: IntArray, nodes: IntArray
) -> IntArray:
    """Running whole-GPU pods of `nodes` that record nothing take fully free devices, highest
    index first; `core`/`memory` rows of `nodes` are rewritten from `rec`. Returns per node
    of `nodes` the GPUs that found no free device."""
    start, _, cap, _ = _capacity_of(snapshot)
    gpus = snapshot.used((GPU_RESOURCE,))[:, 0]
    left_over = np.zeros(nodes.size, dtype=np.int64)
    for k, n in enumerate(nodes.tolist()):
        first, last = int(start[n]), int(start[n + 1])
        core[first:last] = rec.core[first:last]
        memory[first:last] = rec.memory[first:last]
        left = int(gpus[n] - rec.whole[n])
        for d in range(last - 1, first - 1, -1):
            if left <= 0:
                break
            if core[d] == WHOLE and memory[d] == cap[d]:
                core[d], memory[d] = 0, 0
                left -= 1
        left_over[k] = max(left, 0)
    return left_over


@dataclass(frozen=True, eq=False)
class _State:
    recorded: _Recorded
    table: DeviceTable
    unlocated: IntArray  # [N] running whole GPUs without a free device to sit on


def _freeze(*arrays: IntArray) -> None:
    for array in arrays:
        array.flags.writeable = False


def _build(snapshot: Snapshot) -> _State:
    start, dev_node, cap, known = _capacity_of(snapshot)
    rec = _recorded(snapshot)
    core, memory = rec.core.copy(), rec.memory.copy()
    every = np.arange(start.size - 1, dtype=np.int64)
    unlocated = _overlay(snapshot, rec, core, memory, every)
    _freeze(core, memory, rec.core, rec.memory, rec.whole, rec.bad, unlocated)
    unplaced = int(rec.bad.sum() + unlocated.sum())
    table = DeviceTable(start, dev_node, core, memory, cap, known, rec.rows > 0, unplaced)
    return _State(rec, table, unlocated)


def _update(state: _State, lineage: Lineage, snapshot: Snapshot) -> _State:
    """The previous generation's devices moved by the delta's rows: O(delta)."""
    old = state.recorded
    rec = _Recorded(old.core.copy(), old.memory.copy(), old.whole.copy(), old.bad.copy(), 0)
    touched: list[int] = []
    counted = old.rows + _charge(snapshot, rec, lineage.retired, -1, touched)
    counted += _charge(snapshot, rec, lineage.added, 1, touched)
    # whole GPUs without a record follow the nodes' nvidia.com/gpu usage
    where = snapshot.running.node
    changed = np.concatenate([where[lineage.added], where[lineage.retired]]).astype(np.int64)
    nodes = np.unique(np.concatenate([changed, np.array(touched, dtype=np.int64)]))
    nodes = nodes[nodes >= 0]
    t = state.table
    core, memory = t.core_free.copy(), t.memory_free.copy()
    unlocated = state.unlocated.copy()
    unlocated[nodes] = _overlay(snapshot, rec, core, memory, nodes)
    _freeze(core, memory, rec.core, rec.memory, rec.whole, rec.bad, unlocated)
    unplaced = int(rec.bad.sum() + unlocated.sum())
    table = DeviceTable(
        t.start, t.node, core, memory, t.memory_cap, t.memory_known, counted > 0, unplaced
    )
    return _State(_Recorded(rec.core, rec.memory, rec.whole, rec.bad, counted), table, unlocated)


def device_table(snapshot: Snapshot) -> DeviceTable:
    """The snapshot's devices and their free room, kept current by deltas (a call pays
    O(delta), not O(running pods))."""
    state = snapshot.derive(
        ("devices", "table"), _build, lambda before, lineage: _update(before, lineage, snapshot)
    )
    return state.table
