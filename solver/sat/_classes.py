"""Node classes: identical nodes collapse into one class with a count (and expand back).

Two nodes are identical for the model when the same pod types may use them, they offer the
same room to those types, they are equally empty, and they score the same. What "room"
means depends on how many pod types can use the node, and picks the class's mode:

* `slots` — one usable type `t`: only its slot count `s = min_r ⌊free_r / d_tr⌋` (capped
  at the type's pod count) matters. One integer `x[t, c] ≤ K·s` is exact, because pods of
  one type pack node by node.
* `patterns` — several usable types: every way one node can hold them (a pattern: a count
  per type that fits the node's free vector) is enumerated, and `n[c, p]` counts the class's
  nodes using pattern p (`Σ_p n[c, p] ≤ K`). Exact, and free of node symmetry
  (Gilmore–Gomory style). Used while the table stays within `MAX_PATTERN_CELLS` cells
  (patterns × types): the model's size and CP-SAT's work grow with the cells, not with
  the pattern count alone — 12 one-pod types have 2^12 − 1 = 4,095 patterns of 12 cells
  each, which took CP-SAT 10 s where virtual nodes take 0.03 s.
* `virtual` — otherwise: one virtual node per node that could ever be used (at most the
  number of pods that could go there), ordered by load to break symmetry.

Nodes where no pending pod fits at all are left out of the model.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from solver.problem import IntArray, Problem, slots_of

__all__ = ["MAX_PATTERN_CELLS", "NodeClass", "node_classes"]

MAX_PATTERN_CELLS = 2048

Mode = Literal["slots", "patterns", "virtual"]


@dataclass(frozen=True)
class NodeClass:
    nodes: tuple[int, ...]  # member node indices, sorted by name
    types: tuple[int, ...]  # pod types that can use these nodes
    free: IntArray  # [R] free room of one member node (capped, see module doc)
    empty: bool  # members had no bound pods (placing here "opens" a node)
    mode: Mode
    slots: int = 0  # `slots`: pods of the single type one node takes
    virtual: int = 0  # `virtual`: number of virtual nodes modelled
    patterns: IntArray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    # `patterns`: [P, len(types)] pods of each type on one node, every non-empty fitting mix

    @property
    def aggregated(self) -> bool:
        return self.mode == "slots"

    @property
    def copies(self) -> int:
        """How many x[t, c, k] layers the class has (k = 0.. copies-1)."""
        return self.virtual if self.mode == "virtual" else 1


def _slots(problem: Problem, free: IntArray) -> IntArray:
    """[T, N] pods of each type a node takes when alone (0 where ineligible), capped at the
    type's pod count."""
    out = np.zeros((problem.num_types, problem.num_nodes), dtype=np.int64)
    for t, pods in enumerate(problem.type_pods):
        out[t] = np.minimum(slots_of(problem, t, free), len(pods))
    return out


def _patterns(
    demand: IntArray, limit: IntArray, free: IntArray, deadline: float = math.inf
) -> IntArray | None:
    """Every non-zero count vector c ≤ limit with c·demand ≤ free; None past
    MAX_PATTERN_CELLS cells (patterns × len(limit)) or past `deadline` (perf_counter
    seconds; the class then uses virtual nodes)."""
    out: list[list[int]] = []
    current = [0] * len(limit)
    most = MAX_PATTERN_CELLS // max(len(limit), 1)
    # Plain ints: this walk visits up to `most` leaves, and numpy's per-call
    # overhead on 4-element rows made it the slowest step of building a model.
    rows = demand.tolist()
    limits = limit.tolist()

    def walk(i: int, room: list[int]) -> bool:
        if i == len(limits):
            if any(current):
                out.append(list(current))
                if len(out) % 256 == 0 and time.perf_counter() > deadline:
                    return False
            return len(out) <= most
        d = rows[i]
        count = 0
        while count <= limits[i] and min(room, default=0) >= 0:
            current[i] = count
            if not walk(i + 1, room):
                return False
            count += 1
            room = [r - x for r, x in zip(room, d, strict=True)]
        current[i] = 0
        return True

    if not walk(0, free.tolist()):
        return None
    return np.array(out, dtype=np.int64).reshape(len(out), len(limit))


def node_classes(
    problem: Problem,
    split_by: np.ndarray | None = None,
    *,
    patterns: bool = True,
    deadline: float = math.inf,
    per_node: np.ndarray | None = None,
) -> list[NodeClass]:
    """Classes over the nodes some pod type can use; `split_by` [T, N] adds a key column;
    `patterns=False` models multi-type classes with virtual nodes instead, as does a
    class whose pattern enumeration is still running at `deadline` (perf_counter s);
    a class with a type of `per_node` ([T] bool: types constrained node by node, such as
    one pod per node) always has virtual nodes."""
    if problem.num_types == 0 or problem.num_nodes == 0:
        return []
    slots = _slots(problem, problem.free)  # [T, N]
    usable = slots > 0
    counts = np.array([len(p) for p in problem.type_pods], dtype=np.int64)
    empty = problem.empty
    # What all pods of all types could use of each resource: room beyond it is irrelevant.
    most = (problem.type_demand * counts[:, None]).sum(axis=0)
    # key: (types, slots or capped free vector, empty, scores [+ split column])
    groups: dict[tuple[tuple[int, ...], tuple[int, ...], bool, tuple[object, ...]], list[int]] = {}
    for n in range(problem.num_nodes):
        types = tuple(int(t) for t in np.flatnonzero(usable[:, n]))
        if not types:
            continue
        scores: tuple[object, ...] = tuple(problem.static_score[list(types), n].tolist())
        if split_by is not None:
            scores += tuple(split_by[:, n].tolist())
        if len(types) == 1:
            room: tuple[int, ...] = (int(slots[types[0], n]),)
        else:
            room = tuple(np.minimum(np.maximum(problem.free[n], 0), most).tolist())
        groups.setdefault((types, room, bool(empty[n]), scores), []).append(n)
    classes = []
    for (types, room, is_empty, _), members in groups.items():
        free = np.minimum(np.maximum(problem.free[members[0]], 0), most)
        nodes = tuple(members)
        forced = per_node is not None and bool(per_node[list(types)].any())
        if forced:
            virtual = min(len(members), int(counts[list(types)].sum()))
            classes.append(NodeClass(nodes, types, free, is_empty, "virtual", virtual=virtual))
            continue
        if len(types) == 1:
            classes.append(NodeClass(nodes, types, free, is_empty, "slots", slots=room[0]))
            continue
        idx = list(types)
        table = None
        if patterns:
            limit = slots[idx, members[0]]
            table = _patterns(problem.type_demand[idx], limit, free, deadline)
        if table is not None:
            classes.append(NodeClass(nodes, types, free, is_empty, "patterns", patterns=table))
        else:
            virtual = min(len(members), int(counts[idx].sum()))
            classes.append(NodeClass(nodes, types, free, is_empty, "virtual", virtual=virtual))
    return classes
