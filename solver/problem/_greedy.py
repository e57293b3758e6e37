"""The greedy engine's working state, shared with the features' greedy steps.

A feature that places whole units its own way (the network topology's gather and Godel
groups) receives a `GreedyState` and must keep it consistent: free room, the quota ledger,
the node of each placed pod, and the reason of each gang left unplaced.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from solver.problem._problem import IntArray, Problem

__all__ = ["GreedyState", "Ledger", "NoLimits", "UnitPlacer"]


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


class NoLimits:
    """The ledger when no quota is in play."""

    def cap(self, t: int, count: int, card: int | None = None) -> tuple[int, str | None]:
        return count, None

    def charge(self, t: int, n: int, card: int | None = None) -> None:
        return None

    def admits(self, pod_node: dict[int, IntArray]) -> str | None:
        return None

    def charge_plan(self, pod_node: dict[int, IntArray]) -> None:
        return None

    def checkpoint(self) -> object:
        return None

    def restore(self, saved: object) -> None:
        return None


@dataclass
class GreedyState:
    free: IntArray  # [N, R] room left
    ledger: Ledger
    pod_node: list[IntArray]  # per type: node of each pod (type_pods order), -1 = none
    gang_reason: dict[int, str] = field(default_factory=dict)  # why gang g is not placed

    @classmethod
    def start(cls, problem: Problem, ledger: Ledger) -> GreedyState:
        return cls(
            free=problem.free.copy(),
            ledger=ledger,
            pod_node=[np.full(len(pods), -1, dtype=np.int64) for pods in problem.type_pods],
        )


UnitPlacer = Callable[[Problem, int, list[int], GreedyState], bool]
"""`placer(problem, unit, active gangs, state)`: place the unit (True) or decline (False)."""
