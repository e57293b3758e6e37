"""`PlanCapacity`: the capacity planner (`solver.plan`) behind the gRPC service.

The cluster (snapshot, inline, or none) plus the request's workload -> the same
`ClusterModel` the YAML reader builds (planning is batch work: here the running pods do
become objects) -> `solver.plan` (its pending pods are the workload, its nodes with their
free capacity the current cluster) -> `PlanCapacityResponse`. The catalogue is checked by
the planner's own reader; its field names (`nodeTypes[0].maxCount`) come back as the
request's (`node_types[0].max_count`) in an INVALID_ARGUMENT.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gangplan.v1 import placement_service_pb2 as spb
from server.model import model_of
from solver.codec import ConvertError
from solver.errors import FieldError, InputError
from solver.plan import (
    Catalog,
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
from solver.quantity import CPU
from solver.snapshot import Snapshot

__all__ = ["catalog_of", "plan_capacity", "plan_to_proto"]


def _catalog(request: spb.PlanCapacityRequest) -> dict[str, Any]:
    data = _types(request.node_types)
    if request.card_quota:
        data["cardQuota"] = dict(request.card_quota)
    if request.HasField("budget"):
        data["budget"] = request.budget
    return data


def catalog_of(node_types: Iterable[spb.PlanNodeType]) -> Catalog:
    """A request's node types as a catalogue (checked by the planner's own reader; a bad
    field is a ConvertError naming the request's path)."""
    try:
        return catalog_from_dict(_types(node_types), "request")
    except FieldError as err:
        raise ConvertError([(_request_path(err.field), err.reason)]) from None


def _types(node_types: Iterable[spb.PlanNodeType]) -> dict[str, Any]:
    types = []
    for t in node_types:
        entry: dict[str, Any] = {
            "name": t.name,
            "cost": t.cost,
            # the wire's integer units: milli-CPU is a quantity in `m` (bare, it is cores)
            "allocatable": {k: f"{v}m" if k == CPU else int(v) for k, v in t.allocatable.items()},
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
    return {"nodeTypes": types}


_PROTO_NAMES = {
    "nodeTypes": "node_types",
    "gpuModel": "gpu_model",
    "maxCount": "max_count",
    "nodesPerBlock": "nodes_per_block",
    "cardQuota": "card_quota",
}
_MAPS = ("allocatable", "labels", "card_quota")


def _request_path(field: str) -> str:
    """A catalogue field path in the request's names: `nodeTypes[0].allocatable.cpu` ->
    `node_types[0].allocatable["cpu"]`."""
    out: list[str] = []
    rest = field
    while rest:
        head, _, rest = rest.partition(".")
        name, bracket, index = head.partition("[")
        name = _PROTO_NAMES.get(name, name)
        out.append(f"{name}{bracket}{index}")
        if name in _MAPS and rest:
            out[-1] += f'["{rest}"]'
            break
    return ".".join(out)


def plan_capacity(
    snapshot: Snapshot,
    request: spb.PlanCapacityRequest,
    time_limit: float,
    workers: int,
    seed: int,
) -> spb.PlanCapacityResponse:
    model = model_of(snapshot, request.workload, "workload")
    try:
        catalog = catalog_from_dict(_catalog(request), "request")
    except FieldError as err:
        raise ConvertError([(_request_path(err.field), err.reason)]) from None
    workload = workload_from_model(model, Workload())
    inp = make_input(workload, catalog, cluster_from_model(model))
    if request.value not in spb.PlanValue.DESCRIPTOR.values_by_number:
        raise InputError(f"value: unknown enum value {request.value}")
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
