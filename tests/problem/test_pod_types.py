"""Pod types: the codec copies a gang's members from one template (`Frozen.replaced`), and
compile reads each template's type key once (`compile._shape`); neither may change which
pods share a type."""

from __future__ import annotations

from gangplan.v1 import cluster_pb2 as pb
from solver import SCHEMA, SchedulerConf
from solver.codec import snapshot_from_proto
from solver.compile import compile_problem
from solver.snapshot import Workload


def _cluster(*pods: pb.Pod) -> pb.Cluster:
    node = pb.Node(name="n1", allocatable={"cpu": 64000, "nvidia.com/gpu": 8, "pods": 110})
    gang = pb.Gang(namespace="default", name="g", min_member=2, total_number=4)
    return pb.Cluster(nodes=[node], gangs=[gang], pods=list(pods))


def _member(name: str, **fields: object) -> pb.Pod:
    given = {"requests": {"cpu": 1000}, **fields}
    return pb.Pod(name=name, gang="default/g", **given)  # type: ignore[arg-type]


def _types(cluster: pb.Cluster) -> list[list[str]]:
    snapshot = snapshot_from_proto(cluster, "cluster", SCHEMA)
    problem = compile_problem(snapshot, SchedulerConf.default(), Workload.everything(snapshot))
    return [list(pods) for pods in problem.type_pods]


def test_copies_of_one_template_are_one_type_and_keep_their_own_names() -> None:
    cluster = _cluster(*(_member(f"w-{i}") for i in range(4)))
    assert _types(cluster) == [[f"default/w-{i}" for i in range(4)]]
    snapshot = snapshot_from_proto(cluster, "cluster", SCHEMA)
    pods = sorted(Workload.everything(snapshot).pods, key=lambda p: p.name)
    assert [p.name for p in pods] == [f"w-{i}" for i in range(4)]
    assert {p.gang for p in pods} == {"default/g"}
    assert pods[0].model_dump() == pods[1].model_dump() | {"name": "w-0"}


def test_members_differing_in_a_field_a_type_reads_are_two_types() -> None:
    cluster = _cluster(
        _member("a-0", node_selector={"zone": "a"}),
        _member("a-1", node_selector={"zone": "a"}),
        _member("b-0", node_selector={"zone": "b"}),
        _member("c-0", requests={"cpu": 2000}),
    )
    assert sorted(_types(cluster)) == [
        ["default/a-0", "default/a-1"],
        ["default/b-0"],
        ["default/c-0"],
    ]


def test_pods_without_a_gang_are_a_type_each() -> None:
    cluster = _cluster(
        pb.Pod(name="s-0", requests={"cpu": 1000}), pb.Pod(name="s-1", requests={"cpu": 1000})
    )
    assert sorted(_types(cluster)) == [["default/s-0"], ["default/s-1"]]
