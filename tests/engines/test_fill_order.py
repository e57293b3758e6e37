"""The two shortcuts the greedy fill and the CP-SAT node classes take, against the long
way round: selecting the best nodes by partition orders them exactly as a full sort would
(as far as a fill reads), and pattern enumeration stops at its deadline."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from solver.problem._fill import _best_first
from solver.sat._classes import _patterns


@given(
    st.lists(st.sampled_from([0.0, 1.5, 2.0, 7.25, 100.0]), min_size=1, max_size=60),
    st.integers(1, 80),
    st.randoms(use_true_random=False),
)
def test_best_first_orders_the_first_count_like_a_full_sort(
    scores: list[float], count: int, rng: object
) -> None:
    score = np.array(scores)
    candidates = np.array(sorted(rng.sample(range(1000), len(scores))))  # type: ignore[attr-defined]
    full = np.lexsort((candidates, -score))
    fast = _best_first(score, candidates, count)
    # Each candidate holds at least one pod: a fill reads at most `count` of them.
    reach = min(count, len(scores))
    assert fast.size >= reach
    assert candidates[fast[:reach]].tolist() == candidates[full[:reach]].tolist()


def test_pattern_enumeration_gives_up_at_its_deadline() -> None:
    demand = np.ones((2, 1), dtype=np.int64)
    limit = np.array([31, 31], dtype=np.int64)  # 32^2 - 1 = 1,023 patterns, 2,046 cells
    free = np.array([62], dtype=np.int64)
    patterns = _patterns(demand, limit, free)
    assert patterns is not None and len(patterns) == 32**2 - 1
    assert _patterns(demand, limit, free, deadline=0.0) is None


def test_pattern_enumeration_stops_at_its_cell_budget() -> None:
    """12 one-pod types: 4,095 patterns × 12 = 49,140 cells, past the budget."""
    demand = np.ones((12, 1), dtype=np.int64)
    limit = np.ones(12, dtype=np.int64)
    assert _patterns(demand, limit, np.array([12], dtype=np.int64)) is None
    assert _patterns(demand[:7], limit[:7], np.array([7], dtype=np.int64)) is not None
