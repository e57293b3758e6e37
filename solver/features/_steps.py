"""What a feature contributes beyond its compile step, one dataclass per consumer.

A feature lists its parts here and the consumers iterate over the registered features
(`solver.features.FEATURES`, in that order): the greedy engine, the CP-SAT engine, the
CP-SAT explanation, `decide` and `schedule`. None of them imports a feature by name, so a
new policy is its folder plus one line in the registry. Every part is optional; an empty dataclass is a
feature that only compiles (filters, scores, a block the core reads).

    GreedySteps   unit placers (a unit the feature governs), trackers (rules that move as
                  the call's own pods land), a ledger (limits beyond node capacity), a
                  step order (units taken again after every step)
    CpsatSteps    constraint modules (`build(problem, model, vars) -> terms`), node-class
                  splits, per-node types, rules it does not encode, answer post-processing,
                  per-pod assignments read from a solution
    ExplainSteps  a constraint family guarded by one assumption literal in the "why not"
                  model, and cheap bounds that prove a gang cannot fit under the
                  feature's rule
    DecideSteps   fields of each Placement and of the Decision it fills
    AfterSteps    a step after placement that changes the answer (preemption, reclaim):
                  whether the call wants it, and the step
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ortools.sat.python import cp_model

from solver.config import SchedulerConf
from solver.decision import Certificate, Preemption
from solver.problem import BoolArray, IntArray, Ledger, Problem, StepOrder, Tracker, UnitPlacer
from solver.sat import PlacementVars, Term

__all__ = [
    "AfterSteps",
    "Assignment",
    "Build",
    "CpsatSteps",
    "DecideSteps",
    "ExplainSteps",
    "GreedySteps",
    "Guard",
]

Assignment = list[list[tuple[int, ...]]]
"""Per type, per pod (type_pods order): what it was given on its node beyond the node
itself (its GPU devices), () for none."""


@dataclass(frozen=True)
class GreedySteps:
    unit_placers: tuple[UnitPlacer, ...] = ()
    """Tried in order for every unit; the first that places it wins."""
    trackers: tuple[Callable[[Problem], Tracker | None], ...] = ()
    """Combined in registry order (a node's reason is the first tracker's); a tracker's
    `assignment` is the answer's per-pod assignment."""
    ledger: Callable[[Problem], Ledger | None] | None = None
    """Limits on top of node capacity (queue quotas); at most one feature's applies."""
    order: Callable[[Problem], StepOrder | None] | None = None
    """The order of the units' steps when it moves as pods land (hierarchical DRF); at
    most one feature's applies, and then units are placed step by step, their optional
    members interleaved with other units' steps."""


Build = Callable[[Problem, cp_model.CpModel, PlacementVars], list[Term]]
SolutionAssignment = Callable[
    [Problem, PlacementVars, Callable[[cp_model.IntVar], int], list[IntArray]],
    Assignment | None,
]


@dataclass(frozen=True)
class CpsatSteps:
    modules: tuple[Build, ...] = ()
    """Constraints and objective terms, built in registry order between the core's
    capacity module and its affinity and packing modules."""
    class_splits: tuple[Callable[[Problem], list[IntArray]], ...] = ()
    """Rows node classes must not mix (a class lies in one domain, one card type, ...)."""
    per_node: tuple[Callable[[Problem], BoolArray | None], ...] = ()
    """[T] types constrained node by node: their classes get a variable per node."""
    unsupported: tuple[Callable[[Problem], str | None], ...] = ()
    """A rule the modules do not encode: the engine answers with the greedy instead."""
    postprocess: tuple[Callable[[Problem, list[IntArray]], list[IntArray]], ...] = ()
    """Reorder an answer's pods within their nodes (e.g. ranks next to each other)."""
    assignment: SolutionAssignment | None = None
    """The per-pod assignment read from a solution (None when the feature is not in play)."""


@dataclass(frozen=True)
class Guard:
    """A constraint family in the explanation model, enforced only if `literal` holds;
    `words` say it when CP-SAT names the literal in an infeasibility core."""

    literal: cp_model.IntVar
    words: str


@dataclass(frozen=True)
class ExplainSteps:
    class_splits: tuple[Callable[[Problem], list[IntArray]], ...] = ()
    """Node-class splits the guarded family needs in the explanation model."""
    per_node: Callable[[Problem], BoolArray | None] | None = None
    """Types the guarded family constrains node by node."""
    guard: Callable[[Problem, cp_model.CpModel, PlacementVars, list[int]], Guard | None] | None = (
        None
    )
    """`guard(problem, model, vars, types)`: encode the family for `types` (local type i
    is problem type `types[i]`) behind a fresh literal, or None when it does not concern
    them."""
    bounds: tuple[Callable[[Problem, list[int], IntArray, bool], Certificate | None], ...] = ()
    """`bound(problem, gangs, free, evicted)`: a proven certificate that `gangs` (one gang
    and the gangs it requires) cannot all be placed under this feature's rule with `free`
    as the nodes' room (e.g. no domain of their MustGather level has room), or None when
    the bound does not prove it (`solver.problem.room` computes both room bounds per
    domain). `evicted`: preemption is in the call, so `free` is the nodes' allocatable and
    the bound must hold with every running pod gone."""


@dataclass(frozen=True)
class DecideSteps:
    placement: Callable[[Problem, int, int, tuple[int, ...]], dict[str, Any]] | None = None
    """`placement(problem, type, node, assigned)`: Placement fields of a placed pod."""
    decision: Callable[[Problem, list[IntArray]], dict[str, Any]] | None = None
    """`decision(problem, pod_node)`: Decision fields (empty when not in play)."""


@dataclass(frozen=True)
class AfterSteps:
    wanted: Callable[[SchedulerConf, bool], bool]
    """`wanted(conf, asked)`: the step runs for this call (`asked`: the caller's flag)."""
    run: Callable[..., tuple[Preemption, float]]
    """`run(problem, snapshot, workload, conf, pod_node, *, exact, workers, seed, deadline)`:
    the step on the engine's answer (`exact`: the engine was not the greedy), its part of
    the Decision and the seconds it took."""
