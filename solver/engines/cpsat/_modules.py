"""The CP-SAT engine's view of the features: constraint modules, class splits, limits.

Each module is `build(problem, model, vars) -> list[Term]` (math above each block in the
module). Core modules live beside this file; a feature's module lives in its package.
"""

from __future__ import annotations

from collections.abc import Callable

from ortools.sat.python import cp_model

from solver.engines.cpsat import affinity, capacity, packing
from solver.features.gang import cpsat as gang
from solver.features.queues import cpsat as quota
from solver.features.topology import cpsat as topology
from solver.problem import IntArray, Problem
from solver.sat import PlacementVars, Term

__all__ = ["CLASS_SPLITS", "MODULES", "POSTPROCESS", "UNSUPPORTED"]

Build = Callable[[Problem, cp_model.CpModel, PlacementVars], list[Term]]

MODULES: tuple[Build, ...] = (
    capacity.build,
    quota.build,
    gang.build,
    topology.build,
    affinity.build,
    packing.build,
)
"""In this order, as the model is built (the order of the constraints CP-SAT sees)."""

CLASS_SPLITS: tuple[Callable[[Problem], list[IntArray]], ...] = (
    topology.class_split,
    quota.class_split,
)
"""Rows node classes must not mix (a class must lie in one domain, one card type, ...)."""

UNSUPPORTED: tuple[Callable[[Problem], str | None], ...] = (topology.unsupported,)
"""Rules a feature does not encode: the engine answers with the greedy instead."""

POSTPROCESS: tuple[Callable[[Problem, list[IntArray]], list[IntArray]], ...] = (
    topology.layout_ranks,
)
"""Reorder an answer's pods within their nodes (e.g. ranks next to each other)."""
