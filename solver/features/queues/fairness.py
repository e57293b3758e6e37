"""The fairness tier `fair_share`: how well the least-served queue of a call is served.

For every leaf queue q holding pending pods of the call and every quota dimension d on
which q has a fair share f_qd > 0 (Volcano `capacity`: its deserved; `proportion`: its
deserved, water-filled for the call; KAI: its fair share, `QuotaMode.fair_dims`), with
a_qd what its running pods hold and p_qd what its pending pods of the call ask for:

    target_qd = min(f_qd, a_qd + p_qd)              (a queue asking less is served by less)
    r_qd      = min(S, ⌊S · (a_qd + placed_qd) / target_qd⌋)        S = 1000
    s_q       = max_d r_qd                           (its dominant share of its target, DRF)
    fair_share = min_q s_q                           (max-min: the least-served queue)

`fair_share` is an objective tier (more is better) after `placed_groups`, `placed_pods`
and the topology tiers, before `affinity` (`solver.problem._objective`): among answers
that place as much, the one whose least-served queue gets the largest part of its fair
share wins. It is in force when two or more queues compete in the call. CP-SAT maximises it
exactly (`cpsat.fair_share_term`); the greedy allocates in its plugin's queue order, and
its value is reported beside CP-SAT's in the Decision's tiers, so the gap shows how far
the greedy's allocation is from the fairest one CP-SAT found (or proved).
"""

from __future__ import annotations

import numpy as np

from solver.problem import IntArray, Problem
from solver.quantity import UNLIMITED

__all__ = ["FAIR_SCALE", "fair_share", "fair_targets", "placed_use", "queue_shares"]

FAIR_SCALE = 1000


def fair_targets(
    type_queues: tuple[tuple[int, ...], ...],
    demand: IntArray,
    counts: list[int],
    fair: IntArray,
    allocated: IntArray,
) -> IntArray:
    """[Q, D] target_qd at the leaf queues of the call's types (0: not counted); all 0
    unless two or more queues have a target."""
    target = np.zeros(fair.shape, dtype=np.int64)
    if fair.size == 0:
        return target
    pending = np.zeros(fair.shape, dtype=np.int64)
    leaves = set()
    for t, path in enumerate(type_queues):
        if path:
            pending[path[0]] += demand[t] * counts[t]
            leaves.add(path[0])
    for q in leaves:
        wanted = allocated[q] + pending[q]
        cap = np.where(fair[q] >= UNLIMITED, wanted, np.minimum(fair[q], wanted))
        target[q] = np.where((fair[q] > 0) & (pending[q] > 0), cap, 0)
    if int((target > 0).any(axis=1).sum()) < 2:
        target[:] = 0
    return target


def placed_use(
    problem: Problem,
    type_queues: tuple[tuple[int, ...], ...],
    demand: IntArray,
    pod_node: list[IntArray],
    rows: int,
) -> IntArray:
    """[Q, D] what an answer places at each leaf queue."""
    use = np.zeros((rows, demand.shape[1]), dtype=np.int64)
    for t, nodes in enumerate(pod_node):
        if type_queues[t]:
            use[type_queues[t][0]] += demand[t] * int((nodes >= 0).sum())
    return use


def queue_shares(target: IntArray, allocated: IntArray, placed: IntArray) -> dict[int, int]:
    """s_q = max_d r_qd of every queue row with a target."""
    shares = {}
    for q in np.flatnonzero((target > 0).any(axis=1)).tolist():
        dims = np.flatnonzero(target[q] > 0)
        held = allocated[q, dims] + placed[q, dims]
        ratios = np.minimum(FAIR_SCALE, (FAIR_SCALE * held) // target[q, dims])
        shares[q] = int(ratios.max())
    return shares


def fair_share(target: IntArray, allocated: IntArray, placed: IntArray) -> int:
    """min_q s_q over the queues with a target (S when none)."""
    return min(queue_shares(target, allocated, placed).values(), default=FAIR_SCALE)
