"""Engines: take a Problem and SolveParams, return an EngineResult. They never read Kubernetes objects.

* `greedy` — vectorised numpy, the upstream schedulers' algorithms; milliseconds; status HEURISTIC.
* `cpsat`  — OR-Tools CP-SAT over node classes, hinted with the greedy answer; OPTIMAL/FEASIBLE
  with a proven bound, never worse than greedy.
* `auto`   — greedy, then CP-SAT for the rest of the time budget; the better answer wins.
"""

import time
from collections.abc import Callable

from solver.engines._params import SolveParams, default_workers
from solver.engines._result import EngineResult
from solver.engines.cpsat import solve_auto, solve_cpsat
from solver.engines.greedy import solve_greedy
from solver.problem import Problem

__all__ = [
    "ENGINES",
    "EngineResult",
    "SolveParams",
    "default_workers",
    "solve_greedy",
]


def _greedy(problem: Problem, params: SolveParams) -> EngineResult:
    return solve_greedy(problem, deadline=time.perf_counter() + params.time_limit, stop=params.stop)


ENGINES: dict[str, Callable[[Problem, SolveParams], EngineResult]] = {
    "auto": solve_auto,
    "cpsat": solve_cpsat,
    "greedy": _greedy,
}
