"""Certificates: why each gang left out of an answer is not placed, proven where it can be.

For every gang the answer leaves unsatisfied, the first of these that holds is its
certificate (`solver.decision.CERTIFICATE_KINDS`), whichever engine answered:

1. **Its own rule**: not admitted to its queue, or a feature's rule that rules the gang out
   this cycle (`Problem.gang_blocked`), or the call's time ran out before its turn. A job
   its queue would have taken at the start of the cycle, refused only because jobs
   admitted ahead of it took the room (`Problem.gang_enqueue_ahead`), goes on to the
   bounds, and without a proof there is competition at enqueue, naming them.
2. **Bounds** on the room before this cycle, O(nodes) numpy each
   (`solver.problem.room`): no node passes its filters; a resource summed over its
   eligible nodes is short; its eligible nodes take fewer of its pods than it needs; then
   each feature's bound (`ExplainSteps.bounds`: no domain of a MustGather level has room,
   its queue's limit is too small). With preemption in the call the room is the nodes'
   allocatable (every running pod evicted), so a proof holds after any eviction.
3. **Competition**: the greedy places the gang (with the gangs it requires) alone on the
   cluster as it stands: it fits, and the gangs placed ahead of it on its nodes took the
   room (named, in queue order).
4. **The explanation model** (`solver.why.core`): CP-SAT with every constraint family
   behind an assumption proves the gang infeasible and names the families of a core.
5. Otherwise nothing is proven and the engine's counted reason stands.

Steps 3 and 4 share `extra_seconds` per call (and stop at the call's deadline); the bounds
run for every gang left out.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from solver.decision import Certificate
from solver.engines.bounds import left_out, placed_per_gang, proof
from solver.engines.greedy import NOT_TRIED, solve_greedy
from solver.problem import (
    IntArray,
    Problem,
    closure,
    fit_report,
    format_fit_error,
)
from solver.why.core import explain_gang

__all__ = ["WHY_SECONDS", "Certified", "certify"]

WHY_SECONDS = 0.25
"""What a call spends at most on competition checks and the explanation model together."""


@dataclass(frozen=True)
class Certified:
    """A gang's certificate and the reason a person reads: the certificate's sentence,
    then the engine's counted reason (marked `when its turn came:` when gangs placed ahead
    changed the room), or the kube-style breakdown on the certificate's own room."""

    certificate: Certificate
    reason: str


def certify(
    problem: Problem,
    pod_node: list[IntArray],
    counted: dict[int, str],
    *,
    preempted: bool = False,
    deadline: float | None = None,
    extra_seconds: float = WHY_SECONDS,
) -> dict[int, Certified]:
    """A certificate for each gang left out; `counted` holds the
    engine's counted reasons (in queue order), `preempted` says victims were in play."""
    now = time.perf_counter()
    end = now + 3600 if deadline is None else deadline
    extra_end = min(end, now + extra_seconds)
    free = problem.capacity if preempted else problem.free
    placed = placed_per_gang(problem, pod_node)
    out: dict[int, Certified] = {}
    for g in left_out(problem, pod_node):
        said = counted.get(g, "")
        ahead = int(placed.sum()) > int(placed[closure(problem, g)].sum())
        found = _own_rule(problem, g, said)
        if found is None and time.perf_counter() < end:
            found = _bound(problem, g, free, preempted, said, ahead)
        if found is None:
            found = _admitted_ahead(problem, g, time.perf_counter() < extra_end)
        if found is None and time.perf_counter() < extra_end:
            found = _competition(problem, g, pod_node, counted.get(g, ""))
        if found is None and not preempted and (left := extra_end - time.perf_counter()) > 0.02:
            words = explain_gang(problem, g, left)
            if words:
                cert = Certificate("rules", "", words, True)
                found = _proven(problem, g, cert, free, said, ahead)
        if found is None:
            text = counted.get(g) or "not placed"
            found = Certified(Certificate("unproven", "", text, False), text)
        out[g] = found
    return out


def _own_rule(problem: Problem, g: int, counted: str) -> Certified | None:
    refused = problem.enqueue_refusal(g)
    if refused is not None and not problem.gang_enqueue_ahead[g]:
        return Certified(Certificate("blocked", "enqueue", refused, True), refused)
    blocked = problem.gang_blocked[g]
    if blocked is not None and blocked != refused:  # the refusal alone: `_admitted_ahead`
        return Certified(Certificate("blocked", "gang", blocked or "not placed", True), blocked)
    if counted.startswith(NOT_TRIED):
        return Certified(Certificate("time", "time limit", counted, False), counted)
    return None


def _admitted_ahead(problem: Problem, g: int, checking: bool) -> Certified | None:
    """Refused at enqueue only because jobs admitted ahead of it this cycle took its queue's
    room (at the start of the cycle the queue would have taken it), and no bound on the room
    proves it could not run: competition, naming them, when the greedy places it alone
    once admitted (checked while the call's `WHY_SECONDS` last, `checking`); else the same
    words, unproven."""
    refused = problem.enqueue_refusal(g)
    named = problem.gang_enqueue_ahead[g]
    if refused is None or not named:
        return None
    listed = ", ".join(named[:3]) + (" and others" if len(named) > 3 else "")
    sentence = (
        f"{refused}; at the start of the cycle its queue had room: it went to {listed}, "
        "admitted ahead of it"
    )
    proven = checking and _runs_alone(problem, g, admitted=True)
    kind = "competition" if proven else "unproven"
    return Certified(Certificate(kind, "enqueue", sentence, proven, rivals=named), sentence)


def _bound(
    problem: Problem, g: int, free: IntArray, preempted: bool, counted: str, ahead: bool
) -> Certified | None:
    found = proof(problem, closure(problem, g), free, preempted)
    if found is None:
        return None
    if found.kind == "predicates":  # its sentence counts the nodes already
        return Certified(found, found.sentence)
    return _proven(problem, g, found, free, counted, ahead)


COUNTED_KINDS = ("capacity", "pods", "rules")
"""Kinds about nodes' room: without the engine's counted reason, the kube-style per-node
breakdown follows them."""
AT_ITS_TURN = "when its turn came: "
"""Introduces the engine's counted reason when gangs placed ahead of it changed the room."""


def _proven(
    problem: Problem, g: int, found: Certificate, free: IntArray, counted: str, ahead: bool
) -> Certified:
    """The certificate, then the engine's counted reason (in the dialect's own words: the
    upstream message), marked as counted at its turn when gangs placed ahead changed the
    room; without one, for the kinds about nodes' room, the kube-style breakdown of its
    first pod on the certificate's own room."""
    if counted:
        return Certified(found, f"{found.sentence}; {AT_ITS_TURN if ahead else ''}{counted}")
    types = problem.gang_types(g)
    if not types or found.kind not in COUNTED_KINDS:
        return Certified(found, found.sentence)
    fits, counts = fit_report(problem, types[0], free)
    if not fits.any():
        breakdown = format_fit_error(problem.num_nodes, counts)
    else:
        others = ", ".join(f"{n} {text}" for text, n in sorted(counts.items()))
        breakdown = f"{int(fits.sum())}/{problem.num_nodes} nodes have room for one of its pods" + (
            f"; the others: {others}" if others else ""
        )
    return Certified(found, f"{found.sentence}; {breakdown}")


def _runs_alone(problem: Problem, g: int, admitted: bool = False) -> bool:
    """The greedy places gang g with the gangs it requires, alone on the cluster as it
    stands; `admitted`: as if its queue had taken it (its enqueue refusal lifted)."""
    gangs = closure(problem, g)
    units = {int(problem.gang_unit[h]) for h in gangs}
    order = np.array([u for u in problem.unit_order.tolist() if u in units], dtype=np.int64)
    alone = replace(problem, unit_order=order)
    if admitted:
        lifted = [r if h not in gangs else None for h, r in enumerate(problem.gang_enqueue_reason)]
        blocked = [
            None if h in gangs and b == problem.enqueue_refusal(h) else b
            for h, b in enumerate(problem.gang_blocked)
        ]
        alone = replace(alone, gang_enqueue_reason=tuple(lifted), gang_blocked=tuple(blocked))
    placed = placed_per_gang(problem, solve_greedy(alone).pod_node)
    return all(
        placed[h] >= max(1, int(problem.gang_need[h])) for h in gangs if problem.gang_pending[h]
    )


def _competition(
    problem: Problem, g: int, pod_node: list[IntArray], counted: str
) -> Certified | None:
    """Gang g (with the gangs it requires) placed alone by the greedy: the gangs placed
    ahead of it on nodes it could use took its room."""
    gangs = closure(problem, g)
    if not _runs_alone(problem, g):
        return None
    types = [t for h in gangs for t in problem.gang_types(h)]
    usable = np.any(problem.eligible[np.array(types)], axis=0) if types else None
    rank = {u: i for i, u in enumerate(problem.unit_order.tolist())}
    rivals: dict[int, int] = {}
    for t, nodes in enumerate(pod_node):
        h = int(problem.type_gang[t])
        on = nodes[nodes >= 0]
        if h in gangs or on.size == 0 or (usable is not None and not usable[on].any()):
            continue
        rivals[h] = rank.get(int(problem.gang_unit[h]), len(rank))
    named = [problem.gang_ids[h] for h in sorted(rivals, key=lambda h: (rivals[h], h))]
    if not named:
        return None  # nothing else was placed: the answer's engine left it out on its own
    listed = ", ".join(named[:3]) + (f" and {len(named) - 3} more" if len(named) > 3 else "")
    sentence = (
        f"gang {problem.gang_ids[g]} fits on the cluster on its own; the room went to "
        f"{listed}, placed ahead of it"
    )
    cert = Certificate("competition", "competition", sentence, True, rivals=tuple(named))
    return Certified(cert, f"{sentence}; {AT_ITS_TURN}{counted}" if counted else sentence)
