"""Capacity planning: what to buy so a workload runs, at minimum cost, with a proven bound.

    workload (manifests | trace CSV) + cluster (manifests | node CSV) + catalogue (YAML)
        -> PlanInput (shapes x node types)  -> plan() -> PlanResult  -> verify_plan()

The stages, one module each: catalog (`catalog`, `workload`, `cluster`, `_input`) ->
bounds (`bounds`, `_patterns`, `_config_lp`) -> pack (`_pack`, `_incumbents`) -> improve
(`_incumbents`, `_integer`) -> report (`_report`); `solver.plan.planner` runs them in order
and explains the model. `solver.plan.sweep` runs what-if sweeps on a process pool (or
Ray / Dask).
"""

from solver.plan._input import VALUES, make_input, valued
from solver.plan._model import (
    GPU,
    MILLI,
    JobClass,
    NodeType,
    PlanInput,
    PlanOptions,
    PlanResult,
    ProgressFn,
    Shape,
    Unplaced,
)
from solver.plan.catalog import Catalog, catalog_from_dict, load_catalog
from solver.plan.cluster import cluster_from_csv, cluster_from_model
from solver.plan.planner import plan, verify_plan
from solver.plan.workload import (
    DEFAULT_TRACE_MAPPING,
    Workload,
    parse_mapping,
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
