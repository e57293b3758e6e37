"""FGD's fragmentation measure (Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing
Workloads with Fragmentation Gradient Descent", ATC'23; the simulator's
`NodeGpuShareFragAmountScore`, hkust-adsl/kubernetes-scheduler-simulator `pkg/utils/frag.go`).

A target workload is a set of typical pod shapes m (cpu, milli-GPU per device, devices, GPU
models it may use) with counts c_m. For a node n:

    F_n(m) = free GPU milli on devices with less than m's milli left   if m fits n
             all free GPU milli of n                                   otherwise (or CPU-only m)
    F(n)   = Σ_m c_m · F_n(m)                (× the total count: integer-valued, exact)

FGD places a pod where F grows least. Its score is the simulator's integer
int64(sigmoid((F_before − F_after) / Σc / 1000) × 100): many nodes tie, and the tie order
(kube-scheduler: the smallest node name) is part of the algorithm — the exact value gives
~1 point less GPU allocation on openb. `benchmarks/openb/replay.py` (the simulator's
re-implementation) uses this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from solver.problem import BoolArray, FloatArray, IntArray

__all__ = ["TargetWorkload", "fgd_score", "target_workload"]


@dataclass(frozen=True, eq=False)
class TargetWorkload:
    cpu: IntArray  # [M] milli-cpu of each GPU shape
    milli: IntArray  # [M] milli-GPU per device
    devices: IntArray  # [M] devices per pod
    access: BoolArray  # [M, K] GPU models (by index) each GPU shape may use
    count: FloatArray  # [M] how many pods of each GPU shape
    cpu_only: float  # how many CPU-only pods (all free GPU is their fragment)

    @property
    def norm(self) -> float:
        return float(self.count.sum()) + self.cpu_only

    @cached_property
    def _levels(self) -> IntArray:
        """The distinct milli levels of the shapes."""
        return np.unique(self.milli)

    @cached_property
    def _per_model(self) -> list[tuple[IntArray, IntArray, IntArray, FloatArray]]:
        """Per GPU model k, the shapes that may use it with equal (cpu, level, devices)
        merged, counts summed: (cpu, level index, devices, count)."""
        level = np.searchsorted(self._levels, self.milli)
        out = []
        for k in range(self.access.shape[1]):
            on = np.flatnonzero(self.access[:, k])
            keys = np.stack([self.cpu[on], level[on], self.devices[on]], axis=1)
            merged, inverse = np.unique(keys, axis=0, return_inverse=True)
            count = np.bincount(inverse.ravel(), weights=self.count[on], minlength=len(merged))
            columns = merged.astype(np.int64)
            out.append((columns[:, 0], columns[:, 1], columns[:, 2], count.astype(np.float64)))
        return out

    def fragmentation(self, cpu: IntArray, dev: IntArray, model: IntArray) -> FloatArray:
        """F(n) × norm for node states: free cpu [B], free milli per device [B, G] (−1: no
        device), GPU model index [B] (−1: none).

        Every shape counts all free milli, less, where it fits, what it can still use:
        F = norm · total − Σ_{m fits} c_m · (total − below_m); per GPU model only the
        shapes that may use it (integer-valued terms: exact in float64)."""
        levels = self._levels
        free = np.where(dev > 0, dev, 0)
        total = free.sum(axis=1).astype(np.float64)
        out = (float(self.count.sum()) + self.cpu_only) * total
        for k in np.unique(model[model >= 0]).tolist():
            rows = np.flatnonzero(model == k)
            shape_cpu, level, devices, count = self._per_model[k]
            d = dev[rows]
            ge = (d[:, :, None] >= levels[None, None, :]).sum(axis=1)  # [R, L]
            below = (free[rows][:, :, None] * (d[:, :, None] < levels[None, None, :])).sum(axis=1)
            fits = (cpu[rows, None] >= shape_cpu[None, :]) & (ge[:, level] >= devices[None, :])
            usable = total[rows, None] - below[:, level]
            out[rows] -= (fits * usable).astype(np.float64) @ count
        return np.asarray(out, dtype=np.float64)


def target_workload(
    shapes: Sequence[tuple[int, int, int, str]], counts: Sequence[int], models: Sequence[str]
) -> TargetWorkload:
    """From typical shapes (cpu, milli per device, devices, GPU models `A|B` or "" for any)
    and their counts; a shape with 0 devices is CPU-only."""
    gpu = [i for i, (_, _, k, _) in enumerate(shapes) if k > 0]
    access = np.array(
        [[not shapes[i][3] or m in shapes[i][3].split("|") for m in models] for i in gpu],
        dtype=bool,
    ).reshape(len(gpu), len(models))
    return TargetWorkload(
        cpu=np.array([shapes[i][0] for i in gpu], dtype=np.int64),
        milli=np.array([shapes[i][1] for i in gpu], dtype=np.int64),
        devices=np.array([shapes[i][2] for i in gpu], dtype=np.int64),
        access=access,
        count=np.array([counts[i] for i in gpu], dtype=np.float64),
        cpu_only=float(sum(c for i, c in enumerate(counts) if shapes[i][2] == 0)),
    )


def fgd_score(target: TargetWorkload, before: FloatArray, after: FloatArray) -> IntArray:
    """FGDScore (`plugin/fgd_score.go`): int64(sigmoid((F_before − F_after) / norm / 1000) ×
    100), in the simulator's order of operations (a score on an integer boundary rounds as
    it does)."""
    x = (before - after) / max(target.norm, 1.0) / 1000.0
    return ((1.0 / (1.0 + np.exp(-x))) * 100.0).astype(np.int64)


Shape = tuple[int, int, int, str]  # (cpu milli, milli-GPU per device, devices, GPU models)


def popular_shapes(
    counts: dict[Shape, int], threshold: float = 95.0
) -> tuple[list[Shape], list[int]]:
    """The simulator's `GetTypicalPods` cut (`podPopularityThreshold`): shapes most frequent
    first (equal counts: larger shape first), up to the first that covers `threshold`% of
    the pods."""
    items = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
    total = sum(counts.values())
    covered, n = 0, 0
    while covered < threshold * total / 100.0 and n < len(items):
        covered += items[n][1]
        n += 1
    return [k for k, _ in items[:n]], [c for _, c in items[:n]]
