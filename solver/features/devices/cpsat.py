"""GPU devices in the CP-SAT model: device patterns counted per (node, free-capacity bucket).

Devices with the same free compute, free memory and memory size are interchangeable, so a
node's devices are grouped into buckets b of m_b devices, and what one device of b holds
is a pattern p (pods of each device type on it that fit its compute and memory; a pod
asking for several GPUs at most once per device, so its GPUs are distinct). For node
(virtual node k of class c) and its buckets:
    # Σ_p g[c, k, b, p] ≤ m_b                      (devices of bucket b in use)
    # Σ_{b, p} pattern[p, t] · g[c, k, b, p] = devices_t · x[t, c, k]   for every device type t
Node classes never mix nodes whose devices differ (`class_split`: one key per device
state), and device types are modelled node by node (`per_node`), so a pod's GPUs are on its
node. Patterns per bucket are enumerated up to `MAX_PATTERNS`; past that (or for a type
that takes nothing of a device) the engine answers with the greedy (`unsupported`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from solver.features.devices.block import DeviceBlock
from solver.problem import BoolArray, IntArray, Problem
from solver.sat import PlacementVars, Term

__all__ = ["assignment", "build", "class_split", "per_node", "unsupported"]

MAX_PATTERNS = 400
_KEY = "devices"


@dataclass(frozen=True)
class _Bucket:
    core: int
    memory: int
    first_row: int  # a device row of the bucket (its memory size)
    local: tuple[int, ...]  # device indices within the node


def _buckets(block: DeviceBlock, n: int) -> list[_Bucket]:
    table = block.table
    first, last = int(table.start[n]), int(table.start[n + 1])
    groups: dict[tuple[int, int, int], list[int]] = {}
    for row in range(first, last):
        key = (int(table.core_free[row]), int(table.memory_free[row]), int(table.memory_cap[row]))
        groups.setdefault(key, []).append(row)
    return [
        _Bucket(core, memory, rows[0], tuple(r - first for r in rows))
        for (core, memory, _), rows in sorted(groups.items())
    ]


def per_node(problem: Problem) -> BoolArray | None:
    block = problem.block(DeviceBlock)
    if block is None:
        return None
    return np.array([block.involved(t) for t in range(problem.num_types)], dtype=bool)


def _signatures(block: DeviceBlock, num_nodes: int) -> IntArray:
    """[N] one id per distinct device state of a node (0: no devices)."""
    table = block.table
    ids: dict[tuple[int, ...], int] = {(): 0}
    out = np.zeros(num_nodes, dtype=np.int64)
    for n in np.flatnonzero(np.diff(table.start) > 0).tolist():
        first, last = int(table.start[n]), int(table.start[n + 1])
        key = tuple(
            np.concatenate(
                [
                    table.core_free[first:last],
                    table.memory_free[first:last],
                    table.memory_cap[first:last],
                ]
            ).tolist()
        )
        out[n] = ids.setdefault(key, len(ids))
    return out


def class_split(problem: Problem) -> list[IntArray]:
    block = problem.block(DeviceBlock)
    return [_signatures(block, problem.num_nodes)] if block is not None else []


def _patterns(
    block: DeviceBlock, types: list[int], bucket: _Bucket, counts: list[int]
) -> list[tuple[int, ...]] | None:
    """Every non-empty mix of the device types one device of `bucket` holds; None past
    MAX_PATTERNS."""
    use = []
    for t, count in zip(types, counts, strict=True):
        demand = block.demand[t]
        assert demand is not None
        memory = int(block.memory_need(t)[bucket.first_row])
        most = count if demand.devices == 1 else min(count, 1)
        use.append((demand.core, memory, most))
    out: list[tuple[int, ...]] = []

    def grow(i: int, core: int, memory: int, row: list[int]) -> bool:
        if i == len(use):
            if any(row):
                out.append(tuple(row))
            return len(out) <= MAX_PATTERNS
        need_core, need_memory, most = use[i]
        j = 0
        while j <= most and core >= j * need_core and memory >= j * need_memory:
            if not grow(i + 1, core - j * need_core, memory - j * need_memory, [*row, j]):
                return False
            j += 1
        return True

    return out if grow(0, bucket.core, bucket.memory, []) else None


def unsupported(problem: Problem) -> str | None:
    block = problem.block(DeviceBlock)
    if block is None:
        return None
    for t, demand in enumerate(block.demand):
        if demand is not None and demand.core == 0 and not block.memory_need(t).any():
            return "a GPU pod that takes no compute and no known memory of a device"
    return None


def build(problem: Problem, model: cp_model.CpModel, v: PlacementVars) -> list[Term]:
    block = problem.block(DeviceBlock)
    if block is None:
        return []
    counts = [len(p) for p in problem.type_pods]
    chosen: list[tuple[int, _Bucket, tuple[int, ...], tuple[int, ...], cp_model.IntVar]] = []
    for c, klass in enumerate(v.classes):
        types = [t for t in klass.types if block.involved(t)]
        if not types:
            continue
        buckets = _buckets(block, klass.nodes[0])
        tables = [_patterns(block, types, b, [counts[t] for t in types]) for b in buckets]
        if any(table is None for table in tables):
            for t in types:  # too many mixes to enumerate: the greedy answers
                for k in range(klass.copies):
                    model.add(v.x[t, c, k] == 0)
            continue
        for k in range(klass.copies):
            node = klass.nodes[k]
            parts: dict[int, list[cp_model.LinearExprT]] = {t: [] for t in types}
            for b, (bucket, table) in enumerate(zip(buckets, tables, strict=True)):
                size = len(bucket.local)
                used = []
                for p, row in enumerate(table or []):
                    g = model.new_int_var(0, size, f"g[{c},{k},{b},{p}]")
                    used.append(g)
                    chosen.append((node, bucket, tuple(types), row, g))
                    for i, t in enumerate(types):
                        if row[i]:
                            parts[t].append(row[i] * g)
                if used:
                    model.add(cp_model.LinearExpr.sum(used) <= size)
            for t in types:
                demand = block.demand[t]
                assert demand is not None
                model.add(cp_model.LinearExpr.sum(parts[t]) == demand.devices * v.x[t, c, k])
    v.extra[_KEY] = chosen
    return []


def assignment(
    problem: Problem,
    v: PlacementVars,
    value_of: Callable[[cp_model.IntVar], int],
    pod_node: list[IntArray],
) -> list[list[tuple[int, ...]]] | None:
    """Per type, per pod: its devices on its node, read from the pattern counts."""
    block = problem.block(DeviceBlock)
    if block is None:
        return None
    slots: dict[tuple[int, int], list[int]] = {}
    taken: dict[tuple[int, int, int], int] = {}  # (node, bucket core, memory) -> next device
    chosen = v.extra.get(_KEY, [])
    assert isinstance(chosen, list)
    for node, bucket, types, row, g in chosen:
        count = value_of(g)
        if not count:
            continue
        key = (node, bucket.core, bucket.memory)
        start = taken.get(key, 0)
        taken[key] = start + count
        for device in bucket.local[start : start + count]:
            for t, many in zip(types, row, strict=True):
                slots.setdefault((t, node), []).extend([device] * many)
    out: list[list[tuple[int, ...]]] = []
    for t, nodes in enumerate(pod_node):
        demand = block.demand[t]
        row_out: list[tuple[int, ...]] = []
        for n in nodes.tolist():
            pool = slots.get((t, n)) if n >= 0 and demand is not None else None
            if not pool or demand is None:
                row_out.append(())
                continue
            take = tuple(sorted(pool[: demand.devices]))
            del pool[: demand.devices]
            row_out.append(take)
        out.append(row_out)
    return out
