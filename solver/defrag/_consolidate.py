"""Room for one pending gang (`DefragGoal.gang`): moves planned by CP-SAT, proven by the
scheduler. See `_room` for the model; here the flow:

1. the gang scheduled as it is (`schedule`, the gang alone): placed → nothing to move;
2. else (not with the greedy engine) CP-SAT's fewest moves that make room for it;
3. the moves checked by `verify_moves`, applied to the snapshot, and the gang scheduled on
   the result: placed → the plan, with the scheduler's placement (verified as every
   answer is); not placed → no plan, and a note says why.
"""

from __future__ import annotations

import threading
import time

from solver.config import SchedulerConf
from solver.decision import Decision
from solver.defrag._cpsat import cpsat_choice
from solver.defrag._goal import DefragGoal
from solver.defrag._input import DefragInput, defrag_input
from solver.defrag._plan import Choice, DefragPlan, plan_of
from solver.defrag._room import GangArrivals, gang_problem, gang_workload, moved_snapshot
from solver.schedule import schedule
from solver.snapshot import Snapshot, Workload
from solver.verify import verify_moves

__all__ = ["room_plan"]


def room_plan(
    snapshot: Snapshot,
    goal: DefragGoal,
    conf: SchedulerConf,
    *,
    engine: str,
    time_limit: float,
    workers: int,
    seed: int,
    stop: threading.Event | None,
) -> DefragPlan:
    started = time.perf_counter()
    gang = str(goal.gang)
    problem, workload = gang_problem(snapshot, conf, gang)
    inp = defrag_input(snapshot, goal)
    nothing = Choice((), ())

    def answer(
        choice: Choice,
        status: str,
        placed: Decision | None,
        *notes: str,
        bound: float | None = None,
    ) -> DefragPlan:
        plan = plan_of(inp, choice, engine=engine if choice.moves else "greedy", status=status,
                       bound=bound, seconds=time.perf_counter() - started, notes=notes)  # fmt: skip
        placement = _placement(placed, workload) if placed is not None else {}
        return DefragPlan(**{**plan.__dict__, "placement": placement, "decision": placed})

    def left() -> float:
        return max(0.05, time_limit - (time.perf_counter() - started))

    now = schedule(snapshot, conf, workload=workload, engine="greedy", time_limit=left())
    if now.gang_placed(gang):
        return answer(nothing, "OPTIMAL", now, f"gang {gang} fits without moves")
    if engine == "greedy":
        return answer(nothing, "HEURISTIC", None, f"gang {gang} does not fit as the cluster is; "
                      "--engine cpsat plans the moves that make room")  # fmt: skip
    arrivals = GangArrivals(problem, gang, inp.axis)
    found = cpsat_choice(inp, nothing, time_limit=left() * 0.8, workers=workers, seed=seed,
                         stop=stop, room_for=arrivals)  # fmt: skip
    choice = found[0] if found is not None else None
    if found is None or choice is None:
        why = "proven" if found is not None and found[1] == "INFEASIBLE" else "found in time"
        return answer(nothing, "HEURISTIC", None, *arrivals.notes,
                      f"no moves of at most {goal.max_pods} pod(s) make room for gang {gang} ({why})")  # fmt: skip
    status, bound = found[1], found[2]
    checked = _checked(inp, snapshot, choice)
    if checked is not None:
        return answer(nothing, "HEURISTIC", None, f"the moves failed their check ({checked}): none")
    rows = {int(inp.pod_rows[p]): snapshot.nodes.names[n] for p, n in choice.moves}
    after = moved_snapshot(snapshot, rows)
    placed = schedule(after, conf, workload=gang_workload(after, gang), engine="auto",
                      time_limit=left(), workers=workers, seed=seed)  # fmt: skip
    if not placed.gang_placed(gang):
        reason = placed.podgroups[gang].reason if gang in placed.podgroups else "not placed"
        return answer(nothing, "HEURISTIC", None, *arrivals.notes,
                      f"after the moves gang {gang} still does not place ({reason}): none")  # fmt: skip
    return answer(choice, status, placed, *arrivals.notes, bound=bound)


def _checked(inp: DefragInput, snapshot: Snapshot, choice: Choice) -> str | None:
    names = snapshot.nodes.names
    moves = [(snapshot.running.key(int(inp.pod_rows[p])), names[int(inp.pod_node[p])], names[n])
             for p, n in choice.moves]  # fmt: skip
    problems = verify_moves(snapshot, moves, [], inp.where_keys[1:], inp.goal.max_pods)
    return problems[0] if problems else None


def _placement(decision: Decision, workload: Workload) -> dict[str, str]:
    out = {}
    for pod in workload.pods:
        found = decision.placements.get(pod.key)
        if found is not None and found.node is not None:
            out[pod.key] = found.node
    return out
