"""A small call through the whole pipeline before the server reports SERVING.

The first call of a process pays for lazy initialisation: the codec's message classes, the
features' first compile, CP-SAT's first model, numpy's first use of each routine — measured
at +10-15 ms on the first PlaceJob, a third of a 50 ms deadline. `warm_up` pays it at start,
on a four-pod cluster built here (no stored snapshot is touched)."""

from __future__ import annotations

from gangplan.v1 import cluster_pb2 as pb
from solver import SCHEMA, schedule
from solver.codec import decision_to_proto, snapshot_from_proto

__all__ = ["warm_up"]

ENGINES = ("greedy", "cpsat")


def _cluster() -> pb.Cluster:
    """Two nodes, a gang of three and a pod of its own, one of them GPU-sharing."""
    nodes = [
        pb.Node(
            name=f"warm-{i}",
            labels={"kubernetes.io/hostname": f"warm-{i}"},
            allocatable={"cpu": 8000, "memory": 32 << 30, "nvidia.com/gpu": 2, "pods": 110},
        )
        for i in range(2)
    ]
    gang = pb.Gang(namespace="warm", name="gang", min_member=3, total_number=3)
    pods = [
        pb.Pod(
            namespace="warm",
            name=f"gang-{i}",
            gang="warm/gang",
            requests={"cpu": 1000, "memory": 1 << 30, "nvidia.com/gpu": 1},
        )
        for i in range(3)
    ]
    pods.append(pb.Pod(namespace="warm", name="single", requests={"cpu": 500}))
    pods.append(
        pb.Pod(
            namespace="warm",
            name="bound",
            node_name="warm-0",
            requests={"cpu": 500},
            labels={"app": "warm"},
        )
    )
    return pb.Cluster(nodes=nodes, gangs=[gang], pods=pods)


def warm_up() -> None:
    """Decode, schedule with each engine (verify included) and encode one small cluster."""
    snapshot = snapshot_from_proto(_cluster(), "cluster", SCHEMA)
    for engine in ENGINES:
        decision = schedule(snapshot, engine=engine, time_limit=1.0, workers=1, seed=0)
        decision_to_proto(decision).SerializeToString()
