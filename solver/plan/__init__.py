"""Capacity planning: what to buy so a workload runs, at minimum cost, with a proven bound.

    workload (manifests | trace CSV) + cluster (manifests | node CSV) + catalogue (YAML)
        -> PlanInput (shapes x node types)  -> plan() -> PlanResult  -> verify_plan()

See `solver.plan.planner` for the model and the bounds, `solver.plan.sweep` for what-if
sweeps on a process pool (or Ray / Dask).
"""

from solver.plan._model import (
    GPU,
    MILLI,
    JobClass,
    NodeType,
    PlanInput,
    PlanResult,
    Shape,
    Unplaced,
)
from solver.plan.catalog import Catalog, catalog_from_dict, load_catalog
from solver.plan.planner import PlanOptions, ProgressFn, plan, verify_plan
from solver.plan.workload import (
    DEFAULT_TRACE_MAPPING,
    VALUES,
    Workload,
    cluster_from_csv,
    cluster_from_model,
    make_input,
    parse_mapping,
    valued,
    workload_from_model,
    workload_from_trace,
)

__all__ = [
    "DEFAULT_TRACE_MAPPING",
    "GPU",
    "MILLI",
    "VALUES",
    "Catalog",
    "JobClass",
    "NodeType",
    "PlanInput",
    "PlanOptions",
    "PlanResult",
    "ProgressFn",
    "Shape",
    "Unplaced",
    "Workload",
    "catalog_from_dict",
    "cluster_from_csv",
    "cluster_from_model",
    "load_catalog",
    "make_input",
    "parse_mapping",
    "plan",
    "valued",
    "verify_plan",
    "workload_from_model",
    "workload_from_trace",
]
