"""KAI-Scheduler's fair share: one resource of the cluster divided down the queue tree.

Ported from `pkg/scheduler/plugins/proportion/resource_division/resource_division.go`, one
resource at a time, with d_q the queue's quota (-1: unlimited), L_q its limit (-1: none),
w_q its over-quota weight, p_q its priority, Q_q its request (what its running pods use plus
what its pending pods ask for, its subtree's included) and R_q = min(L_q, Q_q) what it may
request ("requestable"); f_q, its fair share, starts at 0:

1. **Deserved first.** f_q ← min(d_q (the total when unlimited), R_q) for every queue of the
   level; remaining = total − Σ f_q. A quota is given whole even when the level's total is
   smaller (over-subscribed quotas are KAI's to allow).
2. **The surplus by priority**, highest first, while remaining > 0. Within one priority, in
   rounds: a queue is *satisfied* when Q_q ≤ f_q or L_q ≤ f_q; among the unsatisfied ones
   with w_q > 0 and something left to request (R_q − f_q > 0), the round's amount A (what
   remained when the round began) is split by

        n_q = w_q / Σ w (over queues still requesting),  s_q = max(0, n_q + k·(n_q − u_q)),

   queue q offered a_q = A · s_q / Σ s (u_q its normalised historical usage; k the plugin's
   `kValue`). A queue that asks at most a_q takes what it asks and leaves the round count as
   "another round"; otherwise it takes ⌊a_q⌋ (whole units: "for better usability") and its
   fraction a_q − ⌊a_q⌋ is remembered. Rounds repeat while a queue took less than offered
   and something remains.
3. **Remainders.** Then, priority by priority, the remembered fractions are served largest
   first (the earlier-created queue, then the name, on a tie): one unit each (less when
   less remains) until nothing remains.

Down the tree (`proportion.go` `setFairShareForQueues`): the top queues divide the cluster's
total; every queue's fair share is then divided the same way among its children.

gangplan keeps no usage history yet, so u_q = 0 for every queue: s_q is then n_q·(1 + k),
and the split is by weight alone whatever k is.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from solver.model import KAI_DEFAULT_PRIORITY, KAI_UNLIMITED

__all__ = ["Share", "divide", "divide_over_quota", "set_deserved", "set_resource_share"]


@dataclass
class Share:
    """One queue's numbers for one resource (`ResourceShare`); `fair` is the answer."""

    name: str
    deserved: float = 0.0
    limit: float = KAI_UNLIMITED
    weight: float = 0.0
    request: float = 0.0
    priority: int = KAI_DEFAULT_PRIORITY
    created: str = ""
    usage: float = 0.0
    fair: float = 0.0

    @property
    def requestable(self) -> float:
        return self.request if self.limit == KAI_UNLIMITED else min(self.limit, self.request)

    @property
    def satisfied(self) -> bool:
        return self.request <= self.fair or (
            self.limit != KAI_UNLIMITED and self.limit <= self.fair
        )

    @property
    def still_requested(self) -> float:
        wanted = self.requestable
        return 0.0 if wanted < self.fair else wanted - self.fair


def set_resource_share(total: float, k: float, shares: Sequence[Share]) -> float:
    """Steps 1-3 on one level of queues; what is left of `total`."""
    remaining = set_deserved(total, shares)
    return divide_over_quota(remaining, k, shares) if remaining > 0 else 0.0


def set_deserved(total: float, shares: Iterable[Share]) -> float:
    """Step 1 (`setDeservedResource`)."""
    remaining = total
    for q in shares:
        deserved = total if q.deserved == KAI_UNLIMITED else q.deserved
        amount = min(deserved, q.requestable)
        q.fair += amount
        remaining -= amount
    return remaining


def divide_over_quota(total: float, k: float, shares: Sequence[Share]) -> float:
    """Steps 2-3 (`divideOverQuotaResource`)."""
    priorities = sorted({q.priority for q in shares}, reverse=True)
    fractions: dict[int, dict[str, tuple[Share, float]]] = {}
    remaining = total
    for p in priorities:
        level = sorted((q for q in shares if q.priority == p), key=lambda q: q.name)
        remaining, fractions[p] = _up_to_fair_share(remaining, k, level)
    for p in priorities:
        if remaining <= 0:
            break
        if fractions.get(p):
            remaining = _remainders(remaining, fractions[p])
    return remaining


def _up_to_fair_share(
    total: float, k: float, queues: Sequence[Share]
) -> tuple[float, dict[str, tuple[Share, float]]]:
    """Step 2 for one priority (`divideUpToFairShare`): what is left, and the fractions."""
    fractions: dict[str, tuple[Share, float]] = {}
    while True:
        another = False
        this_round = total
        weights = _share_weights(queues, k)
        weight_sum = sum(weights.values())
        if weight_sum == 0:
            break
        for q in queues:
            if total == 0:
                break
            if q.satisfied:
                continue
            requested = q.still_requested
            if q.weight == 0:
                continue
            offered = this_round * (weights[q.name] / weight_sum)
            if requested <= offered:
                give = requested
                fractions.pop(q.name, None)
            else:
                whole = math.floor(offered)
                give = float(whole) if whole > 0 else 0.0
                if offered - give > 0:
                    fractions[q.name] = (q, offered - give)
            if give == 0:
                continue
            q.fair += give
            total -= give
            another = another or requested < offered
        if not another or total == 0:
            break
    return total, fractions


def _share_weights(queues: Sequence[Share], k: float) -> dict[str, float]:
    """s_q for every unsatisfied queue (`calcShareWeights`); {} when none still requests."""
    total = sum(q.weight for q in queues if q.still_requested > 0)
    if total == 0:
        return {}
    out = {}
    for q in queues:
        if not q.satisfied:
            normalised = q.weight / total
            out[q.name] = max(0.0, normalised + k * (normalised - q.usage))
    return out


def _remainders(total: float, fractions: Mapping[str, tuple[Share, float]]) -> float:
    """Step 3 for one priority (`divideRemainingResource`)."""
    ranked = sorted(fractions.values(), key=lambda e: (-e[1], e[0].created or "~", e[0].name))
    for q, _ in ranked:
        if total == 0:
            break
        give = min(1.0, total)
        q.fair += give
        total -= give
    return total


def divide(
    total: float,
    shares: Mapping[str, Share],
    children: Mapping[str, Sequence[str]],
    top: Sequence[str],
    k: float,
) -> None:
    """Down the tree: `top` divide `total`, then each queue's fair share its `children`."""
    level, budget = list(top), total
    pending: list[tuple[list[str], float]] = [(level, budget)]
    while pending:
        names, amount = pending.pop()
        if not names:
            continue
        set_resource_share(amount, k, [shares[n] for n in names])
        for n in names:
            pending.append((list(children.get(n, ())), shares[n].fair))
