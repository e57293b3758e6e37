"""Defragmentation: free whole nodes or domains by moving running pods, with a bound.

    plan = defragment(snapshot, DefragGoal(level="rack", max_pods=100))
    plan.freed, plan.moves, plan.bound, plan.gap

The greedy (emptiest domain first) always runs; `cpsat` and `auto` then solve the same
choice exactly, hinted with it, and the better plan is returned. Every plan is checked by
`solver.verify.verify_moves` — room at every step, the freed domains empty, gangs whole,
each pod on a node like its own — and a plan that fails is replaced by the greedy's (or by
no move at all), with a note; a user never gets a plan that fails the check.
"""

from solver.defrag._api import ENGINES, defragment
from solver.defrag._goal import MAX_PODS, NODE_LEVEL, DefragGoal, GoalError, goal_of
from solver.defrag._plan import DefragPlan, Move
from solver.defrag._room import moves_delta

__all__ = [
    "ENGINES",
    "MAX_PODS",
    "NODE_LEVEL",
    "DefragGoal",
    "DefragPlan",
    "GoalError",
    "Move",
    "defragment",
    "goal_of",
    "moves_delta",
]
