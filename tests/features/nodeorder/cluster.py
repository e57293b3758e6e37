"""Shared helpers: preferred node affinity on the fluent pod builder, runs on both engines,
and the nodeorder rows a compile produces."""

from __future__ import annotations

from typing import Any

import numpy as np

from solver import SchedulerConf, schedule
from solver.compile import compile_parts
from solver.config import PluginConf, TierConf
from solver.decision import Decision
from solver.model import ClusterModel
from solver.schedule import snapshot_of
from solver.snapshot import Snapshot, Workload
from tests.builders import PodBuilder

ENGINES = ("greedy", "cpsat")


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    """One NodeSelectorRequirement."""
    requirement: dict[str, Any] = {"key": key, "operator": op}
    if values:
        requirement["values"] = list(values)
    return requirement


def prefer(builder: PodBuilder, *terms: tuple[int, list[dict[str, Any]]]) -> PodBuilder:
    """Adds preferredDuringSchedulingIgnoredDuringExecution terms (weight, matchExpressions)."""
    node_affinity = builder.body["spec"].setdefault("affinity", {}).setdefault("nodeAffinity", {})
    node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
        {"weight": weight, "preference": {"matchExpressions": exprs}} for weight, exprs in terms
    ]
    return builder


def conf_with(*plugins: str, **arguments: dict[str, Any]) -> SchedulerConf:
    """A conf of one tier listing `plugins`; arguments by plugin name (dashes as `_`)."""
    entries = [
        PluginConf(name=p, arguments=arguments.get(p.replace("-", "_"), {})) for p in plugins
    ]
    return SchedulerConf(tiers=(TierConf(plugins=entries),))


def place(cluster: ClusterModel, engine: str, conf: SchedulerConf | None = None) -> Decision:
    """`schedule` (verified) with a fixed seed and one CP-SAT worker."""
    return schedule(cluster, conf, engine=engine, workers=1, seed=0, time_limit=20.0)


def score_rows(
    cluster: ClusterModel | Snapshot, conf: SchedulerConf | None = None, pod: str | None = None
) -> dict[str, dict[str, float]]:
    """Per plugin, the static score row (by node name) of `pod`'s type (default: the first
    pending pod) as the compile logs it."""
    snapshot = cluster if isinstance(cluster, Snapshot) else snapshot_of(cluster)
    compiled = compile_parts(
        snapshot, Workload.everything(snapshot), conf or SchedulerConf.default()
    )
    problem = compiled.problem
    key = pod or problem.type_pods[0][0]
    t = next(t for t, pods in enumerate(problem.type_pods) if key in pods)
    rows: dict[str, np.ndarray] = {}
    for plugin, types, row in compiled.score_log:
        if t in types:
            rows[plugin] = rows.get(plugin, np.zeros(problem.num_nodes)) + row
    return {
        plugin: dict(zip(problem.node_names, row.tolist(), strict=True))
        for plugin, row in rows.items()
    }
