"""The CP-SAT engine's view of the features: constraint modules, class splits, limits.

Each module is `build(problem, model, vars) -> list[Term]` (math above each block in the
module). The core's modules live beside this file; a feature's module lives in its package
and is found through the registry (`Feature.cpsat`), in registry order, between the core's
capacity module and its affinity and packing modules.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from solver.engines.cpsat import affinity, capacity, packing
from solver.features import FEATURES
from solver.features._steps import Build, SolutionAssignment
from solver.problem import BoolArray, IntArray, Problem

__all__ = [
    "ASSIGNMENTS",
    "CLASS_SPLITS",
    "MODULES",
    "PER_NODE",
    "POSTPROCESS",
    "UNSUPPORTED",
    "per_node_types",
]

MODULES: tuple[Build, ...] = (
    capacity.build,
    *(m for f in FEATURES for m in f.cpsat.modules),
    affinity.build,
    packing.build,
)
"""In this order, as the model is built (the order of the constraints CP-SAT sees)."""

CLASS_SPLITS: tuple[Callable[[Problem], list[IntArray]], ...] = tuple(
    s for f in FEATURES for s in f.cpsat.class_splits
)
"""Rows node classes must not mix (a class must lie in one domain, one card type, ...)."""

PER_NODE: tuple[Callable[[Problem], BoolArray | None], ...] = tuple(
    p for f in FEATURES for p in f.cpsat.per_node
)
"""Pod types constrained node by node: their classes get a variable per node."""

UNSUPPORTED: tuple[Callable[[Problem], str | None], ...] = tuple(
    u for f in FEATURES for u in f.cpsat.unsupported
)
"""Rules a feature does not encode: the engine answers with the greedy instead."""

POSTPROCESS: tuple[Callable[[Problem, list[IntArray]], list[IntArray]], ...] = tuple(
    p for f in FEATURES for p in f.cpsat.postprocess
)
"""Reorder an answer's pods within their nodes (e.g. ranks next to each other)."""

ASSIGNMENTS: tuple[SolutionAssignment, ...] = tuple(
    f.cpsat.assignment for f in FEATURES if f.cpsat.assignment is not None
)
"""Read each placed pod's assignment on its node (its GPU devices) from a solution; the
first feature in play (not None) gives the answer's."""


def per_node_types(problem: Problem) -> BoolArray | None:
    """[T] the union of every PER_NODE hook's types, None when none asks."""
    rows = [row for hook in PER_NODE if (row := hook(problem)) is not None]
    if not rows:
        return None
    out: BoolArray = np.logical_or.reduce(rows)
    return out
