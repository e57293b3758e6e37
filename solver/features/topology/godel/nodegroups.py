"""Godel's NodeGroups and NodeCircles (`reference/godel_kueue.md` §1.3-1.5), for the greedy.

Groups in order: the deepest preferred layer first (grouped by parent order, then the
sort rules), then each higher layer, the required domains (or all nodes) last; cut-off
domains (minimum request > Σ allocatable on CPU, memory or GPU) are not groups but stay as
circles inside their ancestors. A group's circles are its leaf descendants in order (one
undivided circle when its children do not cover it). In the first group where the unit
reaches its `minMember` share, every pod takes the first circle with a feasible node and the
best-scoring node there (pods spill circle by circle); otherwise the next group is tried.
A KAI unit (`roomiest_first`) takes its circles last-first: KAI's node score ranks the
preferred sub-domains of a chosen domain by their place in the packing order, the last
(the most room) highest (`calculateNodeScores`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from solver.features.topology.godel.affinity import GODEL_METRICS, GodelPlan
from solver.features.topology.godel.block import GodelBlock
from solver.problem import IntArray, Problem

__all__ = ["GodelGroup", "godel_groups", "godel_metrics"]


@dataclass
class GodelGroup:
    name: str
    circles: list[IntArray]  # node indices per circle, in order


@dataclass
class _Elem:
    name: str
    nodes: IntArray
    cut_off: bool = False
    children: list[_Elem] = field(default_factory=list)


def godel_metrics(problem: Problem, block: GodelBlock, free: IntArray) -> tuple[IntArray, IntArray]:
    """Godel's per-node allocatable and requested (CPU, Memory, GPU), including this cycle."""
    alloc = block.godel_allocatable
    used = block.godel_requested.copy()
    for col, name in enumerate(GODEL_METRICS):
        if name in problem.resources:
            r = problem.resources.index(name)
            used[:, col] += problem.free[:, r] - free[:, r]
    return alloc, used


def _sort_and_cut(
    elems: list[_Elem],
    plan: GodelPlan,
    alloc: IntArray,
    used: IntArray,
    parent_cut: bool,
) -> list[_Elem]:
    """`sortAndMarkTopologyElems`: ties keep name order (Godel: Go map order)."""
    elems = sorted(elems, key=lambda e: e.name)
    if plan.sort_rules is None:
        return elems
    totals = {e.name: (alloc[e.nodes].sum(axis=0), used[e.nodes].sum(axis=0)) for e in elems}
    for e in elems:
        e.cut_off = parent_cut or plan.cut_off(totals[e.name][0])
    return sorted(elems, key=lambda e: plan.domain_key(*totals[e.name]))


def _split(parent: _Elem, row: IntArray, names: tuple[str, ...], pin: int) -> list[_Elem]:
    values = row[parent.nodes]
    if pin >= 0:
        nodes = parent.nodes[values == pin]
        return [_Elem(names[pin], nodes)] if nodes.size else []
    keep = values >= 0
    nodes, values = parent.nodes[keep], values[keep]
    if nodes.size == 0:
        return []
    order = np.argsort(values, kind="stable")
    nodes, values = nodes[order], values[order]
    cuts = np.flatnonzero(np.diff(values)) + 1
    return [
        _Elem(names[int(vals[0])], part)
        for part, vals in zip(np.split(nodes, cuts), np.split(values, cuts), strict=True)
    ]


def _circles(elem: _Elem) -> list[IntArray]:
    if not elem.children:
        return [elem.nodes]
    if sum(c.nodes.size for c in elem.children) < elem.nodes.size:
        return [elem.nodes]
    out: list[IntArray] = []
    for child in elem.children:
        out.extend(_circles(child))
    return out


def godel_groups(
    problem: Problem, block: GodelBlock, plan: GodelPlan, free: IntArray
) -> list[GodelGroup]:
    """Godel's `findNodeGroups` + `getNodeGroupsFromTree`: NodeGroups in scheduling order."""
    alloc, used = godel_metrics(problem, block, free)
    candidates = np.flatnonzero(plan.candidate)
    if plan.required is not None:
        root = _Elem("", candidates)
        tops = _split(root, plan.required, plan.required_names, -1)
        if not plan.required_pinned:
            tops = _sort_and_cut(tops, plan, alloc, used, False)
    else:
        tops = [_Elem("", candidates)]
    levels: list[list[_Elem]] = [tops]
    for row, names, pin in zip(
        plan.preferred, plan.preferred_names, plan.preferred_pin, strict=True
    ):
        new: list[_Elem] = []
        for parent in levels[-1]:
            children = _split(parent, row, names, pin)
            if pin < 0:
                children = _sort_and_cut(children, plan, alloc, used, parent.cut_off)
            parent.children = children
            new.extend(children)
        if not new:
            break
        levels.append(new)
    groups: list[GodelGroup] = []
    for level in reversed(levels):
        for elem in level:
            if elem.cut_off or elem.nodes.size == 0:
                continue
            circles = _circles(elem)
            if plan.roomiest_first:
                circles.reverse()
            groups.append(GodelGroup(elem.name or "all nodes", circles))
    return groups
