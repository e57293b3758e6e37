"""The Problem every engine solves: a core of arrays plus one typed block per feature.

Problem, Block, Rows       the contract (`_problem.py`, `_rows.py`)
evaluate, tier_specs, ...  the objective both engines are scored by (`_objective.py`)
fill, fit_report, ...      the greedy primitives features and engines share (`_fill.py`)
shortfall                  room bounds that prove gangs cannot fit (`_room.py`)
Minimum                    a share of a gang's pods it needs (`_minimums.py`)
GreedyState, Ledger        the greedy engine's working state, as features see it
"""

from solver.problem._fill import NoLimits, fill, fit_report, format_fit_error
from solver.problem._greedy import GreedyState, Ledger, StepOrder, Tracker, Trackers, UnitPlacer
from solver.problem._memo import FillMemo, SharedRows, slots_of
from solver.problem._minimums import Minimum, minimum_shortfall
from solver.problem._objective import (
    compare_tiers,
    evaluate,
    proven_optimal,
    relaxed_best,
    score_units,
    tier_specs,
    tier_weights,
    unit_weights,
)
from solver.problem._problem import (
    Block,
    BoolArray,
    FloatArray,
    IntArray,
    Problem,
    TierSpec,
    freeze_arrays,
    not_enqueued,
)
from solver.problem._room import (
    PLACES_NAMED,
    Room,
    Shortfall,
    best_places,
    closure,
    demand_text,
    places_text,
    room,
    shortfall,
)
from solver.problem._rows import Rows
from solver.problem._shared import SHARED_BYTES_PER_NODE

__all__ = [
    "PLACES_NAMED",
    "SHARED_BYTES_PER_NODE",
    "Block",
    "BoolArray",
    "FillMemo",
    "FloatArray",
    "GreedyState",
    "IntArray",
    "Ledger",
    "Minimum",
    "NoLimits",
    "Problem",
    "Room",
    "Rows",
    "SharedRows",
    "Shortfall",
    "StepOrder",
    "TierSpec",
    "Tracker",
    "Trackers",
    "UnitPlacer",
    "best_places",
    "closure",
    "compare_tiers",
    "demand_text",
    "evaluate",
    "fill",
    "fit_report",
    "format_fit_error",
    "freeze_arrays",
    "minimum_shortfall",
    "not_enqueued",
    "places_text",
    "proven_optimal",
    "relaxed_best",
    "room",
    "score_units",
    "shortfall",
    "slots_of",
    "tier_specs",
    "tier_weights",
    "unit_weights",
]
