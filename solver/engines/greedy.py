"""The greedy engine: gang groups one at a time, pods packed by their node scores.

Gang groups (units) are placed in `Problem.unit_order`:

1. Volcano's queue order when queues are in play (`features/queues/order.py`);
2. highest pending-pod priority first;
3. a unit with a nominated pod (`status.nominatedNodeName`, after a preemption) first: the
   room its victims freed is its own, as kube-scheduler holds it for nominated pods;
4. earliest PodGroup creationTimestamp first (missing timestamps last);
5. GangGroup id, as the stable tie-break.

A unit a feature governs is placed by that feature's step (`UNIT_PLACERS`: the network
topology's gather and Godel groups). Otherwise each gang first gets its `need` pods (its
minMember share for this cycle), gang by gang in id order and pod by pod in rank order;
then the remaining members are placed where they still fit. If some gang ends below its
need, everything placed for the unit is rolled back, that gang and every gang requiring it
are dropped, and the rest of the unit is tried again (so a group never ends half-placed).

When a feature gives a step order (`GreedySteps.order`: hierarchical DRF, whose order
moves with every pod), units are placed step by step as that order asks: a unit's first
step is its required share as above (one pod when it requires none), each later step one
more of its optional members, and the order is told what every step placed.

A `deadline` makes the greedy an anytime step, like a scheduling cycle that ends: once it
has passed, the units not yet tried stay pending with a reason saying so (the first unit
is always tried, so a stream of calls with tight deadlines still makes progress).

A pod goes to the node with the highest score (static policy scores + usage-dependent
scores such as binpack) among the nodes where it fits, lowest node name on ties; pods of
one type are placed in one vectorised step (`solver.problem.fill`), within the queue
limits of the ledger in play (the queue quotas when a QuotaBlock is present).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import numpy as np

from solver.engines._result import EngineResult
from solver.features import FEATURES
from solver.gate import GATE
from solver.problem import (
    GreedyState,
    IntArray,
    Ledger,
    NoLimits,
    Problem,
    StepOrder,
    Tracker,
    Trackers,
    UnitPlacer,
    fit_report,
    format_fit_error,
    minimum_shortfall,
)
from solver.quantity import format_quantity

__all__ = ["LEDGERS", "NOT_TRIED", "TRACKERS", "UNIT_PLACERS", "ledger_for", "solve_greedy"]

NOT_TRIED = "not tried: "
"""How the reason of a gang the cycle's time did not reach begins."""

UNIT_PLACERS: tuple[UnitPlacer, ...] = tuple(p for f in FEATURES for p in f.greedy.unit_placers)
"""Features' unit placers, tried in order; the first that places a unit wins."""

TRACKERS: tuple[Callable[[Problem], Tracker | None], ...] = tuple(
    t for f in FEATURES for t in f.greedy.trackers
)
"""Features' trackers (rules that move as the call's own pods land: inter-pod terms,
node-group resource limits, GPU devices), combined in this order; the combined tracker's
`assignment` (the devices of each pod) goes into the answer."""

ORDERS: tuple[Callable[[Problem], StepOrder | None], ...] = tuple(
    f.greedy.order for f in FEATURES if f.greedy.order is not None
)
"""Features' step orders (hierarchical DRF); the first in play applies."""

LEDGERS: tuple[Callable[[Problem], Ledger | None], ...] = tuple(
    f.greedy.ledger for f in FEATURES if f.greedy.ledger is not None
)
"""Features' ledgers (limits beyond node capacity); the first in play applies."""


def ledger_for(problem: Problem) -> Ledger:
    """The ledger of a Problem (no limits when no feature's is in play)."""
    return next((ledger for make in LEDGERS if (ledger := make(problem))), NoLimits())


def solve_greedy(
    problem: Problem, deadline: float | None = None, stop: threading.Event | None = None
) -> EngineResult:
    """Place the Problem's units in order; `deadline` (a `time.perf_counter()` instant) or
    `stop` being set (the caller has gone) ends the cycle early, leaving the units not
    reached pending (`stats["units_unreached"]`)."""
    started = time.perf_counter()
    tracker = Trackers.of(*(make(problem) for make in TRACKERS))
    state = GreedyState.start(problem, ledger_for(problem), tracker)
    unit_gangs: dict[int, list[int]] = {}
    for g in np.flatnonzero(problem.gang_pending > 0).tolist():
        unit_gangs.setdefault(int(problem.gang_unit[g]), []).append(g)
    for g, u in enumerate(problem.gang_unit.tolist()):  # gangs required by pending ones
        if u in unit_gangs and g not in unit_gangs[u]:
            unit_gangs[u].append(g)
    steps = next((o for make in ORDERS if (o := make(problem)) is not None), None)
    if steps is not None:
        unreached = _solve_steps(problem, state, unit_gangs, steps, deadline, stop)
    else:
        unreached = _solve_units(problem, state, unit_gangs, deadline, stop)
    return EngineResult(
        engine="greedy",
        status="HEURISTIC",
        pod_node=state.pod_node,
        gang_reason=state.gang_reason,
        stats={"seconds": time.perf_counter() - started, "units_unreached": unreached},
        devices=tracker.assignment(state.pod_node) if tracker is not None else None,
    )


def _solve_units(
    problem: Problem,
    state: GreedyState,
    unit_gangs: dict[int, list[int]],
    deadline: float | None,
    stop: threading.Event | None,
) -> int:
    """Each unit whole, in `Problem.unit_order`; the number of units not reached."""
    order = [u for u in problem.unit_order.tolist() if u in unit_gangs]
    unreached = 0
    for tried, u in enumerate(order):
        GATE.pause()  # a call waiting behind a long one gets its turn between units
        late = deadline is not None and time.perf_counter() > deadline
        if tried and (late or (stop is not None and stop.is_set())):
            unreached = len(order) - tried
            _not_reached(problem, order[tried:], unit_gangs, tried, state.gang_reason)
            break
        _place(problem, u, unit_gangs[u], state)
    return unreached


def _active(problem: Problem, gangs: list[int], state: GreedyState) -> list[int]:
    """The unit's gangs no compile step blocked (the blocked ones get their reason)."""
    active = []
    for g in sorted(gangs):
        if problem.gang_blocked[g] is not None:
            state.gang_reason[g] = problem.gang_blocked[g] or ""
        else:
            active.append(g)
    return active


def _solve_steps(
    problem: Problem,
    state: GreedyState,
    unit_gangs: dict[int, list[int]],
    steps: StepOrder,
    deadline: float | None,
    stop: threading.Event | None,
) -> int:
    """Units step by step in the order `steps` gives (Volcano's allocate loop: a job is
    taken until it is ready, then one more task each time its turn comes again); the
    number of units never reached."""
    active: dict[int, list[int]] = {}  # unit -> its gangs placed so far (first step done)
    failed_types: set[int] = set()
    tried = 0
    while (u := steps.next()) is not None:
        GATE.pause()
        late = deadline is not None and time.perf_counter() > deadline
        if tried and (late or (stop is not None and stop.is_set())):
            left = [v for v in problem.unit_order.tolist() if v in unit_gangs and v not in active]
            _not_reached(problem, left, unit_gangs, tried, state.gang_reason)
            return len(left)
        tried += 1
        types = [t for g in unit_gangs.get(u, []) for t in problem.gang_types(g)]
        before = [int((state.pod_node[t] >= 0).sum()) for t in types]
        if u not in active:
            active[u] = _place(problem, u, unit_gangs.get(u, []), state, extras=False)
            if active[u] and not sum(int(problem.gang_need[g]) for g in active[u]):
                _more(problem, active[u], state, failed_types, 1)
        elif active[u]:  # one more; all it has left when it is alone (its turns would follow
            #   one another), in one fill
            _more(problem, active[u], state, failed_types, None if steps.alone() else 1)
        placed = {}
        for t, n in zip(types, before, strict=True):
            if (got := int((state.pod_node[t] >= 0).sum()) - n) > 0:
                placed[t] = got
        more = any(
            _left(t, state)
            for g in active[u]
            for t in problem.gang_types(g)
            if t not in failed_types
        )
        steps.stepped(u, placed, more)
    rest = {v: gangs for v, gangs in unit_gangs.items() if v not in active}
    return _solve_units(problem, state, rest, deadline, stop) if rest else 0


def _place(
    problem: Problem, u: int, gangs: list[int], state: GreedyState, *, extras: bool = True
) -> list[int]:
    """Unit u: its placer's answer when a feature governs it, else each gang's required
    share (and its optional members with `extras`), a failing gang and the gangs requiring
    it dropped until the rest fits. The gangs placed here ([] when none, or a placer's)."""
    active = _active(problem, gangs, state)
    if active:
        undo = _Undo(problem, active, state) if any(problem.minimums(g) for g in active) else None
        if any(placer(problem, u, active, state) for placer in UNIT_PLACERS):
            if undo is not None:
                undo.unless_minimums_met()
            return []
    while active:
        failed = _place_unit(problem, active, state, extras=extras)
        if not failed:
            return active
        dropped = _with_dependents(problem, set(failed), active, state.gang_reason)
        active = [g for g in active if g not in dropped]
    return []


class _Undo:
    """A unit placer's answer taken back when it leaves a gang short of a minimum of its
    own (`Problem.gang_minimums`; the placers follow their dialect's domains, not roles)."""

    def __init__(self, problem: Problem, gangs: list[int], state: GreedyState) -> None:
        self.problem, self.gangs, self.state = problem, gangs, state
        self.free = state.free.copy()
        self.ledger = state.ledger.checkpoint()
        self.tracker = state.tracker.checkpoint()
        self.types = [t for g in gangs for t in problem.gang_types(g)]
        self.before = {t: state.pod_node[t].copy() for t in self.types}

    def unless_minimums_met(self) -> None:
        problem, state = self.problem, self.state
        chosen = {t: np.flatnonzero(state.pod_node[t] >= 0).tolist() for t in self.types}
        placed = [g for g in self.gangs if any(chosen[t] for t in problem.gang_types(g))]
        short = {g: w for g in placed if (w := minimum_shortfall(problem.minimums(g), chosen))}
        if not short:
            return
        state.free[:] = self.free
        state.ledger.restore(self.ledger)
        state.tracker.restore(self.tracker)
        for t, nodes in self.before.items():
            state.pod_node[t][:] = nodes
        h, words = next(iter(short.items()))
        for g in self.gangs:
            state.gang_reason[g] = f"gang {problem.gang_ids[g]}: " + (
                short.get(g) or f"gang group member {problem.gang_ids[h]}: {words}"
            )


def _left(t: int, state: GreedyState) -> bool:
    """Pods of type t are still unplaced."""
    return bool((state.pod_node[t] < 0).any())


def _more(
    problem: Problem,
    gangs: list[int],
    state: GreedyState,
    failed_types: set[int],
    count: int | None,
) -> None:
    """`count` more optional members of the unit (None: every one left), gang by gang and
    type by type; a type whose pod fits nowhere is not tried again (Volcano skips the tasks
    of a spec that failed)."""
    for g in gangs:
        for t in problem.gang_types(g):
            if t in failed_types:
                continue
            free = np.flatnonzero(state.pod_node[t] < 0)
            want = free.size if count is None else min(count, free.size)
            if want == 0:
                continue
            nodes, allowed, why = _fill_type(problem, t, want, state)
            state.pod_node[t][free[: nodes.size]] = nodes
            if nodes.size < want:
                failed_types.add(t)
                if nodes.size == allowed and why:
                    state.gang_reason.setdefault(g, why)
                else:
                    _, counts = fit_report(problem, t, state.free, state.tracker)
                    state.gang_reason.setdefault(g, format_fit_error(problem.num_nodes, counts))
            if count is not None:
                count -= want
                if count <= 0:
                    return


def _not_reached(
    problem: Problem,
    units: list[int],
    unit_gangs: dict[int, list[int]],
    tried: int,
    gang_reason: dict[int, str],
) -> None:
    """The reason of every gang of `units`: the cycle's time ran out before their turn."""
    total = tried + len(units)
    why = (
        f"{NOT_TRIED}the call's time limit ran out after {tried} of {total} gang group(s) "
        "in queue order; it waits for the next cycle"
    )
    for u in units:
        for g in unit_gangs[u]:
            blocked = problem.gang_blocked[g]
            gang_reason[g] = why if blocked is None else blocked


def _fill_type(
    problem: Problem, t: int, count: int, state: GreedyState
) -> tuple[IntArray, int, str | None]:
    """Up to `count` pods of type t; (nodes, how many the quotas admitted, quota reason)."""
    return state.ledger.fill(problem, t, count, state.free, state.tracker, state.memo)


def _place_unit(
    problem: Problem, gangs: list[int], state: GreedyState, *, extras: bool = True
) -> list[int]:
    """Try to place the unit (its optional members too unless not `extras`); on success
    commit and return [], else roll back and return failures."""
    saved = state.ledger.checkpoint()
    placed_terms = state.tracker.checkpoint()
    tentative: dict[int, list[int]] = {}  # type -> node per pod, in order
    placed = dict.fromkeys(gangs, 0)
    first_failure: dict[int, str] = {}

    def place(t: int, count: int) -> int:
        nodes, allowed, why = _fill_type(problem, t, count, state)
        tentative.setdefault(t, []).extend(nodes.tolist())
        if nodes.size < count:
            g = int(problem.type_gang[t])
            if g not in first_failure:
                if nodes.size == allowed and why:
                    first_failure[g] = why
                else:
                    _, counts = fit_report(problem, t, state.free, state.tracker)
                    first_failure[g] = format_fit_error(problem.num_nodes, counts)
        return int(nodes.size)

    def share(g: int, types: tuple[int, ...] | list[int], count: int) -> int:
        """Up to `count` more of gang g's pods of `types`, in order: how many were placed."""
        for t in types:
            if count <= 0:
                break
            got = place(t, min(count, len(problem.type_pods[t]) - len(tentative.get(t, ()))))
            placed[g] += got
            count -= got
        return count

    # Phase 1: each gang's required share, its roles' minimums first; phase 2: optional
    # extra members.
    short: dict[int, str] = {}
    for g in gangs:
        remaining = int(problem.gang_need[g])
        for m in problem.minimums(g):
            remaining -= m.need - share(g, m.types, m.need)
        share(g, problem.gang_types(g), remaining)
        if words := minimum_shortfall(problem.minimums(g), tentative):
            short[g] = words
    failed = [g for g in gangs if placed[g] < problem.gang_need[g] or g in short]
    if failed:
        for t, chosen in tentative.items():  # `fill` took room only where it put pods
            np.add.at(state.free, np.asarray(chosen, dtype=np.int64), problem.type_demand[t])
        state.ledger.restore(saved)
        state.tracker.restore(placed_terms)
        for g in failed:
            need = int(problem.gang_need[g])
            parts = [f"gang {problem.gang_ids[g]}: {placed[g]} of {need} required pod(s) fit"]
            parts += [short[g]] if g in short else []
            parts += _shortfall(problem, g, need, state.free)
            parts.append(first_failure.get(g, ""))
            state.gang_reason[g] = "; ".join(p for p in parts if p)
        return failed
    for g in gangs if extras else ():
        for t in problem.gang_types(g):
            done = len(tentative.get(t, []))
            rest = len(problem.type_pods[t]) - done
            if rest > 0:
                place(t, rest)
    for t, chosen in tentative.items():
        state.pod_node[t][: len(chosen)] = chosen
    for g, message in first_failure.items():
        state.gang_reason.setdefault(g, message)  # why some optional members stayed pending
    return []


def _shortfall(problem: Problem, g: int, need: int, free: IntArray) -> list[str]:
    """`needs 16 nvidia.com/gpu, eligible nodes have 11 free` for each resource that is short."""
    types = problem.gang_types(g)
    if not types:
        return []
    # The cheapest `need` pods of the gang, against all free room on nodes any of them may use.
    per_pod = np.array([problem.type_demand[t] for t in types for _ in problem.type_pods[t]])
    wanted = np.sort(per_pod, axis=0)[:need].sum(axis=0)
    eligible = np.any(problem.eligible[types], axis=0)
    offered = np.maximum(free[eligible], 0).sum(axis=0)
    return [
        f"needs {format_quantity(name, int(wanted[r]))} {name}, eligible nodes have "
        f"{format_quantity(name, int(offered[r]))} free"
        for r, name in enumerate(problem.resources)
        if wanted[r] > offered[r]
    ]


def _with_dependents(
    problem: Problem, failed: set[int], active: list[int], gang_reason: dict[int, str]
) -> set[int]:
    """The failed gangs plus, transitively, every active gang that requires one of them."""
    dropped = set(failed)
    changed = True
    while changed:
        changed = False
        for g, h in problem.gang_requires:
            if g in active and g not in dropped and h in dropped:
                dropped.add(g)
                gang_reason[g] = (
                    f"gang group member {problem.gang_ids[h]} cannot be placed: {gang_reason[h]}"
                )
                changed = True
    return dropped
