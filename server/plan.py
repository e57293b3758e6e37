"""`PlanCapacity`: the capacity planner (`solver.plan`) behind the gRPC service.

The cluster (snapshot, inline, or none) plus the request's workload -> the same
`ClusterModel` the YAML reader builds -> `solver.plan` (its pending pods are the workload,
its nodes with their free capacity the current cluster) -> `PlanCapacityResponse`. A bad
catalogue entry is `InputError` (INVALID_ARGUMENT, naming `node_types[i].field`).
"""

from __future__ import annotations

from typing import Any

from gangplan.v1 import placement_service_pb2 as spb
from server.convert import ClusterState, apply_job, build_model
from solver.plan import (
    PlanOptions,
    PlanResult,
    Workload,
    catalog_from_dict,
    cluster_from_model,
    make_input,
    plan,
    valued,
    workload_from_model,
)

__all__ = ["plan_capacity", "plan_to_proto"]


def _catalog(request: spb.PlanCapacityRequest) -> dict[str, Any]:
    types = []
    for t in request.node_types:
        entry: dict[str, Any] = {
            "name": t.name,
            "cost": t.cost,
            "allocatable": {k: int(v) for k, v in t.allocatable.items()},
        }
        if t.gpu_model:
            entry["gpuModel"] = t.gpu_model
        if t.HasField("max_count"):
            entry["maxCount"] = t.max_count
        if t.nodes_per_block:
            entry["nodesPerBlock"] = t.nodes_per_block
        if t.labels:
            entry["labels"] = dict(t.labels)
        types.append(entry)
    data: dict[str, Any] = {"nodeTypes": types}
    if request.card_quota:
        data["cardQuota"] = dict(request.card_quota)
    if request.HasField("budget"):
        data["budget"] = request.budget
    return data


def plan_capacity(
    state: ClusterState,
    request: spb.PlanCapacityRequest,
    time_limit: float,
    workers: int,
    seed: int,
) -> spb.PlanCapacityResponse:
    state, _ = apply_job(state, request.workload, "workload")
    model = build_model(state, None)
    catalog = catalog_from_dict(_catalog(request), "request")
    workload = workload_from_model(model, Workload())
    inp = make_input(workload, catalog, cluster_from_model(model))
    inp = valued(inp, "gpu" if request.value == spb.PLAN_VALUE_GPU else "pods")
    result = plan(inp, PlanOptions(time_limit=time_limit, workers=workers, seed=seed))
    return plan_to_proto(result)


def plan_to_proto(result: PlanResult) -> spb.PlanCapacityResponse:
    return spb.PlanCapacityResponse(
        status=result.status,
        nodes=[
            *(spb.PlanNodeCount(node_type=k, count=v) for k, v in sorted(result.add.items())),
            *(
                spb.PlanNodeCount(node_type=k, count=v, existing=True)
                for k, v in sorted(result.use.items())
            ),
        ],
        cost=result.cost,
        objective=result.objective,
        bound=result.bound,
        gap=result.gap,
        bounds={k: v for k, v in result.bounds.items() if v is not None},
        unplaced=[
            spb.PlanUnplaced(jobs=list(u.jobs), count=u.count, pods=u.pods, reason=u.reason)
            for u in result.unplaced
        ],
        utilisation=[
            spb.PlanUtilisation(
                resource=k, used=v["used"], capacity=v["capacity"], ratio=v["ratio"]
            )
            for k, v in result.utilisation.items()
        ],
        placed_pods=result.placed_pods,
        total_pods=result.total_pods,
        solve_seconds=result.seconds,
        notes=result.notes,
    )
