"""`defragment()`: the goal's plan from the greedy, then CP-SAT; checked, never worse."""

from __future__ import annotations

import threading
import time

from solver.defrag._cpsat import cpsat_choice
from solver.defrag._goal import NODE_LEVEL, DefragGoal
from solver.defrag._greedy import greedy_choice
from solver.defrag._input import DefragInput, defrag_input
from solver.defrag._plan import Choice, DefragPlan, plan_of
from solver.errors import InputError
from solver.snapshot import Snapshot
from solver.verify import verify_moves

__all__ = ["ENGINES", "defragment"]

ENGINES = ("auto", "cpsat", "greedy")


def defragment(
    snapshot: Snapshot,
    goal: DefragGoal,
    *,
    engine: str = "auto",
    time_limit: float = 10.0,
    workers: int = 0,
    seed: int = 0,
    stop: threading.Event | None = None,
) -> DefragPlan:
    """The plan for `goal`: the greedy's, or CP-SAT's when it is better (`engine`)."""
    if engine not in ENGINES:
        raise InputError(f"engine: {engine!r} is not one of {', '.join(ENGINES)}")
    started = time.perf_counter()
    inp = defrag_input(snapshot, goal)
    notes = _level_notes(inp)
    greedy = greedy_choice(inp)
    best = plan_of(inp, greedy, engine="greedy", status="HEURISTIC", bound=None,
                   seconds=time.perf_counter() - started)  # fmt: skip
    if engine != "greedy" and inp.candidate.any():
        left = time_limit - (time.perf_counter() - started)
        found = cpsat_choice(
            inp, greedy, time_limit=left, workers=workers or 2, seed=seed, stop=stop
        )
        if found is not None:
            choice, status, bound = found
            exact = plan_of(inp, choice, engine="cpsat", status=status, bound=bound,
                            seconds=time.perf_counter() - started)  # fmt: skip
            if _better(goal, inp, exact, best) or _same(exact, best):
                best = exact if _better(goal, inp, exact, best) else _bounded(best, exact)
    checked = _checked(inp, best, greedy, started)
    return _with_notes(checked, notes)


def _better(goal: DefragGoal, inp: DefragInput, a: DefragPlan, b: DefragPlan) -> bool:
    need = None if goal.count is None else max(0, goal.count - int(inp.empty.sum()))
    if need is not None and (len(a.freed) >= need) != (len(b.freed) >= need):
        return len(a.freed) >= need
    if need is None and len(a.freed) != len(b.freed):
        return len(a.freed) > len(b.freed)
    return a.pods_moved < b.pods_moved


def _same(a: DefragPlan, b: DefragPlan) -> bool:
    return len(a.freed) == len(b.freed) and a.pods_moved == b.pods_moved


def _bounded(plan: DefragPlan, exact: DefragPlan) -> DefragPlan:
    """The greedy's plan, as good as CP-SAT's: it carries CP-SAT's bound and status."""
    return DefragPlan(**{**plan.__dict__, "status": exact.status, "bound": exact.bound,
                         "gap": exact.gap, "engine": "cpsat"})  # fmt: skip


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
    nothing = plan_of(inp, Choice((), {}), engine=plan.engine, status="HEURISTIC", bound=None,
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
    return DefragPlan(**{**plan.__dict__, "notes": (*plan.notes, *notes)}) if notes else plan


def _level_notes(inp: DefragInput) -> tuple[str, ...]:
    out = []
    if inp.goal.level != NODE_LEVEL and not inp.domains:
        out.append(
            f"no node has the label {inp.goal.level!r}{' with the shape asked' if inp.goal.shape else ''}: no domain to free"
        )
    for reason, count in sorted(inp.blocked.items()):
        out.append(f"{count} domain(s) cannot be freed: {reason}")
    return tuple(out)
