"""The FGD simulator's best-fit node score (hkust-adsl/kubernetes-scheduler-simulator
`pkg/simulator/plugin/best_fit_score.go`), also `benchmarks/openb/replay.py`'s:

    s = 0.5 × cpu left / max cpu + 0.5 × GPU milli left / max GPU milli
    score = int64((1 − s) × 100)

"max" is the largest node's (the simulator's `MaxSpecCpu` 128 cores and `MaxSpecGpu` 8
GPUs are openb's largest node). Integer, like FGD's: ties go to the smallest node name.
"""

from __future__ import annotations

import numpy as np

from solver.problem import FloatArray, IntArray

__all__ = ["best_fit_score"]


def best_fit_score(
    cpu_left: FloatArray, gpu_left: FloatArray, max_cpu: float, max_gpu: float
) -> IntArray:
    """Per node, after one more pod: cpu left (milli) and GPU milli left."""
    s = cpu_left / max_cpu * 0.5
    s = s + gpu_left / max_gpu * 0.5
    return ((1.0 - s) * 100.0).astype(np.int64)
