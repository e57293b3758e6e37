"""The current cluster, used first and for free: its nodes grouped into classes of
identical nodes (`NodeType(existing=True)`, cost 0, `maxCount` = how many there are).

Sources: the manifests' ready, schedulable nodes with their capacity left after the bound
pods (`cluster_from_model`; a node's GPU model is its `nvidia.com/gpu.product` label), or
an openb-style node CSV (`cluster_from_csv`; the model is its `model` column).
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from solver.errors import InputError
from solver.model import ClusterModel
from solver.plan._files import int_cell, open_csv
from solver.plan._model import DEFAULT_PODS_CAPACITY, GPU, MILLI, NodeType
from solver.plan.catalog import to_plan_units
from solver.plan.workload import GPU_PRODUCT_LABEL

__all__ = ["cluster_from_csv", "cluster_from_model"]


def _classes(nodes: Sequence[NodeType]) -> list[NodeType]:
    """Identical existing nodes -> one class each (name of its first node, `+k` more)."""
    groups: dict[NodeType, list[str]] = {}
    for node in nodes:
        key = replace(node, name="", cost=0.0, max_count=None, nodes_per_block=None, existing=True)
        groups.setdefault(key, []).append(node.name)
    out = []
    for key, names in groups.items():
        names.sort()
        label = names[0] + (f"+{len(names) - 1}" if len(names) > 1 else "")
        out.append(replace(key, name=f"existing:{label}", max_count=len(names)))
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
    with open_csv(path) as handle:
        reader = csv.DictReader(handle)
        header = set(reader.fieldnames or ())
        for column in ("sn", "cpu_milli", "memory_mib", "gpu"):
            if column not in header:
                raise InputError(f"{source}: missing column {column!r} (an openb node list)")
        for n, row in enumerate(reader):
            line = n + 2
            gpus = int_cell(row, "gpu", source, line)
            nodes.append(
                NodeType(
                    name=row["sn"] or f"{Path(source).name}:{line}",
                    cost=0.0,
                    allocatable=(
                        ("cpu", int_cell(row, "cpu_milli", source, line)),
                        ("memory", int_cell(row, "memory_mib", source, line)),
                        ("pods", DEFAULT_PODS_CAPACITY),
                    ),
                    gpus=gpus,
                    gpu_model=(row.get("model") or "").strip() or None if gpus else None,
                    existing=True,
                )
            )
    return _classes(nodes)
