"""The greedy engine's working state, shared with the features' greedy steps.

A feature that places whole units its own way (the network topology's gather and Godel
groups) receives a `GreedyState` and must keep it consistent: free room, the quota ledger,
the node of each placed pod, and the reason of each gang left unplaced.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from solver.problem._memo import FillMemo
from solver.problem._problem import FloatArray, IntArray, Problem

__all__ = ["GreedyState", "Ledger", "StepOrder", "Tracker", "Trackers", "UnitPlacer"]


class Ledger(Protocol):
    """Limits on how many pods may be placed beyond node capacity (queue quotas)."""

    def cap(self, t: int, count: int, card: int | None = None) -> tuple[int, str | None]:
        """How many of `count` pods of type t fit the limits (`card`: the quota dimension of
        the card type they use), and why fewer when so."""
        ...

    def charge(self, t: int, n: int, card: int | None = None) -> None: ...

    def admits(self, pod_node: dict[int, IntArray]) -> str | None:
        """None when a whole plan (node per pod, per type) fits; else why not."""
        ...

    def charge_plan(self, pod_node: dict[int, IntArray]) -> None: ...

    def checkpoint(self) -> object: ...

    def restore(self, saved: object) -> None: ...

    def fill(
        self,
        problem: Problem,
        t: int,
        count: int,
        free: IntArray,
        tracker: Tracker | None,
        memo: FillMemo | None = None,
    ) -> tuple[IntArray, int, str | None]:
        """Up to `count` pods of type t placed within the limits (`fill`, updating `free`
        and the ledger): their nodes, how many the limits admitted, and why fewer."""
        ...


class StepOrder(Protocol):
    """The order of the greedy's steps when it moves as pods land (Volcano's allocate loop
    under hierarchical DRF): a unit's first step places its required share (one pod when it
    requires none), each later step one more of its optional members, and the order is
    asked again after every step."""

    def next(self) -> int | None:
        """The unit whose step comes next; None when no unit is left."""
        ...

    def alone(self) -> bool:
        """The unit `next` gave is the only one left: its later steps would follow one
        another, so the engine may take them at once."""
        ...

    def stepped(self, unit: int, placed: Mapping[int, int], more: bool) -> None:
        """`unit`'s step placed `placed` pods per type ({} for none); `more`: it has
        members left to try (else it leaves the order)."""
        ...


class Tracker:
    """Rules between the call's own pods that move as pods land (inter-pod affinity and
    spread): which nodes one more pod of a type may use now. This base tracks nothing."""

    def involved(self, t: int) -> bool:
        """Pods of type t must be placed one at a time through this tracker."""
        return False

    def verdict(self, t: int) -> IntArray:
        """[N] reason code (Problem.reason_texts) per node for one more pod of t, 0 = allowed."""
        raise NotImplementedError

    def place(self, t: int, node: int) -> None:
        return None

    def score(self, t: int) -> FloatArray | None:
        """[N] a score of one more pod of t that moves as pods land (added to the node
        scores; e.g. GPU fragmentation), None: nothing."""
        return None

    def checkpoint(self) -> object:
        return None

    def restore(self, saved: object) -> None:
        return None

    def assignment(self, pod_node: list[IntArray]) -> list[list[tuple[int, ...]]] | None:
        """Per type, per pod: what it was given on its node beyond the node (its GPU
        devices); None when the tracker assigns nothing."""
        return None


class Trackers(Tracker):
    """Several trackers as one (inter-pod rules, node-group limits, ...): a node is allowed
    when every tracker involved with the type allows it, else it has the first one's reason."""

    def __init__(self, parts: Sequence[Tracker]) -> None:
        self.parts = tuple(parts)

    @classmethod
    def of(cls, *parts: Tracker | None) -> Tracker | None:
        """The trackers given (None: a feature without one) combined; None when none."""
        present = [p for p in parts if p is not None]
        if len(present) <= 1:
            return present[0] if present else None
        return cls(present)

    def involved(self, t: int) -> bool:
        return any(p.involved(t) for p in self.parts)

    def verdict(self, t: int) -> IntArray:
        codes: IntArray | None = None
        for p in self.parts:
            if p.involved(t):
                row = p.verdict(t)
                codes = row if codes is None else np.where(codes == 0, row, codes)
        if codes is None:
            raise NotImplementedError("verdict asked for a type no tracker is involved with")
        return codes

    def place(self, t: int, node: int) -> None:
        for p in self.parts:
            if p.involved(t):
                p.place(t, node)

    def score(self, t: int) -> FloatArray | None:
        rows = [row for p in self.parts if p.involved(t) and (row := p.score(t)) is not None]
        return np.sum(rows, axis=0) if rows else None

    def checkpoint(self) -> object:
        return tuple(p.checkpoint() for p in self.parts)

    def restore(self, saved: object) -> None:
        assert isinstance(saved, tuple)
        for p, state in zip(self.parts, saved, strict=True):
            p.restore(state)

    def assignment(self, pod_node: list[IntArray]) -> list[list[tuple[int, ...]]] | None:
        return next((a for p in self.parts if (a := p.assignment(pod_node)) is not None), None)


@dataclass
class GreedyState:
    free: IntArray  # [N, R] room left
    ledger: Ledger
    pod_node: list[IntArray]  # per type: node of each pod (type_pods order), -1 = none
    gang_reason: dict[int, str] = field(default_factory=dict)  # why gang g is not placed
    tracker: Tracker = field(default_factory=Tracker)
    memo: FillMemo | None = None  # slots and scores per pod shape, for `free`

    @classmethod
    def start(cls, problem: Problem, ledger: Ledger, tracker: Tracker | None = None) -> GreedyState:
        free = problem.free.copy()
        return cls(
            free=free,
            ledger=ledger,
            pod_node=[np.full(len(pods), -1, dtype=np.int64) for pods in problem.type_pods],
            tracker=tracker or Tracker(),
            memo=FillMemo(problem, free),
        )


UnitPlacer = Callable[[Problem, int, list[int], GreedyState], bool]
"""`placer(problem, unit, active gangs, state)`: place the unit (True) or decline (False)."""
