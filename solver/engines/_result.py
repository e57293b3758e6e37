"""What an engine hands back, and the counted fit reasons every engine reports the same way."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from solver.problem import IntArray, Problem

Status = Literal["OPTIMAL", "FEASIBLE", "INFEASIBLE", "HEURISTIC"]


@dataclass
class EngineResult:
    engine: str
    status: Status
    pod_node: list[IntArray]  # per pod type: node index of each pod (type_pods order); -1 = none
    gang_reason: dict[int, str] = field(default_factory=dict)  # why gang g was not placed
    bound: float | None = None
    stats: dict[str, float | int] = field(default_factory=dict)


def fit_report(problem: Problem, t: int, free: IntArray) -> tuple[np.ndarray, dict[str, int]]:
    """Nodes where one pod of type `t` fits now, and kube-style counted reasons for the rest.

    A node lacking several resources counts once under each (`Insufficient cpu`,
    `Insufficient memory`), as kube-scheduler's FitError does.
    """
    demand = problem.type_demand[t]
    short = (free < demand) & (demand > 0)  # [N, R]
    eligible = problem.eligible[t]
    fits = eligible & ~short.any(axis=1)
    counts: dict[str, int] = {}
    codes, code_counts = np.unique(problem.ineligible_reason[t][~eligible], return_counts=True)
    for code, count in zip(codes.tolist(), code_counts.tolist(), strict=True):
        counts[problem.reason_texts[code]] = count
    lacking = short[eligible].sum(axis=0)
    for r, count in enumerate(lacking.tolist()):
        if count:
            counts[f"Insufficient {problem.resources[r]}"] = count
    return fits, counts


def format_fit_error(num_nodes: int, counts: dict[str, int]) -> str:
    """`0/8 nodes are available: 3 Insufficient nvidia.com/gpu, 5 node(s) were unschedulable.`"""
    if not counts:
        return f"0/{num_nodes} nodes are available."
    parts = ", ".join(f"{n} {text}" for text, n in sorted(counts.items(), key=lambda kv: kv[0]))
    return f"0/{num_nodes} nodes are available: {parts}."
