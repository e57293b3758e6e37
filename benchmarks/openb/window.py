"""A window's candidate answers scored as FGD scores a cluster (`online.py`'s `window`)."""

from __future__ import annotations

import numpy as np

from benchmarks.openb.replay import Cluster, Pods, Replay
from solver.decision import Decision
from solver.model import Pod

CANDIDATES = ("arrival order", "largest GPU first", "GPU-model-restricted first", "cpsat")


class Window:
    """A window's candidate answers, scored as FGD scores a cluster: the GPU milli they
    place, then the fragmentation they leave (FGD's F summed over the nodes they touch, on
    the simulator's measure). `replay.Replay` mirrors the snapshot's free cpu and devices."""

    def __init__(self, cluster: Cluster, pods: Pods, rank: np.ndarray) -> None:
        self.mirror = Replay(cluster, pods, rank)
        self.model = cluster.model

    def _rows(self, placed: list[tuple[int, int, list[int]]]) -> tuple[np.ndarray, ...]:
        m = self.mirror
        rows = np.unique(np.array([n for n, _, _ in placed], dtype=np.int64))
        at = {int(n): j for j, n in enumerate(rows.tolist())}
        cpu, dev = m.cpu[rows].copy(), m.dev[rows].copy()
        for n, i, devices in placed:
            cpu[at[n]] -= m.p.cpu[i]
            for g in devices:
                dev[at[n], g] -= m.p.milli[i]
        return rows, cpu, dev

    def score(self, placed: list[tuple[int, int, list[int]]]) -> tuple[int, float]:
        """(GPU milli placed, − the fragmentation added): higher is better."""
        if not placed:
            return 0, 0.0
        m = self.mirror
        gpu = sum(int(m.p.ngpu[i] * m.p.milli[i]) for _, i, _ in placed)
        rows, cpu, dev = self._rows(placed)
        added = float(m._frag(cpu, dev, self.model[rows]).sum() - m.frag[rows].sum())
        return gpu, -added

    def commit(self, placed: list[tuple[int, int, list[int]]]) -> None:
        m = self.mirror
        for n, i, devices in placed:
            m._commit(n, i, devices)
        if placed:
            rows = np.unique(np.array([n for n, _, _ in placed], dtype=np.int64))
            m.frag[rows] = m._frag(m.cpu[rows], m.dev[rows], self.model[rows])


def placed_devices(
    decision: Decision, arrivals_: list[Pod], batch: list[tuple[int, int]], index: dict[str, int]
) -> list[tuple[int, int, list[int]]]:
    """(node row, pod row, device indices) of each placed arrival."""
    out = []
    for (_, i), arrival in zip(batch, arrivals_, strict=True):
        where = decision.placements[arrival.key]
        if where.node is not None:
            out.append((index[where.node], i, list(where.devices)))
    return out
