"""The workload, aggregated for the planner (the current cluster: `solver.plan.cluster`).

Pods become `Shape`s (identical requests, GPU ask, allowed GPU models, nodeSelector) and
jobs become `JobClass`es (identical multisets of shapes), so the model the planner builds
grows with the number of distinct shapes, never with the number of pods.

Sources:

* Kubernetes manifests (`workload_from_model`): every pending pod. A job is a GangGroup
  (the gangs its `gang.scheduling.koordinator.sh/groups` annotation lists) or a gang; a pod
  without a gang is a job of one. A job is placed whole or not at all: the planner covers
  all of its pending pods (gang all-or-nothing at `total`, not only `minMember`).
* A trace CSV (`workload_from_trace`) with a column mapping; every row is a job of one pod.
  The default mapping reads the Alibaba openb pod lists.

Card types (issue 6 is not in the library yet) are read by the planner directly: a pod's
allowed GPU models come from its `volcano.sh/card.name` annotation (`A|B`), else a
nodeSelector on `nvidia.com/gpu.product`, else the trace's `gpu_spec` column (`A|B`); a
node's model from the label `nvidia.com/gpu.product` (manifests), the `model` column (node
CSV) or the catalogue's `gpuModel`. Fractional GPUs: a trace row with `gpu_milli` < 1000
asks for one device with that much milli left (GPU sharing); a multi-GPU row with
`gpu_milli` < 1000 is rounded up to whole devices (openb has none).
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from solver.errors import InputError
from solver.model import ClusterModel, Pod
from solver.plan._files import int_cell, open_csv
from solver.plan._model import GPU, MILLI, JobClass, Shape
from solver.plan.catalog import to_plan_units

__all__ = [
    "CARD_ANNOTATION",
    "DEFAULT_TRACE_MAPPING",
    "GPU_PRODUCT_LABEL",
    "Workload",
    "parse_mapping",
    "pod_shape",
    "workload_from_model",
    "workload_from_trace",
]

CARD_ANNOTATION = "volcano.sh/card.name"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
MAX_NAMES = 20  # job ids kept per job class (for reasons)

DEFAULT_TRACE_MAPPING: dict[str, str] = {
    "name": "name",
    "cpu": "cpu_milli",  # milli-CPU
    "memory": "memory_mib",  # MiB
    "gpu": "num_gpu",  # GPU devices
    "gpu_milli": "gpu_milli",  # milli per device (1000 = whole)
    "gpu_spec": "gpu_spec",  # allowed GPU models, `|`-separated; empty = any
}
_OPTIONAL_FIELDS = {"name", "gpu", "gpu_milli", "gpu_spec", "memory"}


@dataclass
class Workload:
    """Shapes and job classes being accumulated (see `add_job`)."""

    shapes: list[Shape] = field(default_factory=list)
    _shape_index: dict[Shape, int] = field(default_factory=dict)
    _jobs: dict[tuple[tuple[tuple[int, int], ...], int], list[str]] = field(default_factory=dict)
    _counts: Counter[tuple[tuple[tuple[int, int], ...], int]] = field(default_factory=Counter)
    infeasible: list[tuple[str, int, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def shape(self, shape: Shape) -> int:
        index = self._shape_index.get(shape)
        if index is None:
            index = self._shape_index[shape] = len(self.shapes)
            self.shapes.append(shape)
        return index

    def add_job(self, name: str, pods: Iterable[Shape], weight: int | None = None) -> None:
        """One job whose pods are placed together or not at all."""
        counts = Counter(self.shape(s) for s in pods)
        key = tuple(sorted(counts.items()))
        if not key:
            return
        w = sum(counts.values()) if weight is None else weight
        self._counts[key, w] += 1
        names = self._jobs.setdefault((key, w), [])
        if len(names) < MAX_NAMES:
            names.append(name)

    @property
    def jobs(self) -> list[JobClass]:
        return [
            JobClass(shapes=key, count=n, weight=w, names=tuple(self._jobs[key, w]))
            for (key, w), n in self._counts.items()
        ]

    @property
    def pods(self) -> int:
        return sum(n * sum(m for _, m in key) for (key, _), n in self._counts.items())


def _split_models(text: str) -> frozenset[str] | None:
    models = frozenset(m.strip() for m in text.split("|") if m.strip())
    return models or None


def pod_shape(pod: Pod) -> Shape:
    """A manifest pod's shape (memory in MiB, GPUs as whole devices)."""
    requests = {r: to_plan_units(r, v, capacity=False) for r, v in pod.requests.items() if r != GPU}
    requests["pods"] = 1
    selector = dict(pod.node_selector)
    models = _split_models(pod.annotations.get(CARD_ANNOTATION, ""))
    product = selector.pop(GPU_PRODUCT_LABEL, None)
    if models is None and product:
        models = frozenset({product})
    return Shape(
        requests=tuple(sorted((r, v) for r, v in requests.items() if v)),
        gpus=pod.requests.get(GPU, 0),
        gpu_milli=MILLI,
        models=models,
        selector=tuple(sorted(selector.items())),
    )


def workload_from_model(model: ClusterModel, workload: Workload | None = None) -> Workload:
    """Every pending pod of the manifests, grouped into jobs (GangGroups, gangs, singles)."""
    out = workload or Workload()
    pending: dict[str, list[Pod]] = {}
    for pod in model.pending_pods:
        pending.setdefault(pod.gang, []).append(pod)
    done: set[str] = set()
    for gid in sorted(pending):
        if gid in done:
            continue
        gang = model.gangs[gid]
        group = sorted(g for g in (gang.groups or (gid,)) if g in model.gangs) or [gid]
        done.update(group)
        pods = [p for g in group for p in pending.get(g, [])]
        name = "+".join(group)
        short = [
            g
            for g in group
            if not model.gangs[g].implicit
            and len(model.gangs[g].members) < model.gangs[g].min_member
        ]
        if short:
            g = model.gangs[short[0]]
            out.infeasible.append(
                (
                    name,
                    len(pods),
                    f"gang {g.id} has {len(g.members)} pod(s), fewer than minMember {g.min_member}",
                )
            )
            continue
        out.add_job(name, (pod_shape(p) for p in pods))
    return out


def parse_mapping(text: str | None) -> dict[str, str]:
    """`cpu=cpu_milli,memory=mem` -> the trace mapping (defaults for fields not named)."""
    mapping = dict(DEFAULT_TRACE_MAPPING)
    if not text:
        return mapping
    for item in text.split(","):
        if not item.strip():
            continue
        key, sep, column = item.partition("=")
        key, column = key.strip(), column.strip()
        if not sep or not column:
            raise InputError(f"--trace-mapping: {item!r}: expected FIELD=COLUMN")
        if key not in DEFAULT_TRACE_MAPPING:
            known = ", ".join(DEFAULT_TRACE_MAPPING)
            raise InputError(f"--trace-mapping: unknown field {key!r} (known: {known})")
        mapping[key] = column
    return mapping


def workload_from_trace(
    path: str | Path,
    mapping: dict[str, str] | None = None,
    workload: Workload | None = None,
    *,
    limit: int | None = None,
) -> Workload:
    """A pod-list CSV: each row is one pod (a job of one). Units: milli-CPU, MiB, milli GPU."""
    mapping = mapping or dict(DEFAULT_TRACE_MAPPING)
    out = workload or Workload()
    source = str(path)
    with open_csv(path) as handle:
        reader = csv.DictReader(handle)
        header = set(reader.fieldnames or ())
        for key, column in mapping.items():
            if column not in header and not (key in _OPTIONAL_FIELDS and key != "memory"):
                if key == "memory" and column == DEFAULT_TRACE_MAPPING["memory"]:
                    continue
                cols = ", ".join(sorted(header)) or "none"
                raise InputError(
                    f"{source}: trace mapping {key}={column}: no such column (columns: {cols})"
                )
        for n, row in enumerate(reader):
            if limit is not None and n >= limit:
                break
            line = n + 2
            gpus = int_cell(row, mapping["gpu"], source, line) if mapping["gpu"] in header else 0
            milli = (
                int_cell(row, mapping["gpu_milli"], source, line)
                if mapping["gpu_milli"] in header
                else MILLI
            )
            if gpus == 0:
                milli = MILLI
            elif milli <= 0 or milli > MILLI:
                raise InputError(
                    f"{source}: line {line}: column {mapping['gpu_milli']!r}: "
                    f"must be in 1..1000 for a GPU pod, got {milli}"
                )
            if gpus > 1 and milli < MILLI:
                milli = MILLI  # documented approximation: multi-GPU shares round up
            requests = {"cpu": int_cell(row, mapping["cpu"], source, line), "pods": 1}
            if mapping["memory"] in header:
                requests["memory"] = int_cell(row, mapping["memory"], source, line)
            spec = row.get(mapping["gpu_spec"], "") if mapping["gpu_spec"] in header else ""
            shape = Shape(
                requests=tuple(sorted((r, v) for r, v in requests.items() if v)),
                gpus=gpus,
                gpu_milli=milli,
                models=_split_models(spec or "") if gpus else None,
            )
            name = row.get(mapping["name"], "") if mapping["name"] in header else ""
            out.add_job(name or f"{Path(source).name}:{line}", [shape])
    return out
