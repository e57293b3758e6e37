"""The node-type catalogue: what can be bought, at what cost (a YAML file).

    nodeTypes:
    - name: a100x8                 # unique
      cost: 32.77                  # per node, any unit (e.g. $/h); >= 0
      gpuModel: A100               # the GPU model of its devices (card type); optional
      allocatable:                 # Kubernetes quantities; nvidia.com/gpu = devices
        cpu: "96"
        memory: 1152Gi
        nvidia.com/gpu: 8
        pods: 110
      maxCount: 64                 # optional: at most this many may be added
      nodesPerBlock: 8             # optional: bought in whole topology blocks of 8 nodes
      labels: {pool: training}     # optional: for pods' nodeSelector
    cardQuota: {A100: 256}         # optional: most GPUs of a model that may be added
    budget: 5000                   # optional: most total cost of the added nodes

A malformed file raises `InputError` naming the file and the field
(`catalog.yaml: nodeTypes[2].allocatable.memory: invalid quantity '12XB'`). Costs, the
budget and the counts are bounded (`MAX_COST`, `MAX_BUDGET`, `MAX_COUNT`): the planner
works in 64-bit integers, and no real catalogue comes near the limits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from solver.model import device_count_problem
from solver.plan._files import field_error, read_yaml, reject_unknown
from solver.plan._model import GPU, MIB, NodeType
from solver.quantity import QuantityError, to_int

__all__ = [
    "MAX_BUDGET",
    "MAX_COST",
    "MAX_COUNT",
    "Catalog",
    "catalog_from_dict",
    "load_catalog",
    "to_plan_units",
]

MAX_COST = 1e9  # per node, in any unit
MAX_BUDGET = 1e12
MAX_COUNT = 1_000_000  # maxCount, nodesPerBlock and GPUs of a card quota
_TYPE_KEYS = {"name", "cost", "gpuModel", "allocatable", "maxCount", "nodesPerBlock", "labels"}
_TOP_KEYS = {"nodeTypes", "cardQuota", "budget"}


@dataclass(frozen=True)
class Catalog:
    """What can be bought: node types, GPUs per model that may be added, total cost."""

    types: tuple[NodeType, ...]
    card_quota: tuple[tuple[str, int], ...] = ()
    budget: float | None = None


def to_plan_units(resource: str, value: int, *, capacity: bool) -> int:
    """Model units -> planner units: memory bytes -> MiB (capacity down, requests up)."""
    if resource == "memory":
        return value // MIB if capacity else -(-value // MIB)
    return value


def load_catalog(path: str | Path) -> Catalog:
    """Read a catalogue YAML file; raises InputError naming the file and field."""
    return catalog_from_dict(read_yaml(path), str(path))


def _number(value: Any, source: str, field: str, maximum: float, *, integer: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise field_error(source, field, f"must be a number, got {value!r}")
    if not math.isfinite(value) or value < 0:
        raise field_error(source, field, f"must be a finite number >= 0, got {value!r}")
    if value > maximum:
        raise field_error(source, field, f"must be at most {maximum:g}, got {value!r}")
    if integer and (not isinstance(value, int) or value < 1):
        raise field_error(source, field, f"must be a positive integer, got {value!r}")
    return float(value)


def catalog_from_dict(data: Any, source: str) -> Catalog:
    """Validate a parsed catalogue (see the module docstring for the format)."""
    if not isinstance(data, dict):
        raise field_error(source, "(top level)", "expected a mapping with `nodeTypes`")
    reject_unknown(source, "", data, _TOP_KEYS, ", ".join(sorted(_TOP_KEYS)))
    raw_types = data.get("nodeTypes")
    if not isinstance(raw_types, list):
        raise field_error(source, "nodeTypes", "must be a list of node types")
    types: list[NodeType] = []
    seen: set[str] = set()
    for i, raw in enumerate(raw_types):
        types.append(_node_type(raw, source, f"nodeTypes[{i}]", seen))
    quota: list[tuple[str, int]] = []
    raw_quota = data.get("cardQuota") or {}
    if not isinstance(raw_quota, dict):
        raise field_error(source, "cardQuota", "must be a mapping GPU model -> GPUs")
    for model, limit in sorted(raw_quota.items()):
        quota.append((str(model), int(_number(limit, source, f"cardQuota.{model}", MAX_COUNT))))
    budget = data.get("budget")
    return Catalog(
        types=tuple(types),
        card_quota=tuple(quota),
        budget=None if budget is None else _number(budget, source, "budget", MAX_BUDGET),
    )


def _node_type(raw: Any, source: str, where: str, seen: set[str]) -> NodeType:
    if not isinstance(raw, dict):
        raise field_error(source, where, "must be a mapping")
    reject_unknown(source, where, raw, _TYPE_KEYS)
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise field_error(source, f"{where}.name", "required, a non-empty string")
    if name in seen:
        raise field_error(source, f"{where}.name", f"duplicate node type {name!r}")
    seen.add(name)
    if "cost" not in raw:
        raise field_error(source, f"{where}.cost", "required")
    cost = _number(raw["cost"], source, f"{where}.cost", MAX_COST)
    alloc = raw.get("allocatable")
    if not isinstance(alloc, dict) or not alloc:
        raise field_error(
            source, f"{where}.allocatable", "required, a mapping resource -> quantity"
        )
    amounts: dict[str, int] = {}
    for resource, value in alloc.items():
        try:
            amount = to_int(str(resource), value)
        except QuantityError as exc:
            raise field_error(source, f"{where}.allocatable.{resource}", str(exc)) from None
        amounts[str(resource)] = to_plan_units(str(resource), amount, capacity=True)
    if (bad := device_count_problem(amounts)) is not None:  # as on a node: memory bounded
        raise field_error(source, f"{where}.allocatable.{bad[0]}", bad[1])
    gpus = amounts.pop(GPU, 0)
    model = raw.get("gpuModel")  # None: pods with a card constraint do not fit the type
    if model is not None and (not isinstance(model, str) or not model):
        raise field_error(source, f"{where}.gpuModel", "must be a non-empty string")
    max_count = raw.get("maxCount")
    per_block = raw.get("nodesPerBlock")
    labels = raw.get("labels") or {}
    if not isinstance(labels, dict):
        raise field_error(source, f"{where}.labels", "must be a mapping")
    return NodeType(
        name=name,
        cost=cost,
        allocatable=tuple(sorted(amounts.items())),
        gpus=gpus,
        gpu_model=model,
        max_count=None
        if max_count is None
        else int(_number(max_count, source, f"{where}.maxCount", MAX_COUNT)),
        nodes_per_block=None
        if per_block is None
        else int(_number(per_block, source, f"{where}.nodesPerBlock", MAX_COUNT, integer=True)),
        labels=tuple(sorted((str(k), str(v)) for k, v in labels.items())),
    )
