"""Room bounds: proofs that gangs cannot fit on a set of nodes, whatever else happens.

Both bounds relax every rule but node capacity and the predicates, so when one says "no"
no placement exists (the explanation's certificates rest on them):

1. **Resources together**: the gangs need, for resource r, at least Σ_h need_h × (the
   smallest request of r among h's pods); the nodes offer Σ max(free, 0) over the nodes
   eligible for any of their pods.
2. **Pods of one gang**: gang h can place at most Σ_t min(pods of t, Σ_n slots_t(n)) pods
   (slots: how many pods of type t node n takes alone); fewer than need_h is a proof.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import numpy as np

from solver.problem._fill import slots_of
from solver.problem._problem import BoolArray, IntArray, Problem
from solver.quantity import format_quantity

__all__ = [
    "PLACES_NAMED",
    "Room",
    "Shortfall",
    "best_places",
    "closure",
    "demand_text",
    "places_text",
    "room",
    "shortfall",
]

PLACES_NAMED = 3
"""How many of the best nodes or domains a certificate names."""


def best_places(
    names: tuple[str, ...] | list[str], offered: IntArray, k: int = PLACES_NAMED
) -> tuple[tuple[str, int], ...]:
    """The `k` places offering most (ties: by name), with what they offer; none that offer 0."""
    if offered.size == 0:
        return ()
    k = min(k, int(offered.size))
    top = np.argpartition(-offered, k - 1)[:k] if k < offered.size else np.arange(offered.size)
    ranked = sorted(top.tolist(), key=lambda i: (-int(offered[i]), names[i]))
    return tuple((names[i], int(offered[i])) for i in ranked if offered[i] > 0)


def places_text(resource: str | None, places: tuple[tuple[str, int], ...]) -> str:
    """`gpu-a: 4, gpu-b: 4, gpu-c: 3` (quantities in `resource`'s units; None: pods)."""
    return ", ".join(
        f"{name}: {format_quantity(resource, v) if resource else v}" for name, v in places
    )


def demand_text(problem: Problem, t: int) -> str:
    """One pod's requests: `8 nvidia.com/gpu, 32 cpu, 64Gi memory` (the positive ones)."""
    return (
        ", ".join(
            f"{format_quantity(name, int(v))} {name}"
            for name, v in zip(problem.resources, problem.type_demand[t].tolist(), strict=True)
            if v > 0 and name != "pods"
        )
        or "no resources"
    )


def closure(problem: Problem, g: int) -> list[int]:
    """Gang g and every gang it requires (`Problem.gang_requires`, transitively), sorted."""
    out, stack = {g}, [g]
    while stack:
        a = stack.pop()
        for x, h in problem.gang_requires:
            if x == a and h not in out:
                out.add(h)
                stack.append(h)
    return sorted(out)


@dataclass(frozen=True, eq=False)
class Room:
    """What gangs need and what each group of nodes (a domain) offers them, by both bounds."""

    gangs: tuple[int, ...]  # the gangs that want pods (need > 0)
    needed: IntArray  # [R] Σ_h need_h × the smallest request of r among h's pods
    offered: IntArray  # [D, R] Σ max(free, 0) over the group's usable nodes
    need: IntArray  # [H] need_h
    pods: IntArray  # [D, H] Σ_t min(pods of t, slots of t in the group)
    nodes: IntArray  # [D] usable nodes per group

    @property
    def fits(self) -> BoolArray:
        """[D] groups neither bound rules out."""
        enough: BoolArray = np.all(self.offered >= self.needed, axis=1)
        counted: BoolArray = np.all(self.pods >= self.need, axis=1)
        return enough & counted


def _sum_by(group: IntArray, values: IntArray, n: int) -> IntArray:
    out = np.zeros((n + 1, *values.shape[1:]), dtype=np.int64)
    np.add.at(out, group, values)
    return out[:n]


def room(
    problem: Problem,
    gangs: list[int],
    free: IntArray,
    group: IntArray | None = None,
    n: int = 1,
    *,
    whole: bool = False,
    only: Collection[int] | None = None,
) -> Room:
    """Both bounds for `gangs` on each of `n` groups of nodes (`group` [N]: a node's group,
    -1 = none; default: all nodes in one group). `whole`: each gang needs all its pending
    pods, not its need (Koordinator's gather places a group's pending pods all or none).
    `only`: just these pod types, every pod of them (a sub-group placed whole)."""

    def types_of(h: int) -> list[int]:
        return [t for t in problem.gang_types(h) if only is None or t in only]

    if only is None:
        needs = problem.gang_pending if whole else problem.gang_need
    else:
        needs = np.zeros(len(problem.gang_ids), dtype=np.int64)
        for h in gangs:
            needs[h] = sum(len(problem.type_pods[t]) for t in types_of(h))
    wanting = tuple(h for h in gangs if needs[h] > 0 and types_of(h))
    where = np.zeros(problem.num_nodes, dtype=np.int64) if group is None else group
    types = [t for h in wanting for t in types_of(h)]
    usable = where >= 0
    if types:
        usable &= np.any(problem.eligible[np.array(types)], axis=0)
    bins = np.where(usable, where, n)
    needed = np.zeros(len(problem.resources), dtype=np.int64)
    for h in wanting:
        if only is None:
            needed += int(needs[h]) * problem.type_demand[problem.gang_types(h)].min(axis=0)
        else:
            for t in types_of(h):
                needed += len(problem.type_pods[t]) * problem.type_demand[t]
    pods = np.zeros((n, len(wanting)), dtype=np.int64)
    for i, h in enumerate(wanting):
        for t in types_of(h):
            count = len(problem.type_pods[t])
            slots = np.minimum(slots_of(problem, t, free), count)
            pods[:, i] += np.minimum(_sum_by(bins, slots, n), count)
    return Room(
        gangs=wanting,
        needed=needed,
        offered=_sum_by(bins, np.maximum(free, 0), n),
        need=np.array([int(needs[h]) for h in wanting], dtype=np.int64),
        pods=pods,
        nodes=_sum_by(bins, np.ones(problem.num_nodes, dtype=np.int64), n),
    )


@dataclass(frozen=True, eq=False)
class Shortfall:
    """What binds: a resource over the gangs together (`resource` >= 0, `gang` -1), or the
    pods of one gang (`resource` -1); what is `needed` of it, the most the nodes offer of
    it together (`total`), what each node offers (`offered`) and the nodes usable."""

    gang: int
    resource: int
    needed: int
    total: int
    offered: IntArray  # [N] per node (0 off the nodes considered)
    nodes: int


def shortfall(
    problem: Problem, gangs: list[int], free: IntArray, nodes: BoolArray | None = None
) -> Shortfall | None:
    """The first bound (resources, then pods gang by gang) by which `gangs` cannot all get
    their `need` on `nodes` (default all) with `free` as the room; None: neither proves it."""
    group = None if nodes is None else np.where(nodes, 0, -1)
    found = room(problem, gangs, free, group)
    if not found.gangs or bool(found.fits[0]):
        return None
    where = np.ones(problem.num_nodes, dtype=bool) if nodes is None else nodes
    types = [t for h in found.gangs for t in problem.gang_types(h)]
    usable = where & np.any(problem.eligible[np.array(types)], axis=0)
    for r in np.flatnonzero(found.needed > found.offered[0]).tolist():
        per_node = np.where(usable, np.maximum(free[:, r], 0), 0)
        return Shortfall(
            -1, r, int(found.needed[r]), int(found.offered[0, r]), per_node, int(found.nodes[0])
        )
    i = int(np.flatnonzero(found.pods[0] < found.need)[0])
    h = found.gangs[i]
    per_node = np.zeros(problem.num_nodes, dtype=np.int64)
    for t in problem.gang_types(h):
        per_node += np.minimum(slots_of(problem, t, free), len(problem.type_pods[t]))
    per_node = np.where(where, per_node, 0)
    return Shortfall(
        h, -1, int(found.need[i]), int(found.pods[0, i]), per_node, int(found.nodes[0])
    )
