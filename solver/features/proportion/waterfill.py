"""Volcano `proportion`'s deserved shares: the cluster water-filled over the queues by weight.

With `total` the cluster's allocatable and, per queue q, its weight w_q, realCapability
R_q, request Q_q (what its running pods use plus what its pending pods ask for) and
guarantee G_q, every vector taken dimension by dimension (`pods` is never a quota):

    remaining ← total;  d_q ← 0;  met ← ∅
    repeat:
        W ← Σ_{q ∉ met} w_q                                   (stop when W = 0)
        for q ∉ met:
            d_q' ← max(min(d_q + remaining · w_q / W, R_q, Q_q), G_q)
            q ∈ met  when Q_q ≤ d_q'  or  d_q' = d_q (after its first round)
        remaining ← max(remaining + Σ decreases − Σ increases, 0)
    until remaining is empty or unchanged

(`proportion.go`, `OnSessionOpen`; a dimension R_q does not name is unbounded, one Q_q
does not name is 0.) Upstream computes in float64; here every amount is an exact
`Fraction` of gangplan's integer units, so a share of 4 cpus over 3 queues is 4/3 each and
no rounding decides a gate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from solver.quantity import PODS, UNLIMITED

__all__ = ["Claim", "share", "water_fill"]

MAX_ROUNDS = 1_000
"""A round meets at least one queue or empties a dimension, so Q queues over D dimensions
settle in at most Q + D + 1 rounds; the bound only guards against a bug looping forever."""


@dataclass(frozen=True)
class Claim:
    """One queue's part in the water-fill (amounts in integer units)."""

    weight: int
    real_capability: Mapping[str, int]  # UNLIMITED or missing = no limit
    request: Mapping[str, int]
    guarantee: Mapping[str, int]


def water_fill(
    total: Mapping[str, int], claims: Mapping[str, Claim]
) -> dict[str, dict[str, Fraction]]:
    """Each queue's deserved share (see the module docstring)."""
    dims = sorted(
        ({*total} | {r for c in claims.values() for r in (*c.request, *c.guarantee)}) - {PODS}
    )
    remaining = {r: Fraction(max(total.get(r, 0), 0)) for r in dims}
    deserved = {q: dict.fromkeys(dims, Fraction(0)) for q in claims}
    met: set[str] = set()
    rounds = 0
    while rounds < MAX_ROUNDS:
        weight = sum(c.weight for q, c in claims.items() if q not in met)
        if weight <= 0:
            break
        before = dict(remaining)
        up = dict.fromkeys(dims, Fraction(0))
        down = dict.fromkeys(dims, Fraction(0))
        for q, claim in claims.items():
            if q in met:
                continue
            old = deserved[q]
            new = {
                r: _bounded(old[r] + remaining[r] * claim.weight / weight, r, claim) for r in dims
            }
            if all(claim.request.get(r, 0) <= new[r] for r in dims) or (rounds and new == old):
                met.add(q)
            for r in dims:
                if new[r] > old[r]:
                    up[r] += new[r] - old[r]
                else:
                    down[r] += old[r] - new[r]
            deserved[q] = new
        remaining = {r: max(remaining[r] + down[r] - up[r], Fraction(0)) for r in dims}
        rounds += 1
        if all(v <= 0 for v in remaining.values()) or remaining == before:
            break
    return deserved


def _bounded(value: Fraction, r: str, claim: Claim) -> Fraction:
    cap = claim.real_capability.get(r, UNLIMITED)
    if cap < UNLIMITED:
        value = min(value, Fraction(cap))
    value = min(value, Fraction(claim.request.get(r, 0)))
    return max(value, Fraction(claim.guarantee.get(r, 0)))


def share(allocated: Mapping[str, int], deserved: Mapping[str, Fraction]) -> Fraction:
    """A queue's share: the largest allocated / deserved over the dimensions it deserves
    anything of; 0 when it deserves nothing (`updateQueueAttrShare`)."""
    ratios = [Fraction(allocated.get(r, 0)) / d for r, d in deserved.items() if d > 0]
    return max(ratios, default=Fraction(0))
