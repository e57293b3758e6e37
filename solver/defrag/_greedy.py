"""The baseline: emptiest domain first, each of its units packed best-fit elsewhere.

Domains are tried in one order, a single sort key:

1. fewer pods to move first (the emptiest domain),
2. then fewer GPUs in use,
3. then by name.

A domain is freed when every unit on it (gangs whole) lands on room that is free before the
plan starts, outside the domains freed so far and itself, within the budget; otherwise it
is skipped and the next is tried. Its pods land best-fit, preferring nodes of the domains
least likely to be freed (not candidates, then the costliest), so the next cheap domain is
not filled; a domain that received a pod is not freed afterwards. A gang that lies in one
value of a where-label (one node, one rack) is packed into one value of it, tried in the
order of the room they offer.
"""

from __future__ import annotations

import numpy as np

from solver.arrays import IntArray
from solver.defrag._input import DefragInput
from solver.defrag._plan import GPU, Choice
from solver.problem import BoolArray

__all__ = ["greedy_choice"]


def greedy_choice(inp: DefragInput) -> Choice:
    goal = inp.goal
    need = None if goal.count is None else max(0, goal.count - int(inp.empty.sum()))
    free = inp.free.copy()
    gpu = inp.axis.index(GPU) if GPU in inp.axis else -1
    gpus = np.zeros(inp.num_domains, dtype=np.int64)
    if gpu >= 0:
        np.add.at(gpus, inp.node_domain[inp.pod_node[inp.node_domain[inp.pod_node] >= 0]],
                  inp.pod_demand[inp.node_domain[inp.pod_node] >= 0, gpu])  # fmt: skip
    candidates = np.flatnonzero(inp.candidate)
    order = candidates[np.lexsort((np.array(inp.domains, dtype=object)[candidates].astype(str),
                                   gpus[candidates], inp.cost[candidates]))]  # fmt: skip
    avoid = _avoid_rank(inp)
    closed = np.zeros(inp.num_domains, dtype=bool)  # freed, or received a pod
    freed: list[int] = []
    moves: list[tuple[int, int]] = []
    pods_used = units_used = 0
    for d in order.tolist():
        if need is not None and len(freed) >= need:
            break
        if closed[d]:
            continue
        units = inp.domain_units[d].tolist()
        pods = inp.unit_pods(units)
        if pods_used + pods > goal.max_pods:
            continue
        if goal.max_gangs is not None and units_used + len(units) > goal.max_gangs:
            continue
        allowed = inp.target & (inp.node_domain != d)
        allowed &= ~((inp.node_domain >= 0) & closed[np.maximum(inp.node_domain, 0)])
        trial = free.copy()
        placed: dict[int, int] = {}
        big_first = sorted(units, key=lambda u: -int(inp.pod_demand[inp.units[u].pods].sum()))
        if all(_place_unit(inp, u, trial, allowed, avoid, placed) for u in big_first):
            free = trial
            moves += placed.items()
            freed.append(d)
            closed[d] = True
            landed = inp.node_domain[list(placed.values())]
            closed[landed[landed >= 0]] = True
            pods_used += pods
            units_used += len(units)
    return Choice(tuple(freed), tuple(moves))


def _avoid_rank(inp: DefragInput) -> IntArray:
    """[N] lower is a better target: nodes outside any candidate domain first, then the
    candidate domains costliest first."""
    rank = np.zeros(len(inp.node_domain), dtype=np.int64)
    dom = inp.node_domain
    inside = dom >= 0
    cand = np.zeros(len(dom), dtype=bool)
    cand[inside] = inp.candidate[dom[inside]]
    rank[cand] = 1 + (int(inp.cost.max(initial=0)) - inp.cost[dom[cand]])
    return rank


def _place_unit(
    inp: DefragInput,
    u: int,
    free: IntArray,
    allowed: BoolArray,
    avoid: IntArray,
    out: dict[int, int],
) -> bool:
    unit = inp.units[u]
    pods = unit.pods
    ok = allowed
    if not unit.compact:
        return all(_best_fit(inp, int(p), free, ok, avoid, out) for p in pods.tolist())
    groups = np.stack([inp.where[k] for k in unit.compact], axis=1)
    ok &= (groups >= 0).all(axis=1)
    keys, group_of = np.unique(groups[ok], axis=0, return_inverse=True)
    nodes = np.flatnonzero(ok)
    room = np.bincount(
        group_of.ravel(), weights=free[nodes].clip(min=0).sum(axis=1), minlength=len(keys)
    )
    for g in np.argsort(-room, kind="stable").tolist():
        inside = np.zeros(len(allowed), dtype=bool)
        inside[nodes[group_of.ravel() == g]] = True
        trial, placed = free.copy(), dict(out)
        if all(_best_fit(inp, int(p), trial, inside, avoid, placed) for p in pods.tolist()):
            free[:] = trial
            out.update(placed)
            return True
    return False


def _best_fit(
    inp: DefragInput, p: int, free: IntArray, ok: BoolArray, avoid: IntArray, out: dict[int, int]
) -> bool:
    need = inp.pod_demand[p]
    fits = ok & (inp.node_class == inp.node_class[inp.pod_node[p]]) & (free >= need).all(axis=1)
    nodes = np.flatnonzero(fits)
    if nodes.size == 0:
        return False
    scale = np.maximum(inp.capacity[nodes], 1)
    left = ((free[nodes] - need) / scale).sum(axis=1)
    best = int(nodes[np.lexsort((left, avoid[nodes]))[0]])
    free[best] -= need
    out[p] = best
    return True
