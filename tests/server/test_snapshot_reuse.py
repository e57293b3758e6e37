"""Calls on one stored snapshot reuse what depends only on it, and never stale parts of it.

snapshot: n0 (gpu 8) <- run/a (gpu 2, running, a gang of one)
job:      bench/j    = 2 pods × gpu 4
"""

from __future__ import annotations

from gangplan.v1 import cluster_pb2 as pb
from gangplan.v1 import placement_service_pb2 as spb
from server.convert import apply_job, build_model, cluster_state, job_gangs
from server.store import SnapshotStore
from solver import schedule
from solver.config import load_conf

CONF = load_conf(None)


def _cluster() -> pb.Cluster:
    return pb.Cluster(
        nodes=[pb.Node(name="n0", allocatable={"cpu": 8000, "nvidia.com/gpu": 8})],
        pods=[pb.Pod(namespace="run", name="a", node_name="n0", requests={"nvidia.com/gpu": 2})],
    )


def _job(name: str) -> pb.Job:
    return pb.Job(
        gangs=[pb.Gang(namespace="bench", name=name, min_member=2)],
        pods=[
            pb.Pod(
                namespace="bench",
                name=f"{name}-{i}",
                gang=f"bench/{name}",
                requests={"nvidia.com/gpu": 4},
            )
            for i in range(2)
        ],
    )


def _place(state: object, name: str) -> tuple[object, bool]:
    with_job, gangs = apply_job(state, _job(name), "job")  # type: ignore[arg-type]
    model = build_model(with_job, job_gangs(with_job, gangs))
    decision = schedule(model, CONF, engine="greedy")
    return model, decision.podgroups[f"bench/{name}"].placed


def test_two_calls_share_node_table_and_running_gangs() -> None:
    state = cluster_state(_cluster(), "cluster")
    first, placed_first = _place(state, "j1")
    second, placed_second = _place(state, "j2")
    assert not placed_first and not placed_second  # 2 + 2×4 > 8: the running pod counts
    assert first.node_table is second.node_table  # type: ignore[attr-defined]
    assert first.gangs["run/a"] is second.gangs["run/a"]  # type: ignore[attr-defined]


def test_an_update_drops_derived_gangs_of_changed_pods() -> None:
    store = SnapshotStore()
    snap = store.put(cluster_state(_cluster(), "cluster"), "s")
    model, _ = _place(snap.state, "j1")
    old_gang = model.gangs["run/a"]  # type: ignore[attr-defined]
    updated = store.update(
        spb.UpdateSnapshotRequest(
            snapshot_id="s",
            upsert_pods=[
                pb.Pod(
                    namespace="run",
                    name="a",
                    node_name="n0",
                    requests={"nvidia.com/gpu": 1},
                    priority=7,
                )
            ],
        )
    )
    assert "run/a" not in updated.state.gangs_of_one
    model, placed = _place(updated.state, "j2")
    assert not placed  # 1 + 8 > 8 still
    assert model.gangs["run/a"] is not old_gang  # type: ignore[attr-defined]
    assert model.pod_by_key["run/a"].priority == 7  # type: ignore[attr-defined]
