"""The CP-SAT engine's view of the features: constraint modules, class splits, limits.

Each module is `build(problem, model, vars) -> list[Term]` (math above each block in the
module). Core modules live beside this file; a feature's module lives in its package.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from ortools.sat.python import cp_model

from solver.engines.cpsat import affinity, capacity, packing
from solver.features.devices import cpsat as devices
from solver.features.gang import cpsat as gang
from solver.features.interpod import cpsat as interpod
from solver.features.nodegroup import cpsat as nodegroup
from solver.features.queues import cpsat as quota
from solver.features.topology import cpsat as topology
from solver.features.topology import hypernode_cpsat as hypernode
from solver.problem import BoolArray, IntArray, Problem
from solver.sat import PlacementVars, Term

__all__ = [
    "CLASS_SPLITS",
    "MODULES",
    "PER_NODE",
    "POSTPROCESS",
    "UNSUPPORTED",
    "device_assignment",
    "per_node_types",
]

Build = Callable[[Problem, cp_model.CpModel, PlacementVars], list[Term]]

MODULES: tuple[Build, ...] = (
    capacity.build,
    quota.build,
    nodegroup.build,
    devices.build,
    gang.build,
    topology.build,
    hypernode.build,
    interpod.build,
    affinity.build,
    packing.build,
)
"""In this order, as the model is built (the order of the constraints CP-SAT sees)."""

CLASS_SPLITS: tuple[Callable[[Problem], list[IntArray]], ...] = (
    topology.class_split,
    hypernode.class_split,
    quota.class_split,
    nodegroup.class_split,
    devices.class_split,
)
"""Rows node classes must not mix (a class must lie in one domain, one card type, ...)."""

PER_NODE: tuple[Callable[[Problem], BoolArray | None], ...] = (
    interpod.virtual_types,
    devices.per_node,
)
"""Pod types constrained node by node: their classes get a variable per node."""

UNSUPPORTED: tuple[Callable[[Problem], str | None], ...] = (
    topology.unsupported,
    devices.unsupported,
)
"""Rules a feature does not encode: the engine answers with the greedy instead."""

POSTPROCESS: tuple[Callable[[Problem, list[IntArray]], list[IntArray]], ...] = (
    topology.layout_ranks,
)
"""Reorder an answer's pods within their nodes (e.g. ranks next to each other)."""

device_assignment = devices.assignment
"""The GPU devices of each placed pod, read from the solution (None without devices)."""


def per_node_types(problem: Problem) -> BoolArray | None:
    """[T] the union of every PER_NODE hook's types, None when none asks."""
    rows = [row for hook in PER_NODE if (row := hook(problem)) is not None]
    if not rows:
        return None
    out: BoolArray = np.logical_or.reduce(rows)
    return out
