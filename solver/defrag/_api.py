"""`defragment()`: the goal's plan from the greedy, then CP-SAT; checked, never worse."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace

from solver.config import SchedulerConf, load_conf
from solver.defrag._consolidate import room_plan
from solver.defrag._cpsat import cpsat_choice
from solver.defrag._goal import NODE_LEVEL, DefragGoal
from solver.defrag._greedy import greedy_choice
from solver.defrag._input import DefragInput, defrag_input
from solver.defrag._plan import Choice, DefragPlan, gap_of, plan_of
from solver.errors import InputError
from solver.snapshot import Snapshot
from solver.verify import verify_moves

__all__ = ["ENGINES", "defragment"]

ENGINES = ("auto", "cpsat", "greedy")
_MIN_CPSAT = 0.05  # s left after the greedy: less, and its plan is the answer


def defragment(
    snapshot: Snapshot,
    goal: DefragGoal,
    *,
    engine: str = "auto",
    time_limit: float = 10.0,
    workers: int = 0,
    seed: int = 0,
    stop: threading.Event | None = None,
    conf: SchedulerConf | None = None,
) -> DefragPlan:
    """The plan for `goal`: the greedy's, or CP-SAT's when it is better (`engine`). A
    count no plan reaches (proven) gets the plan that frees the most, with a note. With
    `goal.gang`: room for that pending gang (`_consolidate`; `conf` is the scheduler's)."""
    if engine not in ENGINES:
        raise InputError(f"engine: {engine!r} is not one of {', '.join(ENGINES)}")
    if goal.gang is not None:
        return room_plan(snapshot, goal, conf or load_conf(None), engine=engine,
                         time_limit=time_limit, workers=workers or 2, seed=seed, stop=stop)  # fmt: skip
    started = time.perf_counter()
    deadline = started + time_limit
    solve = _Solve(snapshot, engine, deadline, workers or 2, seed, stop)
    inp, plan, greedy, reached = solve(goal)
    notes = _level_notes(inp)
    if not reached and engine != "greedy":
        inp, plan, greedy, _ = solve(replace(goal, count=None))
        notes += (f"no plan frees {goal.count} domain(s) within the budget (proven): "
                  "the plan frees as many as it can",)  # fmt: skip
    elif goal.count is not None and len(plan.freed) + len(plan.already_free) < goal.count:
        found = len(plan.freed) + len(plan.already_free)
        more = ("--engine cpsat proves whether more can be" if engine == "greedy" else
                "CP-SAT found no plan for more in its time")  # fmt: skip
        notes += (f"the plan frees {found} of the {goal.count} domain(s) asked; {more}",)
    plan = replace(plan, solve_seconds=round(time.perf_counter() - started, 4))
    return _with_notes(_checked(inp, plan, greedy, started), notes)


@dataclass(frozen=True)
class _Solve:
    snapshot: Snapshot
    engine: str
    deadline: float
    workers: int
    seed: int
    stop: threading.Event | None

    def __call__(self, goal: DefragGoal) -> tuple[DefragInput, DefragPlan, Choice, bool]:
        """(input, best plan, the greedy's choice, False when CP-SAT proved the count goal
        out of reach)."""
        inp = defrag_input(self.snapshot, goal)
        greedy = greedy_choice(inp)
        best = plan_of(inp, greedy, engine="greedy", status="HEURISTIC", bound=None, seconds=0)
        left = self.deadline - time.perf_counter()
        if self.engine == "greedy" or not inp.candidate.any() or left < _MIN_CPSAT:
            return inp, best, greedy, True
        found = cpsat_choice(inp, greedy, time_limit=left, workers=self.workers, seed=self.seed,
                             stop=self.stop)  # fmt: skip
        if found is None:
            return inp, best, greedy, True
        choice, status, bound = found
        if status == "UNORDERED":  # its moves wait on each other: the greedy's, noted
            note = "CP-SAT's moves had no order with room at every step: the greedy's plan"
            return inp, replace(best, notes=(note,)), greedy, True
        if choice is None:
            return inp, best, greedy, goal.count is None
        exact = plan_of(inp, choice, engine="cpsat", status=status, bound=bound, seconds=0)
        return inp, exact if _better(inp, exact, best) else _bounded(best, exact), greedy, True


def _better(inp: DefragInput, a: DefragPlan, b: DefragPlan) -> bool:
    goal = inp.goal
    need = None if goal.count is None else max(0, goal.count - int(inp.empty.sum()))
    if need is not None and (len(a.freed) >= need) != (len(b.freed) >= need):
        return len(a.freed) >= need
    if need is None and len(a.freed) != len(b.freed):
        return len(a.freed) > len(b.freed)
    return a.pods_moved < b.pods_moved


def _bounded(plan: DefragPlan, exact: DefragPlan) -> DefragPlan:
    """The greedy's plan, at least as good as CP-SAT's: it carries CP-SAT's bound (its gap
    recomputed for it) and status."""
    gap = gap_of(plan.goal, len(plan.freed), plan.pods_moved, exact.bound)
    return replace(plan, status=exact.status, bound=exact.bound, gap=gap, engine="cpsat")


def _checked(inp: DefragInput, plan: DefragPlan, greedy: Choice, started: float) -> DefragPlan:
    problems = _verify(inp, plan)
    if not problems:
        return plan
    note = f"the {plan.engine} plan failed its check ({problems[0]})"
    if plan.engine != "greedy":
        fallback = plan_of(inp, greedy, engine="greedy", status="HEURISTIC", bound=None,
                           seconds=time.perf_counter() - started)  # fmt: skip
        if not _verify(inp, fallback):
            return _with_notes(fallback, (f"{note}: the greedy's plan instead",))
    nothing = plan_of(inp, Choice((), ()), engine=plan.engine, status="HEURISTIC", bound=None,
                      seconds=time.perf_counter() - started)  # fmt: skip
    return _with_notes(nothing, (f"{note}: nothing is moved",))


def _verify(inp: DefragInput, plan: DefragPlan) -> list[str]:
    freed = set(plan.freed)
    names = inp.snapshot.nodes.names
    nodes = [names[n] for n in range(len(names)) if inp.node_domain[n] >= 0
             and inp.domains[int(inp.node_domain[n])] in freed]  # fmt: skip
    moves = [(m.pod, m.source, m.target) for m in plan.moves]
    return verify_moves(inp.snapshot, moves, nodes, inp.where_keys[1:], inp.goal.max_pods)


def _with_notes(plan: DefragPlan, notes: tuple[str, ...]) -> DefragPlan:
    return replace(plan, notes=(*plan.notes, *notes)) if notes else plan


def _level_notes(inp: DefragInput) -> tuple[str, ...]:
    out = []
    if inp.goal.level != NODE_LEVEL and not inp.domains:
        out.append(
            f"no node has the label {inp.goal.level!r}{' with the shape asked' if inp.goal.shape else ''}: no domain to free"
        )
    for reason, count in sorted(inp.blocked.items()):
        out.append(f"{count} domain(s) cannot be freed: {reason}")
    return tuple(out)
