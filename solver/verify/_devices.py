"""No GPU device is oversubscribed: compute share and memory, device by device.

Re-derived from the inputs: a node's devices (`node_devices`), what running pods hold where
their dialect recorded it (`allocated_devices`; running whole-GPU pods that record nothing
take fully free devices, highest index first; evicted victims hold nothing), and the
devices each placed pod is given in the Decision (`Placement.devices`). Every placed pod
asking the device-sharing way (any dialect but plain `nvidia.com/gpu`) must name `k` distinct devices of its node; a whole-GPU pod that
names none takes fully free devices. The dialect annotation the Decision writes must name
the same devices. Only devices a placed pod is given are judged (a running state already
over a device is not the Decision's doing). Nominated pods wait for their victims and are
not checked here.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from solver.model import (
    GPU_RESOURCE,
    WHOLE,
    DeviceDemand,
    DeviceError,
    allocated_devices,
    device_demand,
    node_devices,
)
from solver.verify._context import VerifyContext

__all__ = ["devices"]


class _Node:
    def __init__(self, count: int, memory_mib: int) -> None:
        self.known = memory_mib > 0
        self.cap = memory_mib if self.known else WHOLE
        self.core = [WHOLE] * count
        self.memory = [self.cap] * count

    def memory_of(self, core: int, ratio: int, mib: int) -> int:
        return mib + ratio * self.cap // WHOLE if self.known else ratio

    def take(self, i: int, core: int, memory: int) -> None:
        self.core[i] -= core
        self.memory[i] -= memory

    def take_whole(self, count: int) -> int:
        """Fully free devices, highest index first; how many were missing."""
        for i in range(len(self.core) - 1, -1, -1):
            if count <= 0:
                break
            if self.core[i] == WHOLE and self.memory[i] == self.cap:
                self.take(i, WHOLE, self.cap)
                count -= 1
        return count


def _running(ctx: VerifyContext, names: set[str]) -> dict[str, _Node]:
    """Device state of `names` after the running pods (victims excluded). Each distinct
    set of kept annotations is read once; rows recording no devices (most of a busy
    cluster) only add their whole-GPU count to their node, in one numpy step."""
    snapshot = ctx.snapshot
    state = {name: _Node(*node_devices(ctx.node(name))) for name in names}
    running = snapshot.running
    ids = np.array([snapshot.nodes.index[n] for n in names], dtype=np.int64)
    rows = snapshot.rows_on(ids)
    if ctx.evicted:
        gone = running.find_many(sorted(ctx.evicted))
        rows = rows[~np.isin(rows, gone[gone >= 0])]
    if rows.size == 0:
        return state
    gpus = running.requests((GPU_RESOURCE,), rows)[:, 0]
    sets = running.annotation_set[rows]
    uses_of = {int(i): allocated_devices(running.label_sets[int(i)]) for i in np.unique(sets)}
    recorded = np.array([bool(uses_of[int(i)]) for i in sets.tolist()], dtype=bool)
    whole = np.zeros(rows.size, dtype=np.int64)
    for k in np.flatnonzero(recorded).tolist():
        node = state[running.node_name(int(rows[k]))]
        for use in uses_of[int(sets[k])] or ():
            if 0 <= use.index < len(node.core):
                node.take(
                    use.index, use.core, node.memory_of(use.core, use.memory_ratio, use.memory_mib)
                )
                whole[k] += int(use.core >= WHOLE)
    unrecorded = np.bincount(
        running.node[rows], weights=np.maximum(0, gpus - whole), minlength=len(snapshot.nodes)
    )
    for name in names:
        count = int(unrecorded[snapshot.nodes.index[name]])
        if count:
            state[name].take_whole(count)
    return state


def devices(ctx: VerifyContext) -> list[str]:
    problems: list[str] = []
    placed: dict[str, list[tuple[str, DeviceDemand]]] = defaultdict(list)
    read: dict[tuple[int, int], DeviceDemand | str | None] = {}  # a gang's pods share maps
    for key, placement in ctx.decision.placements.items():
        pod = ctx.pods.get(key)
        if pod is None or placement.node is None:
            continue
        maps = (id(pod.requests), id(pod.annotations))
        if maps not in read:
            try:
                read[maps] = device_demand(pod.requests, pod.annotations)
            except DeviceError as exc:
                read[maps] = str(exc)
        demand = read[maps]
        if isinstance(demand, str):
            problems.append(f"{key}: placed with an invalid GPU request: {demand}")
            continue
        if demand is not None:
            placed[placement.node].append((key, demand))
    if not placed:
        return problems
    state = _running(ctx, set(placed))
    for name, pods in sorted(placed.items()):
        node = state[name]
        whole_unnamed = 0
        touched: set[int] = set()
        for key, demand in pods:
            chosen = ctx.decision.placements[key].devices
            if not chosen:
                if demand.sharing:
                    problems.append(f"{key}: asks for GPU devices but names none on {name}")
                else:
                    whole_unnamed += demand.devices
                continue
            if len(set(chosen)) != demand.devices or len(chosen) != demand.devices:
                problems.append(f"{key}: needs {demand.devices} distinct GPU(s), given {chosen}")
            if any(not 0 <= i < len(node.core) for i in chosen):
                problems.append(f"{key}: GPU device {chosen} not on {name}")
                continue
            memory = node.memory_of(demand.core, demand.memory_ratio, demand.memory_mib)
            for i in set(chosen):
                node.take(i, demand.core, memory)
                touched.add(i)
            written = allocated_devices(ctx.decision.placements[key].annotations)
            if written is not None and sorted(u.index for u in written) != sorted(chosen):
                problems.append(f"{key}: annotation names devices other than {chosen}")
        if node.take_whole(whole_unnamed) > 0:
            problems.append(f"{name}: not enough fully free GPU devices for whole-GPU pods")
        for i in sorted(touched):
            core, memory = node.core[i], node.memory[i]
            if core < 0 or memory < 0:
                problems.append(
                    f"{name}: GPU device {i} oversubscribed "
                    f"(compute {WHOLE - core}/{WHOLE} milli, memory {node.cap - memory}/{node.cap})"
                )
    return problems
