"""What an engine hands back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from solver.problem import IntArray

__all__ = ["EngineResult", "Status"]

Status = Literal["OPTIMAL", "FEASIBLE", "INFEASIBLE", "HEURISTIC"]


@dataclass
class EngineResult:
    engine: str
    status: Status
    pod_node: list[IntArray]  # per pod type: node index of each pod (type_pods order); -1 = none
    gang_reason: dict[int, str] = field(default_factory=dict)  # why gang g was not placed
    bound: float | None = None
    stats: dict[str, float | int] = field(default_factory=dict)
    devices: list[list[tuple[int, ...]]] | None = None  # per type, per pod: GPU devices
    #   (indices within its node) of each placed device pod; None without the device model
    notes: list[str] = field(default_factory=list)  # what the answer's reader must know
    #   (CP-SAT answered with the greedy's placement, and why)
