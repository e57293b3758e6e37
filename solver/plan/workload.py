"""The workload and the current cluster, aggregated for the planner.

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
* The current cluster: nodes from the same manifests (their free capacity after bound
  pods) or an openb-style node CSV (`cluster_from_csv`), grouped into classes of identical
  nodes that cost nothing and may be used up to their count.

Card types (issue 6 is not in the library yet) are read here directly: a pod's allowed GPU
models come from its `volcano.sh/card.name` annotation (`A|B`), else a nodeSelector on
`nvidia.com/gpu.product`, else the trace's `gpu_spec` column (`A|B`); a node's model from
the label `nvidia.com/gpu.product` (manifests), the `model` column (node CSV) or the
catalogue's `gpuModel`. Fractional GPUs: a trace row with `gpu_milli` < 1000 asks for one
device with that much milli left (GPU sharing); a multi-GPU row with `gpu_milli` < 1000 is
rounded up to whole devices (openb has none).
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TextIO

from solver.errors import InputError
from solver.model import ClusterModel, Pod
from solver.plan._model import GPU, MILLI, JobClass, NodeType, PlanInput, Shape
from solver.plan.catalog import Catalog, to_plan_units

__all__ = [
    "CARD_ANNOTATION",
    "DEFAULT_TRACE_MAPPING",
    "GPU_PRODUCT_LABEL",
    "VALUES",
    "Workload",
    "cluster_from_csv",
    "cluster_from_model",
    "make_input",
    "parse_mapping",
    "valued",
    "workload_from_model",
    "workload_from_trace",
]

VALUES = ("pods", "gpu")  # what placing a job is worth (`valued`)

CARD_ANNOTATION = "volcano.sh/card.name"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
DEFAULT_PODS_CAPACITY = 110  # Kubernetes' default `pods` allocatable
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


def _open(path: str | Path) -> TextIO:
    try:
        return Path(path).open(newline="", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: cannot read file: {exc.strerror or exc}") from exc


def _int_cell(row: dict[str, str], column: str, source: str, line: int) -> int:
    text = (row.get(column) or "").strip()
    if not text:
        return 0
    try:
        value = float(text)
    except ValueError:
        raise InputError(
            f"{source}: line {line}: column {column!r}: not a number: {text!r}"
        ) from None
    if value < 0 or value != value:
        raise InputError(f"{source}: line {line}: column {column!r}: must be >= 0, got {text!r}")
    return int(-(-value // 1))


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
    with _open(path) as handle:
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
            gpus = _int_cell(row, mapping["gpu"], source, line) if mapping["gpu"] in header else 0
            milli = (
                _int_cell(row, mapping["gpu_milli"], source, line)
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
            requests = {"cpu": _int_cell(row, mapping["cpu"], source, line), "pods": 1}
            if mapping["memory"] in header:
                requests["memory"] = _int_cell(row, mapping["memory"], source, line)
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


def _classes(nodes: Sequence[NodeType]) -> list[NodeType]:
    """Identical existing nodes -> one class each (name of its first node, `+k` more)."""
    groups: dict[NodeType, list[str]] = {}
    for node in nodes:
        key = NodeType(
            name="",
            cost=0.0,
            allocatable=node.allocatable,
            gpus=node.gpus,
            gpu_model=node.gpu_model,
            labels=node.labels,
            existing=True,
            gpu_free=node.gpu_free,
        )
        groups.setdefault(key, []).append(node.name)
    out = []
    for key, names in groups.items():
        names.sort()
        label = names[0] + (f"+{len(names) - 1}" if len(names) > 1 else "")
        out.append(
            NodeType(
                name=f"existing:{label}",
                cost=0.0,
                allocatable=key.allocatable,
                gpus=key.gpus,
                gpu_model=key.gpu_model,
                max_count=len(names),
                labels=key.labels,
                existing=True,
                gpu_free=key.gpu_free,
            )
        )
    out.sort(key=lambda t: t.name)
    return out


def cluster_from_model(model: ClusterModel) -> list[NodeType]:
    """The manifests' ready, schedulable nodes with their free capacity, as node classes."""
    used: dict[str, Counter[str]] = {}
    for pod in model.bound_pods:
        if pod.node_name is not None:
            used.setdefault(pod.node_name, Counter()).update(pod.requests)
    nodes = []
    for node in model.nodes:
        if not node.ready or node.unschedulable:
            continue
        taken = used.get(node.name, Counter())
        free = {r: max(0, v - taken.get(r, 0)) for r, v in node.allocatable.items()}
        free.setdefault("pods", DEFAULT_PODS_CAPACITY)
        gpus = node.allocatable.get(GPU, 0)
        free_gpus = free.pop(GPU, 0)
        labels = dict(node.labels)
        nodes.append(
            NodeType(
                name=node.name,
                cost=0.0,
                allocatable=tuple(
                    sorted((r, to_plan_units(r, v, capacity=True)) for r, v in free.items())
                ),
                gpus=gpus,
                gpu_model=labels.get(GPU_PRODUCT_LABEL),
                labels=tuple(sorted(labels.items())),
                existing=True,
                gpu_free=(MILLI,) * free_gpus + (0,) * (gpus - free_gpus)
                if free_gpus < gpus
                else (),
            )
        )
    return _classes(nodes)


def cluster_from_csv(path: str | Path) -> list[NodeType]:
    """An openb-style node list (`sn,cpu_milli,memory_mib,gpu,model`) as node classes."""
    source = str(path)
    nodes = []
    with _open(path) as handle:
        reader = csv.DictReader(handle)
        header = set(reader.fieldnames or ())
        for column in ("sn", "cpu_milli", "memory_mib", "gpu"):
            if column not in header:
                raise InputError(f"{source}: missing column {column!r} (an openb node list)")
        for n, row in enumerate(reader):
            line = n + 2
            gpus = _int_cell(row, "gpu", source, line)
            nodes.append(
                NodeType(
                    name=row["sn"] or f"{Path(source).name}:{line}",
                    cost=0.0,
                    allocatable=(
                        ("cpu", _int_cell(row, "cpu_milli", source, line)),
                        ("memory", _int_cell(row, "memory_mib", source, line)),
                        ("pods", DEFAULT_PODS_CAPACITY),
                    ),
                    gpus=gpus,
                    gpu_model=(row.get("model") or "").strip() or None if gpus else None,
                    existing=True,
                )
            )
    return _classes(nodes)


# ----------------------------------------------------------------------------- the input


def fit_failure(shape: Shape, t: NodeType) -> str | None:
    """Why one pod of `shape` cannot run on an empty node of type `t` (None: it can)."""
    for r, v in shape.requests:
        cap = (
            t.capacity(r)
            if (r != "pods" or any(n == "pods" for n, _ in t.allocatable))
            else (DEFAULT_PODS_CAPACITY)
        )
        if v > cap:
            return f"Insufficient {r}"
    if shape.gpus:
        if sum(1 for f in t.devices if f >= shape.gpu_milli) < shape.gpus:
            return f"Insufficient {GPU}"
        if shape.models is not None and t.gpu_model not in shape.models:
            return "GPU model not allowed"
    labels = dict(t.labels)
    for key, value in shape.selector:
        if labels.get(key) != value:
            return "node(s) didn't match Pod's node affinity/selector"
    return None


def make_input(
    workload: Workload,
    catalog: Catalog | None,
    existing: Sequence[NodeType] = (),
) -> PlanInput:
    """The planning question: jobs whose every pod fits some type, plus up-front reasons.

    A job with a pod that fits no node type on its own (too big, GPU model not offered,
    selector) is reported with kube-scheduler-style counted reasons and left out of the
    model (all-or-nothing: its other pods are left out too).
    """
    types = [*existing, *(catalog.types if catalog else ())]
    shapes = workload.shapes
    failures: dict[int, str | None] = {}
    for i, shape in enumerate(shapes):
        why = [fit_failure(shape, t) for t in types]
        if any(w is None for w in why):
            failures[i] = None
            continue
        counted = Counter(w for w in why if w)
        detail = ", ".join(f"{n} {reason}" for reason, n in sorted(counted.items()))
        failures[i] = (
            f"no node type can hold pod ({shape.describe()}): "
            f"0/{len(types)} node types are available: {detail}."
            if types
            else "no node types: the catalogue and the cluster are empty"
        )
    jobs = []
    infeasible = list(workload.infeasible)
    for job in workload.jobs:
        bad = [failures[s] for s, _ in job.shapes if failures[s]]
        if bad:
            prefix = "gang member: " if job.pods > 1 else ""
            reason = prefix + str(bad[0])
            for n in range(job.count):
                name = job.names[n] if n < len(job.names) else f"{job.names[0]}..."
                infeasible.append((name, job.pods, reason))
            continue
        jobs.append(job)
    resources = sorted({r for s in shapes for r, _ in s.requests})
    return PlanInput(
        shapes=tuple(shapes),
        jobs=tuple(jobs),
        types=tuple(types),
        card_quota=catalog.card_quota if catalog else (),
        budget=catalog.budget if catalog else None,
        infeasible=tuple(infeasible),
        resources=tuple(resources),
        notes=tuple(workload.notes),
    )


def valued(inp: PlanInput, value: str) -> PlanInput:
    """The input with each job worth its `value`: `pods` (the default: a job is worth its
    pods, so the plan places the most pods) or `gpu` (its GPU milli, at least 1: on a
    fixed or capped cluster the plan places the most GPU work, then CPU-only jobs)."""
    if value not in VALUES:
        raise InputError(f"value: {value!r} is not one of {', '.join(VALUES)}")
    if value == "pods":
        return inp
    jobs = tuple(
        replace(
            job,
            weight=max(1, sum(m * inp.shapes[s].gpu_total_milli for s, m in job.shapes)),
        )
        for job in inp.jobs
    )
    return replace(inp, jobs=jobs)
