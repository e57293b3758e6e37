"""Which nodes and devices the greedy prefers: Volcano `deviceshare` arguments, plus FGD and
the FGD simulator's best fit.

    - name: deviceshare
      arguments:
        deviceshare.SchedulePolicy: fgd     # binpack (default) | bestfit | fgd
        deviceshare.ScheduleWeight: 10      # the node score's weight among the node scores
        deviceshare.fgd.gpuModelLabel: nvidia.com/gpu.product   # the node label naming its GPU model
        deviceshare.fgd.targetWorkload:     # optional; default: learned from the running pods
          - {cpu: 4000, gpuMilli: 500, gpus: 1, count: 30, gpuModels: [V100M16, V100M32]}

* `binpack` is best fit on the devices of the chosen node (the node itself chosen by the
  other scores).
* `bestfit` also scores nodes, as the FGD simulator's BestFitScore
  (`pkg/simulator/plugin/best_fit_score.go`): int64((1 − s) × 100) with s = 0.5 × cpu left /
  the largest node's cpu + 0.5 × GPU milli left / the largest node's GPU milli.
* `fgd` scores every node by how little one more pod grows its fragmentation against the
  target workload (`fgd.py`), and picks the device that grows it least.

With either node score as the only score in the conf (no `binpack`, no `nodeorder`), the
greedy is the simulator's policy pod for pod: integer scores, ties to the smallest node
name (`benchmarks/openb/online.py` checks it against the simulator's re-implementation).

The target workload, when not given, is learned from the running pods (their shapes —
cpu, milli-GPU per device, devices — most popular first, cut at 95% as the simulator does),
else from the call's own pods; memoised per snapshot generation. A given shape may name the
GPU models it can use (`gpuModels`, matched against the nodes' `gpuModelLabel`): on other
models all of a node's free GPU is its fragment. An argument of the wrong type is ignored
with a note, as Volcano ignores it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from solver.config import Plugin, SchedulerConf
from solver.features.devices.fgd import Shape, TargetWorkload, popular_shapes, target_workload
from solver.model import GPU_RESOURCE, WHOLE, Pod, device_demand, node_devices
from solver.problem import IntArray
from solver.snapshot import NONE, NodeTable, Snapshot, Workload

__all__ = ["BESTFIT", "BINPACK", "FGD", "MODEL_LABEL", "Scoring", "scoring"]

BINPACK = "binpack"
BESTFIT = "bestfit"
FGD = "fgd"
POLICIES = (BINPACK, BESTFIT, FGD)
MODEL_LABEL = "nvidia.com/gpu.product"  # NVIDIA GPU feature discovery's model label
CPU = "cpu"
_ARG = "deviceshare."


@dataclass(frozen=True, eq=False)
class Scoring:
    policy: str  # binpack | bestfit | fgd
    weight: float  # deviceshare.ScheduleWeight
    target: TargetWorkload | None  # FGD's target workload
    node_model: IntArray  # [N] GPU model index into the target's models (−1: no devices)
    notes: tuple[str, ...]  # ignored arguments


# Past this an argument is no real weight, cpu, device count or pod count: refused, so
# scores stay finite and F's integer sums stay exact in float64.
LARGEST = float(2**32)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


def _number(value: Any, default: float, key: str, notes: list[str]) -> float:
    if isinstance(value, bool):
        value = None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        notes.append(f"deviceshare: argument {key}={_shown(value)} is not a number; ignored")
        return default
    if not abs(number) <= LARGEST:  # also NaN
        notes.append(f"deviceshare: argument {key}={number!r} is out of range; ignored")
        return default
    return number


def _models(value: Any) -> str:
    """gpuModels as a list or an `A|B` string -> the simulator's gpu_spec form `A|B`."""
    if isinstance(value, str):
        return "|".join(sorted(m for m in value.split("|") if m))
    if isinstance(value, list) and all(isinstance(m, str) for m in value):
        return "|".join(sorted(m for m in value if m))
    raise ValueError("gpuModels is neither a list of names nor an A|B string")


def _given(value: Any, notes: list[str]) -> Counter[Shape] | None:
    key = _ARG + "fgd.targetWorkload"
    if value is None:
        return None
    out: Counter[Shape] = Counter()
    if not isinstance(value, list):
        notes.append(f"deviceshare: argument {key} is not a list; learned from the pods instead")
        return None
    for i, item in enumerate(value):
        where = f"{key}[{i}]"
        if not isinstance(item, dict):
            notes.append(f"deviceshare: {where} is not a mapping; ignored")
            continue
        try:
            spec = _models(item.get("gpuModels", ""))
        except ValueError as exc:
            notes.append(f"deviceshare: {where}: {exc}; ignored")
            continue
        numbers = [
            _number(item.get(k, d), d, f"{where}.{k}", notes)
            for k, d in (("cpu", 0), ("gpuMilli", 0), ("gpus", 0), ("count", 1))
        ]
        cpu, milli, gpus, count = (int(x) for x in numbers)
        if min(cpu, milli, gpus, count) < 0 or milli > WHOLE:
            notes.append(f"deviceshare: {where}: negative, or gpuMilli over {WHOLE}; ignored")
            continue
        out[(cpu, milli, gpus, spec if gpus else "")] += count
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


def _node_models(nodes: NodeTable, label: str, models: Sequence[str]) -> IntArray:
    """[N] index of each node's GPU model in `models` (nodes without the label: index 0,
    the unnamed model no restricted shape may use; nodes without devices: −1)."""
    index = {m: i for i, m in enumerate(models)}
    out = [
        index.get(node.labels.get(label, ""), 0) if node_devices(node)[0] else -1
        for node in nodes.nodes
    ]
    return np.array(out, dtype=np.int64)


def scoring(snapshot: Snapshot, workload: Workload, conf: SchedulerConf) -> Scoring:
    """The deviceshare arguments of `conf`, FGD's target workload and the nodes' models."""
    args = conf.arguments(Plugin.DEVICESHARE)
    notes: list[str] = []
    policy = str(args.get(_ARG + "SchedulePolicy", BINPACK))
    if policy not in POLICIES:
        notes.append(
            f"deviceshare: argument {_ARG}SchedulePolicy={policy!r} is none of "
            f"{', '.join(POLICIES)}; ignored ({BINPACK})"
        )
        policy = BINPACK
    weight = _number(args.get(_ARG + "ScheduleWeight", 1.0), 1.0, _ARG + "ScheduleWeight", notes)
    none = np.zeros(0, dtype=np.int64)
    if policy != FGD:
        return Scoring(policy, weight, None, none, tuple(notes))
    label = str(args.get(_ARG + "fgd.gpuModelLabel", MODEL_LABEL))
    raw = args.get(_ARG + "fgd.targetWorkload")
    key = _canonical(raw)
    given, parsed = _given_noted(raw) if key is None else _given_cached(key)
    notes.extend(parsed)
    if given:  # as given: the user's distribution, not cut again
        shapes, kept = given
    else:  # learned from the running pods (else the call's pods)
        counts = snapshot.memo(("devices", "running shapes"), lambda: _running(snapshot))
        listed, counted = popular_shapes(dict(counts or _pods(workload.pods)))
        shapes, kept = tuple(listed), tuple(counted)
    nodes = snapshot.nodes
    named = {m for _, _, _, spec in shapes for m in spec.split("|") if m}
    named |= nodes.memo(
        ("devices", "model names", label),
        lambda: frozenset(n.labels[label] for n in nodes.nodes if label in n.labels),
    )
    models = ("", *sorted(named))
    node_model = nodes.memo(
        ("devices", "node models", label, models),
        lambda: _node_models(nodes, label, models),
    )
    return Scoring(policy, weight, _target(shapes, kept, models), node_model, tuple(notes))


Given = tuple[tuple[Shape, ...], tuple[int, ...]]


def _canonical(raw: Any) -> str | None:
    """The argument as a cache key (None: not JSON-like, parsed each call)."""
    try:
        return json.dumps(raw, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return None


def _given_noted(raw: Any) -> tuple[Given | None, tuple[str, ...]]:
    notes: list[str] = []
    given = _given(raw, notes)
    return ((tuple(given), tuple(given.values())) if given else None), tuple(notes)


# A front end sends the same conf call after call: its target is parsed and built once
# (bounded caches: a caller varying the argument costs a parse, not memory).
@lru_cache(maxsize=16)
def _given_cached(key: str) -> tuple[Given | None, tuple[str, ...]]:
    return _given_noted(json.loads(key))


@lru_cache(maxsize=16)
def _target(
    shapes: tuple[Shape, ...], counts: tuple[int, ...], models: tuple[str, ...]
) -> TargetWorkload:
    return target_workload(shapes, counts, models)
