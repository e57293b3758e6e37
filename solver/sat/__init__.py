"""The CP-SAT vocabulary shared by the engine and the features' constraint modules.

    PlacementVars   x[t, c, k]: pods of type t on node class c (virtual node k), and friends
    NodeClass       identical nodes collapsed into a class with a count
    Term            one named objective tier's expression; `combine` weighs them

A constraint module (`solver/engines/cpsat/*.py` for the core, `solver/features/*/cpsat.py`
for a feature) is `build(problem, model, vars) -> list[Term]`, with the math of each block
in one comment line above it.
"""

from solver.sat._classes import MAX_PATTERN_CELLS, NodeClass, node_classes
from solver.sat._stop import stop_on
from solver.sat._terms import SAFE_WEIGHT, Term, combine, ordered
from solver.sat._vars import PlacementVars

__all__ = [
    "MAX_PATTERN_CELLS",
    "SAFE_WEIGHT",
    "NodeClass",
    "PlacementVars",
    "Term",
    "combine",
    "node_classes",
    "ordered",
    "stop_on",
]
