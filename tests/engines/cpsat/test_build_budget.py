"""How much of a call's budget CP-SAT's model building may use before the greedy answer
goes out instead: half of a short budget (the step that crosses the line must still end in
time), all but a second of a long one."""

from __future__ import annotations

import pytest

from solver.engines.cpsat._solve import _MARGIN, _build_deadline


@pytest.mark.parametrize(
    ("time_limit", "building"),
    [(0.1, 0.05), (0.5, 0.25), (2.0, 1.0), (3.0, 2.0), (10.0, 9.0)],
)
def test_building_gets_half_a_short_budget_and_all_but_a_second_of_a_long_one(
    time_limit: float, building: float
) -> None:
    assert _build_deadline(100.0, time_limit) == pytest.approx(100.0 + building - _MARGIN)
