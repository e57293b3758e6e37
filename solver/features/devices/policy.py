"""Which devices the greedy prefers: Volcano `deviceshare` arguments, plus FGD.

    - name: deviceshare
      arguments:
        deviceshare.SchedulePolicy: fgd     # binpack (default): best fit; fgd: FGD (ATC'23)
        deviceshare.ScheduleWeight: 10      # the FGD score's weight among the node scores
        deviceshare.fgd.targetWorkload:     # optional; default: learned from the running pods
          - {cpu: 4000, gpuMilli: 500, gpus: 1, count: 30}

`binpack` is best fit on the devices of the chosen node (the node itself chosen by the
other scores). `fgd` scores every node by how little one more pod grows its fragmentation
against the target workload (`fgd.py`), and picks the device that grows it least.

The target workload, when not given, is learned from the running pods (their shapes —
cpu, milli-GPU per device, devices — most popular first, cut at 95% as the simulator does),
else from the call's own pods; memoised per snapshot generation.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from solver.config import SchedulerConf
from solver.features.devices.fgd import Shape, TargetWorkload, popular_shapes, target_workload
from solver.model import GPU_RESOURCE, WHOLE, Pod, device_demand
from solver.snapshot import NONE, Snapshot, Workload

__all__ = ["FGD", "scoring"]

FGD = "fgd"
CPU = "cpu"


def _number(value: Any, default: float) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def _given(value: Any) -> Counter[Shape] | None:
    if not isinstance(value, list):
        return None
    out: Counter[Shape] = Counter()
    for item in value:
        if not isinstance(item, dict):
            return None
        shape = (
            int(_number(item.get("cpu"), 0)),
            int(_number(item.get("gpuMilli"), 0)),
            int(_number(item.get("gpus"), 0)),
            "",
        )
        out[shape] += int(_number(item.get("count"), 1))
    return out


def _running(snapshot: Snapshot) -> Counter[Shape]:
    running = snapshot.running
    cols = running.requests((CPU, GPU_RESOURCE))
    alive = running.alive
    out: Counter[Shape] = Counter()
    shared = np.zeros(running.length, dtype=bool)
    if "devices.allocated" in running.schema.names:
        fact = running.fact("devices.allocated")
        shared = (fact != NONE) & alive
        for row in np.flatnonzero(shared).tolist():
            uses = running.value(int(fact[row])).split(";")
            core = int(uses[0].split(":")[1])
            out[(int(cols[row, 0]), core, len(uses), "")] += 1
    rest = alive & ~shared
    if rest.any():
        pairs, counts = np.unique(cols[rest], axis=0, return_counts=True)
        for (cpu, gpus), count in zip(pairs.tolist(), counts.tolist(), strict=True):
            out[(cpu, WHOLE if gpus else 0, gpus, "")] += count
    return out


def _pods(pods: tuple[Pod, ...]) -> Counter[Shape]:
    out: Counter[Shape] = Counter()
    for pod in pods:
        try:
            demand = device_demand(pod.requests, pod.annotations)
        except ValueError:
            demand = None
        cpu = pod.requests.get(CPU, 0)
        out[(cpu, demand.core, demand.devices, "") if demand else (cpu, 0, 0, "")] += 1
    return out


def scoring(
    snapshot: Snapshot, workload: Workload, conf: SchedulerConf
) -> tuple[str, float, TargetWorkload | None]:
    """(policy, weight, target workload — None unless FGD)."""
    args = conf.arguments("deviceshare")
    policy = str(args.get("deviceshare.SchedulePolicy", "binpack"))
    weight = _number(args.get("deviceshare.ScheduleWeight"), 1.0)
    if policy != FGD:
        return "binpack", weight, None
    counts = _given(args.get("deviceshare.fgd.targetWorkload"))
    if not counts:
        counts = snapshot.memo(("devices", "running shapes"), lambda: _running(snapshot))
    if not counts:
        counts = _pods(workload.pods)
    shapes, kept = popular_shapes(dict(counts))
    return FGD, weight, target_workload(shapes, kept, ["gpu"])
