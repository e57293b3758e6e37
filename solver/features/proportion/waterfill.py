"""Volcano `proportion`'s deserved shares: the cluster water-filled over the queues by weight.

With `total` the cluster's allocatable and, per queue q, its weight w_q, realCapability
R_q, request Q_q (what its running pods use plus what its pending pods ask for) and
guarantee G_q, every vector taken dimension by dimension (`pods` is never a quota):

    remaining ← total;  d_q ← 0;  met ← ∅
    repeat:
        W ← Σ_{q ∉ met} w_q                                   (stop when W = 0)
        for q ∉ met:
            d_q' ← max(min(d_q + remaining · w_q / W, R_q, Q_q), G_q)
            q ∈ met  when Q_q ≤ d_q' (within 0.1)  or  d_q' = d_q (after its first round)
        remaining ← max(remaining + Σ decreases − Σ increases, 0)
    until every dimension of remaining is below 0.1, or remaining is unchanged

(`proportion.go`, `OnSessionOpen`; a dimension R_q does not name is unbounded, one Q_q
does not name is 0; 0.1 is upstream's `minResource`.) In float64 as upstream, on numpy
rows: one round costs O(queues × resources), and a round meets at least one queue or
empties a dimension, so the rounds are at most queues + resources + 1.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from solver.quantity import PODS, UNLIMITED

__all__ = ["MIN_RESOURCE", "Claim", "floor_limit", "share", "water_fill"]

MIN_RESOURCE = 0.1  # upstream's `minResource`: below it an amount is empty, within it equal


@dataclass(frozen=True)
class Claim:
    """One queue's part in the water-fill (amounts in integer units)."""

    weight: int
    real_capability: Mapping[str, int]  # UNLIMITED or missing = no limit
    request: Mapping[str, int]
    guarantee: Mapping[str, int]


def water_fill(
    total: Mapping[str, int], claims: Mapping[str, Claim]
) -> dict[str, dict[str, float]]:
    """Each queue's deserved share (see the module docstring)."""
    names = list(claims)
    dims = sorted(
        ({*total} | {r for c in claims.values() for r in (*c.request, *c.guarantee)}) - {PODS}
    )
    if not names:
        return {}

    def rows(maps: list[Mapping[str, int]], missing: float) -> np.ndarray:
        return np.array(
            [[m.get(r, missing) for r in dims] for m in maps], dtype=np.float64
        ).reshape(len(names), len(dims))

    listed = [claims[n] for n in names]
    cap = rows([c.real_capability for c in listed], math.inf)
    cap[cap >= UNLIMITED] = math.inf
    request = rows([c.request for c in listed], 0.0)
    floor = rows([c.guarantee for c in listed], 0.0)
    weight = np.array([claims[n].weight for n in names], dtype=np.float64)
    remaining = np.array([max(total.get(r, 0), 0) for r in dims], dtype=np.float64)
    deserved = np.zeros((len(names), len(dims)), dtype=np.float64)
    met = np.zeros(len(names), dtype=bool)
    for rounds in range(len(names) + len(dims) + 2):
        live = np.flatnonzero(~met)
        total_weight = weight[live].sum()
        if total_weight <= 0:
            break
        old = deserved[live]
        new = old + remaining[None, :] * (weight[live] / total_weight)[:, None]
        new = np.maximum(np.minimum(np.minimum(new, cap[live]), request[live]), floor[live])
        fits = ((request[live] < new) | (np.abs(request[live] - new) < MIN_RESOURCE)).all(axis=1)
        same = (new == old).all(axis=1) if rounds else np.zeros(live.size, dtype=bool)
        met[live[fits | same]] = True
        change = new - old
        before = remaining
        remaining = np.maximum(remaining - change.sum(axis=0), 0.0)
        deserved[live] = new
        if (remaining < MIN_RESOURCE).all() or np.array_equal(remaining, before):
            break
    return {
        name: {r: float(deserved[i, j]) for j, r in enumerate(dims)} for i, name in enumerate(names)
    }


def floor_limit(value: float) -> int:
    """The integer gate of a float share: `allocated + request ≤ value` for integers.
    Float noise (5.999999999 for 6) does not cost a unit: within 1e-6 counts as reached."""
    return math.floor(value + 1e-6)


def share(allocated: Mapping[str, int], deserved: Mapping[str, float]) -> float:
    """A queue's share: the largest allocated / deserved over the resources it deserves at
    least 0.1 of; 0 when it deserves nothing (`updateQueueAttrShare`)."""
    ratios = [allocated.get(r, 0) / d for r, d in deserved.items() if d >= MIN_RESOURCE]
    return max(ratios, default=0.0)
