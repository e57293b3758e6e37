"""Node classes: identical nodes collapse into one class with a count (and expand back).

Two nodes are identical for the model when the same pod types may use them, they offer the
same room to those types, they are equally empty, and they score the same. What "room"
means depends on how many pod types can use the node:

* one usable type `t`: only its slot count matters, `s = min_r ⌊free_r / d_tr⌋` (capped
  at the type's pod count), so every node with the same `s` is the same. Such a class is
  **aggregated**: one integer `x[t, c] ≤ count·s` is exact, because pods of one type pack
  node by node.
* several usable types: the free vector itself matters (capped per resource at what all
  of those pods could use). The class keeps one **virtual node** per node that could ever
  be used (at most the number of pods that could go there), ordered by load to break symmetry.

Nodes where no pending pod fits at all are left out of the model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solver.problem import IntArray, Problem

__all__ = ["NodeClass", "node_classes"]


@dataclass(frozen=True)
class NodeClass:
    nodes: tuple[int, ...]  # member node indices, sorted by name
    types: tuple[int, ...]  # pod types that can use these nodes
    free: IntArray  # [R] free room of one member node (capped, see module doc)
    empty: bool  # members had no bound pods (placing here "opens" a node)
    slots: int  # aggregated classes: pods of the single type one node takes; 0 otherwise
    virtual: int  # multi-type classes: number of virtual nodes modelled

    @property
    def aggregated(self) -> bool:
        return self.slots > 0


def _slots(problem: Problem, free: IntArray) -> IntArray:
    """[T, N] pods of each type a node takes when alone (0 where ineligible)."""
    demand = problem.type_demand  # [T, R]
    with np.errstate(divide="ignore", invalid="ignore"):
        per = np.where(
            demand[:, None, :] > 0,
            np.maximum(free[None, :, :], 0) // np.maximum(demand[:, None, :], 1),
            np.iinfo(np.int64).max,
        )  # [T, N, R]
    slots = per.min(axis=2)
    counts = np.array([len(p) for p in problem.type_pods], dtype=np.int64)
    slots = np.minimum(slots, counts[:, None])
    return np.where(problem.eligible, slots, 0)


def node_classes(problem: Problem, split_by: np.ndarray | None = None) -> list[NodeClass]:
    """Classes over the nodes some pod type can use; `split_by` [T, N] adds a key column."""
    if problem.num_types == 0 or problem.num_nodes == 0:
        return []
    slots = _slots(problem, problem.free)  # [T, N]
    usable = slots > 0
    counts = np.array([len(p) for p in problem.type_pods], dtype=np.int64)
    empty = np.all(problem.free == problem.capacity, axis=1)
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
        if len(types) == 1:
            classes.append(NodeClass(tuple(members), types, free, is_empty, room[0], 0))
        else:
            reachable = int(sum(counts[t] for t in types))
            virtual = min(len(members), reachable)
            classes.append(NodeClass(tuple(members), types, free, is_empty, 0, virtual))
    return classes
