"""The Problem: the contract between features and engines, as integer numpy arrays.

Axes: N nodes (sorted by name), R resources, T pod types, G gangs, U units (gang groups).
A pod type is a set of pending pods with identical demand, eligibility, scores and gang,
so engines reason about counts, not names. Built once by `solver.compile`, read-only
afterwards (every array is made non-writeable); engines keep their own scratch state.

The core below is what every engine needs: capacity, demand, eligibility and static scores,
and the gang structure. Each feature adds one typed block (`blocks`, read with `block()`):
the network topology, the queue quotas, the card types, the binpack weights. A block may
contribute objective tiers (`Block.tiers` / `Block.evaluate`) and node scores that depend on
usage (`Block.node_scores`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import TypeVar

import numpy as np

from solver.arrays import BoolArray, FloatArray, IntArray
from solver.problem._minimums import Minimum
from solver.problem._rows import Rows
from solver.problem._shared import SharedRows

__all__ = ["Block", "BoolArray", "FloatArray", "IntArray", "Problem", "TierSpec", "freeze_arrays"]

B = TypeVar("B", bound="Block")
T = TypeVar("T")


@dataclass(frozen=True)
class TierSpec:
    """One objective tier: its name, bounds and direction (see `_objective.py`)."""

    name: str
    lower: int
    upper: int
    maximize: bool = True


class Block:
    """One feature's part of a Problem. Subclasses are frozen dataclasses of arrays."""

    def __post_init__(self) -> None:
        freeze_arrays(self)

    def tiers(self, problem: Problem) -> list[TierSpec]:
        """Objective tiers this feature adds (between `placed_pods` and `affinity`)."""
        return []

    def evaluate(self, problem: Problem, pod_node: list[IntArray]) -> dict[str, int]:
        """The value of each of `tiers()` for an answer."""
        return {}

    def bound(self, problem: Problem, skip: frozenset[int]) -> dict[str, int]:
        """Values of its tiers no answer can beat, tighter than their ranges (`skip`: types
        no answer can place); {} for the ranges (`solver.problem.relaxed_best`)."""
        return {}

    def node_scores(
        self, problem: Problem, t: int, used: IntArray, nodes: IntArray
    ) -> FloatArray | None:
        """Scores of one more pod of type t on `nodes` given their `used` ([len(nodes), R]),
        for scores that move as pods land (None: this block scores nothing)."""
        return None

    def score_key(self) -> Hashable | None:
        """Everything `node_scores` reads besides the Problem's capacity, resource axis and
        the type's demand, as a value: rows scored under equal keys are shared between the
        calls on a snapshot (`SharedRows`). None (the default): not shared."""
        return None


def not_enqueued(reason: str) -> str:
    """A queue's refusal as a gang's reasons say it."""
    return f"not enqueued: {reason}"


def freeze_arrays(obj: object) -> None:
    """Make every array field of `obj` (and arrays in its tuple fields) read-only: compiled
    data is shared between engines, threads and cached calls."""
    for value in vars(obj).values():
        items = value if isinstance(value, tuple) else (value,)
        if items and isinstance(items[0], str | int | tuple):
            continue  # names (node_names: 10,000s of them) and tuples of them, not arrays
        for item in items:
            if isinstance(item, np.ndarray):
                item.flags.writeable = False


@dataclass(frozen=True, eq=False)
class Problem:
    # --- nodes × resources
    resources: tuple[str, ...]  # R names; cpu in milli, others in base units
    node_names: tuple[str, ...]  # N names, sorted
    capacity: IntArray  # [N, R] allocatable
    free: IntArray  # [N, R] allocatable − requests of running pods (negative when overcommitted)

    # --- pod types
    type_demand: IntArray  # [T, R] request of one pod of the type
    type_gang: IntArray  # [T] gang index
    type_pods: tuple[tuple[str, ...], ...]  # [T] pod keys of the type, in placement order
    eligible: Rows[np.bool_]  # [T, N] node passes every non-resource filter
    ineligible_reason: Rows[np.int64]  # [T, N] index into reason_texts; 0 where eligible
    reason_texts: tuple[str, ...]  # [0] is "" (eligible)
    static_score: Rows[np.float64]  # [T, N] scores that do not depend on usage

    # --- gangs and units
    gang_ids: tuple[str, ...]  # G
    gang_need: IntArray  # [G] new placements required to satisfy the gang; 0 = pod by pod
    gang_pending: IntArray  # [G] pending pods
    gang_unit: IntArray  # [G] unit index
    gang_requires: tuple[tuple[int, int], ...]  # (g, h): g may be placed only if h is satisfied
    gang_blocked: tuple[str | None, ...]  # [G] why the gang cannot be satisfied at all
    gang_enqueue_reason: tuple[str | None, ...]  # [G] why the job may not enter its queue
    #   this cycle (also in gang_blocked); None = admitted
    gang_enqueue_ahead: tuple[tuple[str, ...], ...]  # [G] the jobs admitted ahead of it
    #   this cycle without which its queue would take it (the refusal is competition)
    unit_ids: tuple[str, ...]  # U GangGroup ids
    unit_priority: IntArray  # [U] highest priority among the unit's pending pods
    unit_order: IntArray  # [U] unit indices in the order the greedy places them
    type_rank: tuple[IntArray, ...] = ()  # [T] int [len(type_pods[t])]: each pod's 0-based
    #   rank in its unit's pod order; type_pods[t] is listed in rank order. Empty = key order.
    gang_minimums: tuple[tuple[Minimum, ...], ...] = ()  # [G] the shares of its pods each
    #   gang needs beyond gang_need (Volcano's task roles); empty = none for any gang

    notes: tuple[str, ...] = ()
    blocks: Mapping[type[Block], Block] = field(default_factory=dict)
    shared_rows: SharedRows | None = field(default=None, repr=False)  # the snapshot's
    #   memo of fill rows, shared by its calls (a cache: never part of an answer)

    def __post_init__(self) -> None:
        freeze_arrays(self)
        object.__setattr__(self, "blocks", MappingProxyType(dict(self.blocks)))
        object.__setattr__(self, "_derived", {})

    def derived(self, key: Hashable, compute: Callable[[], T]) -> T:
        """`compute()` once per Problem (per key): facts every engine and check reads of
        an immutable Problem (its tiers, their ranges); the value must not be changed."""
        cache: dict[Hashable, object] = self.__dict__["_derived"]
        if key not in cache:
            cache[key] = compute()
        return cache[key]  # type: ignore[return-value]

    def block(self, kind: type[B]) -> B | None:
        """The feature block of this type, None when the feature is not in play."""
        found = self.blocks.get(kind)
        return found if isinstance(found, kind) else None

    @property
    def num_nodes(self) -> int:
        return len(self.node_names)

    @cached_property
    def empty(self) -> BoolArray:
        """[N] nodes without any running pod's requests (placing a pod there opens them)."""
        out = self.empty_at(None)
        out.flags.writeable = False
        return out

    def empty_at(self, nodes: IntArray | None) -> BoolArray:
        """`empty` on `nodes` only (all when None): O(len(nodes)). Column by column: numpy's
        reduction over a short row axis costs 4× as much."""
        free = self.free if nodes is None else np.take(self.free, nodes, axis=0)
        capacity = self.capacity if nodes is None else np.take(self.capacity, nodes, axis=0)
        out: BoolArray = np.ones(len(free), dtype=bool)
        for r in range(free.shape[1]):
            out &= free[:, r] == capacity[:, r]
        return out

    @cached_property
    def capacity_columns(self) -> IntArray:
        """[R, N] `capacity` by resource, each column contiguous (per-resource gathers)."""
        out: IntArray = np.ascontiguousarray(self.capacity.T)
        out.flags.writeable = False
        return out

    @property
    def num_types(self) -> int:
        return len(self.type_pods)

    @property
    def num_pods(self) -> int:
        return sum(len(p) for p in self.type_pods)

    def enqueue_refusal(self, g: int) -> str | None:
        """Why gang g may not enter its queue this cycle, as its reasons say it."""
        rejected = self.gang_enqueue_reason[g]
        return None if rejected is None else not_enqueued(rejected)

    def minimums(self, g: int) -> tuple[Minimum, ...]:
        """The shares of gang g's pods it needs placed (`gang_minimums`)."""
        return self.gang_minimums[g] if self.gang_minimums else ()

    def gang_types(self, g: int) -> list[int]:
        return [int(t) for t in np.flatnonzero(self.type_gang == g)]

    def type_unit(self, t: int) -> int:
        return int(self.gang_unit[self.type_gang[t]])

    def node_scores(self, t: int, used: IntArray, nodes: IntArray | None = None) -> FloatArray:
        """Static plus usage-dependent scores of one pod of type t on `nodes` (default all),
        given their `used` rows."""
        nodes = np.arange(self.num_nodes) if nodes is None else nodes
        static = np.asarray(self.static_score[t, nodes], dtype=np.float64)
        return static + self.dynamic_scores(t, used, nodes)

    def dynamic_scores(self, t: int, used: IntArray, nodes: IntArray | None = None) -> FloatArray:
        """The usage-dependent scores alone (binpack, ...)."""
        nodes = np.arange(self.num_nodes) if nodes is None else nodes
        total = np.zeros(len(nodes))
        for block in self.blocks.values():
            extra = block.node_scores(self, t, used, nodes)
            if extra is not None:
                total = total + extra
        return total
