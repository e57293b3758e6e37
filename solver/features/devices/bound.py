"""The device-share bound: too few GPU devices have the share a gang's pods ask for.

A pod of a GPU-sharing type (one device of `core` milli and `m` MiB) lands on a single
device with that much free; a device takes at most min(core free // core, memory free // m)
such pods, and a node only for the types whose filters it passes. For a gang all of whose
types share devices this way:

    # Σ_t min(pods_t, Σ_{d on nodes eligible for t} slots_t(d)) < need   ⇒  no placement

Node room alone cannot see it (a node with 1.2 GPU free over two devices of 0.6 takes no
pod of 0.8). With preemption in the call (`evicted`), every device counts as empty. Pods
that need several devices, or gangs mixing device pods with others, are left to the other
bounds.

    gang default/infer needs 3 pods of 0.6 GPU (600 milli) each; the devices with that
    share free take 2: node-a 1, node-b 1
"""

from __future__ import annotations

import numpy as np

from solver.decision import Certificate
from solver.features.devices.block import DeviceBlock
from solver.model import WHOLE
from solver.problem import IntArray, Problem, best_places

__all__ = ["device_bound"]


def device_bound(
    problem: Problem, gangs: list[int], free: IntArray, evicted: bool
) -> Certificate | None:
    block = problem.block(DeviceBlock)
    if block is None or block.table.size == 0:
        return None
    table = block.table
    core = np.full(table.size, WHOLE, dtype=np.int64) if evicted else table.core_free
    memory = table.memory_cap if evicted else table.memory_free
    for h in gangs:
        types = problem.gang_types(h)
        need = int(problem.gang_need[h])
        demands = [block.demand[t] for t in types]
        if need <= 0 or not types or any(d is None or d.devices != 1 for d in demands):
            continue
        per_node = np.zeros(problem.num_nodes, dtype=np.int64)
        placeable = 0
        for t, d in zip(types, demands, strict=True):
            assert d is not None
            slots = core // max(d.core, 1)
            mem = block.memory_need(t)
            slots = np.minimum(slots, np.where(mem > 0, memory // np.maximum(mem, 1), slots))
            eligible = np.asarray(problem.eligible[t], dtype=bool)[table.node]
            counts = np.bincount(
                table.node, weights=np.where(eligible, slots, 0), minlength=problem.num_nodes
            ).astype(np.int64)
            per_node += counts
            placeable += min(len(problem.type_pods[t]), int(counts.sum()))
        if placeable >= need:
            continue
        d = demands[0]
        assert d is not None
        share = f"{d.core / WHOLE:g} GPU ({d.core} milli)" if d.core else "a GPU's memory"
        if d.memory_mib:
            share += f", {d.memory_mib} MiB"
        places = best_places(problem.node_names, per_node)
        said = ", ".join(f"{name} {n}" for name, n in places)
        sentence = (
            f"gang {problem.gang_ids[h]} needs {need} pods of {share} each on one device; the "
            f"devices with that share free take {placeable}" + (f": {said}" if said else "")
        )
        return Certificate(
            "devices",
            "one device share per pod",
            sentence,
            True,
            unit="pods",
            needed=need,
            offered=placeable,
            places=places,
        )
    return None
