"""Proofs that a gang cannot be placed, cheap enough for every call: O(nodes) numpy each.

`proof(problem, gangs, free, evicted)` — for one gang and the gangs it requires
(`solver.problem.closure`) — tries, in order:

1. **predicates**: a gang none of whose pods passes the filters of any node;
2. **room** (`solver.problem.shortfall`): a resource summed over the eligible nodes, or
   the pods the eligible nodes take one by one, short of the need;
3. each feature's bound (`ExplainSteps.bounds`, registry order): no domain of a required
   level with room, a queue's limit, pods that repel each other.

A certificate it returns is a proof: no placement of those gangs exists with `free` as the
nodes' room (with `evicted`, `free` is the allocatable, and the proof holds after any
eviction). `auto` uses it to prove the greedy's answer without a model when everything it
left out is impossible; `solver.why` to tell the user.
"""

from __future__ import annotations

import numpy as np

from solver.decision import Certificate
from solver.features import FEATURES
from solver.problem import (
    IntArray,
    Problem,
    Shortfall,
    best_places,
    closure,
    demand_text,
    fit_report,
    places_text,
    shortfall,
)
from solver.quantity import format_quantity

__all__ = ["BOUNDS", "impossible", "left_out", "placed_per_gang", "proof"]

BOUNDS = tuple(b for f in FEATURES for b in f.explain.bounds)
"""Features' bounds, asked in registry order after the core's."""


def proof(problem: Problem, gangs: list[int], free: IntArray, evicted: bool) -> Certificate | None:
    """A certificate that `gangs` cannot all reach their need, or None."""
    for h in gangs:
        types = problem.gang_types(h)
        if problem.gang_need[h] > 0 and types and not np.any(problem.eligible[np.array(types)]):
            _, counts = fit_report(problem, types[0], free)
            why = ", ".join(f"{n} {text}" for text, n in sorted(counts.items()))
            sentence = (
                f"no node passes the filters of gang {problem.gang_ids[h]}: {why}"
                if why
                else f"gang {problem.gang_ids[h]}: the cluster has no nodes"
            )
            return Certificate("predicates", "predicates", sentence, True)
    short = shortfall(problem, gangs, free)
    if short is not None:
        return _shortfall_certificate(problem, short, gangs, evicted)
    for bound in BOUNDS:
        found = bound(problem, gangs, free, evicted)
        if found is not None:
            return found
    return None


def placed_per_gang(problem: Problem, pod_node: list[IntArray]) -> IntArray:
    placed = np.zeros(len(problem.gang_ids), dtype=np.int64)
    for t, nodes in enumerate(pod_node):
        placed[problem.type_gang[t]] += int((nodes >= 0).sum())
    return placed


def left_out(problem: Problem, pod_node: list[IntArray]) -> list[int]:
    """Gangs with pending pods the answer does not satisfy."""
    placed = placed_per_gang(problem, pod_node)
    return [
        g
        for g in range(len(problem.gang_ids))
        if problem.gang_pending[g] > 0
        and (problem.gang_blocked[g] is not None or placed[g] < max(1, int(problem.gang_need[g])))
    ]


def impossible(problem: Problem, gangs: list[int], evicted: bool = False) -> set[int]:
    """Those of `gangs` a proof rules out (each with the gangs it requires), and every gang
    that requires one of them."""
    free = problem.capacity if evicted else problem.free
    out = {g for g in gangs if proof(problem, closure(problem, g), free, evicted) is not None}
    grew = True
    while grew:
        grew = False
        for g, h in problem.gang_requires:
            if h in out and g not in out:
                out.add(g)
                grew = True
    return out


def _shortfall_certificate(
    problem: Problem, short: Shortfall, gangs: list[int], evicted: bool
) -> Certificate:
    room = "allocatable (every running pod evicted)" if evicted else "free"
    places = best_places(problem.node_names, short.offered)
    nodes = f"its {short.nodes} eligible node(s)"
    if short.resource >= 0:
        name = problem.resources[short.resource]
        r = short.resource
        wanting = [
            h
            for h in gangs
            if problem.gang_need[h] > 0
            and problem.gang_types(h)
            and problem.type_demand[problem.gang_types(h), r].min() > 0
        ]
        if name == "pods":
            who = f"{_gangs_need(problem, wanting)} {short.needed} pod slots"
        elif len(wanting) == 1:
            h = wanting[0]
            per = int(problem.type_demand[problem.gang_types(h), r].min())
            who = (
                f"gang {problem.gang_ids[h]} needs {problem.gang_need[h]} × "
                f"{format_quantity(name, per)} {name} "
                f"({format_quantity(name, short.needed)} in all)"
            )
        else:
            names = ", ".join(problem.gang_ids[h] for h in wanting)
            who = f"gangs {names} need {format_quantity(name, short.needed)} {name} together"
            nodes = f"their {short.nodes} eligible node(s)"
        sentence = f"{who}; {nodes} have {format_quantity(name, short.total)} {room}"
        detail = places_text(name, places)
        kind, constraint, unit = "capacity", name, "" if name == "pods" else name
    else:
        h = short.gang
        t = problem.gang_types(h)[0]
        sentence = (
            f"gang {problem.gang_ids[h]} needs {short.needed} pods of {demand_text(problem, t)}; "
            f"{nodes} take {short.total} of them"
        )
        detail = places_text(None, places)
        kind, constraint, unit = "pods", "pods", ""
    if detail:
        sentence += f" ({detail})"
    return Certificate(
        kind,
        constraint,
        sentence,
        True,
        unit=unit,
        needed=short.needed,
        offered=short.total,
        places=places,
    )


def _gangs_need(problem: Problem, gangs: list[int]) -> str:
    if len(gangs) == 1:
        return f"gang {problem.gang_ids[gangs[0]]} needs"
    return f"gangs {', '.join(problem.gang_ids[h] for h in gangs)} need"
