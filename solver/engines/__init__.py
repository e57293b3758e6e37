"""Engines: take a Problem, return an EngineResult. They never read Kubernetes objects.

* `greedy` — vectorised numpy, the upstream schedulers' algorithms; milliseconds.
"""

from collections.abc import Callable

from solver.engines._result import EngineResult, fit_report
from solver.engines.greedy import solve_greedy
from solver.problem import Problem

__all__ = ["ENGINES", "EngineResult", "fit_report", "solve_greedy"]

ENGINES: dict[str, Callable[[Problem], EngineResult]] = {"greedy": solve_greedy}
