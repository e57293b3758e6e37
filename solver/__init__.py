"""gangplan's library: read manifests, compile a Problem, run an engine, verify the Decision.

Data flows one way::

    kube (YAML) / codec (protobuf) -> model -> snapshot -> features -> Problem
        -> engine (greedy | cpsat | auto) -> Decision -> verify

Everything a caller needs is re-exported here.
"""

from solver.compile import compile_problem
from solver.config import SchedulerConf, conf_from_text, load_conf
from solver.decision import Decision, GroupOutcome, Placement, Victim
from solver.defrag import DefragGoal, DefragPlan, defragment
from solver.errors import ConfigError, GangplanError, InputError, InternalError, ManifestError
from solver.explain import explain
from solver.kube import load_manifests, load_objects
from solver.model import ClusterModel
from solver.problem import Problem
from solver.schedule import SCHEMA, schedule, snapshot_of, solve
from solver.snapshot import Delta, Snapshot, Workload
from solver.verify import check, verify

__all__ = [
    "SCHEMA",
    "ClusterModel",
    "ConfigError",
    "Decision",
    "DefragGoal",
    "DefragPlan",
    "Delta",
    "GangplanError",
    "GroupOutcome",
    "InputError",
    "InternalError",
    "ManifestError",
    "Placement",
    "Problem",
    "SchedulerConf",
    "Snapshot",
    "Victim",
    "Workload",
    "check",
    "compile_problem",
    "conf_from_text",
    "defragment",
    "explain",
    "load_conf",
    "load_manifests",
    "load_objects",
    "schedule",
    "snapshot_of",
    "solve",
    "verify",
]
