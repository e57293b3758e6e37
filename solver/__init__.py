"""gangplan's library: read manifests, compile a Problem, run an engine, verify the Decision.

Data flows one way::

    kube (YAML) -> model -> policies -> Problem -> engine (greedy) -> Decision -> verify

Everything a caller needs is re-exported here.
"""

from solver.compile import compile_problem
from solver.config import SchedulerConf, load_conf
from solver.decision import Decision, GroupOutcome, Placement, Victim
from solver.errors import ConfigError, GangplanError, InputError, InternalError, ManifestError
from solver.explain import explain
from solver.kube import load_manifests
from solver.model import ClusterModel
from solver.problem import Problem
from solver.schedule import schedule
from solver.verify import check, verify

__all__ = [
    "ClusterModel",
    "ConfigError",
    "Decision",
    "GangplanError",
    "GroupOutcome",
    "InputError",
    "InternalError",
    "ManifestError",
    "Placement",
    "Problem",
    "SchedulerConf",
    "Victim",
    "check",
    "compile_problem",
    "explain",
    "load_conf",
    "load_manifests",
    "schedule",
    "verify",
]
