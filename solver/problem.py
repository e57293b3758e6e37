"""The Problem: the contract between policies and engines, as integer numpy arrays.

Axes: N nodes (sorted by name), R resources, T pod types, G gangs, U units (gang groups).
A pod type is a set of pending pods with identical demand, eligibility, scores and gang,
so engines reason about counts, not names. Built once by `solver.compile`, read-only
afterwards (every array is made non-writeable); engines keep their own scratch state.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

__all__ = ["Problem"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class Problem:
    # --- nodes × resources
    resources: tuple[str, ...]  # R names; cpu in milli, others in base units
    node_names: tuple[str, ...]  # N names, sorted
    capacity: IntArray  # [N, R] allocatable
    free: IntArray  # [N, R] allocatable − requests of bound pods (negative when overcommitted)

    # --- pod types
    type_demand: IntArray  # [T, R] request of one pod of the type
    type_gang: IntArray  # [T] gang index
    type_pods: tuple[tuple[str, ...], ...]  # [T] pod keys of the type, in placement order
    eligible: BoolArray  # [T, N] node passes every non-resource predicate
    ineligible_reason: IntArray  # [T, N] index into reason_texts; 0 where eligible
    reason_texts: tuple[str, ...]  # [0] is "" (eligible)
    static_score: FloatArray  # [T, N] scores that do not depend on usage (affinity plugins)

    # --- gangs and units
    gang_ids: tuple[str, ...]  # G
    gang_need: IntArray  # [G] new placements required to satisfy the gang; 0 = pod by pod
    gang_pending: IntArray  # [G] pending pods
    gang_unit: IntArray  # [G] unit index
    gang_requires: tuple[tuple[int, int], ...]  # (g, h): g may be placed only if h is satisfied
    gang_blocked: tuple[str | None, ...]  # [G] why the gang cannot be satisfied at all
    unit_ids: tuple[str, ...]  # U GangGroup ids
    unit_priority: IntArray  # [U] highest priority among the unit's pending pods
    unit_order: IntArray  # [U] unit indices in the order the greedy places them

    # --- scoring
    binpack_weight: float  # Volcano binpack.weight; 0 when the plugin is off
    binpack_resource_weight: FloatArray  # [R] per-resource binpack weight (0 = not scored)

    notes: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        for value in vars(self).values():
            if isinstance(value, np.ndarray):
                value.flags.writeable = False

    @property
    def num_nodes(self) -> int:
        return len(self.node_names)

    @property
    def num_types(self) -> int:
        return len(self.type_pods)

    @property
    def num_pods(self) -> int:
        return sum(len(p) for p in self.type_pods)

    def gang_types(self, g: int) -> list[int]:
        return [int(t) for t in np.flatnonzero(self.type_gang == g)]

    def binpack_scores(self, t: int, used: IntArray, nodes: IntArray | None = None) -> FloatArray:
        """Volcano binpack score of one pod of type `t` on `nodes` (default all), given their `used`."""
        capacity = self.capacity if nodes is None else self.capacity[nodes]
        if self.binpack_weight <= 0:
            return np.zeros(capacity.shape[0])
        demand = self.type_demand[t]
        w = np.where(demand > 0, self.binpack_resource_weight, 0.0)
        wsum = w.sum()
        if wsum <= 0:
            return np.zeros(capacity.shape[0])
        after = used + demand
        with np.errstate(divide="ignore", invalid="ignore"):
            frac = np.where((capacity > 0) & (after <= capacity), after / capacity, 0.0)
        return np.asarray((frac @ w) / wsum * 100.0 * self.binpack_weight, dtype=np.float64)
