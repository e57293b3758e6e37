"""Defragment end to end: a real server on 127.0.0.1:0, through the Python client.

The racks of tests/defrag/test_defrag.py (1-GPU pods per node):

          rack r0              rack r1              rack r2
    n00 [3]   n01 [2]     n10 [6]   n11 [1]     n20 [5]   n21 [4]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import grpc
import pytest

from clients.client import Client, ClientError
from gangplan.v1 import placement_service_pb2 as spb
from solver import load_manifests
from solver.codec import cluster_to_proto
from tests.builders import model
from tests.defrag.test_defrag import RACK, ones, rack_nodes

ROOT = Path(__file__).resolve().parents[2]


def cluster() -> Any:
    return cluster_to_proto(model(*rack_nodes(), *ones()))


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_defragment_frees_the_emptiest_rack_over_grpc(start: Any, engine: str) -> None:
    _, port = start()
    goal = spb.DefragmentGoal(level=RACK, max_pods=8)
    with Client(f"127.0.0.1:{port}", timeout=30) as client:
        answer = client.defragment(goal, cluster=cluster(), engine=engine, workers=1)
    assert list(answer.freed) == ["r0"] and len(answer.moves) == 5
    assert {m.from_node for m in answer.moves} == {"n00", "n01"}
    assert dict(answer.domain_cost) == {"r0": 5}
    if engine == "cpsat":
        assert answer.status == "OPTIMAL" and answer.bound == 1.0 and answer.gap == 0.0
    else:
        assert answer.status == "HEURISTIC" and not answer.HasField("bound")


def test_defragment_on_a_stored_snapshot_counts_whole_nodes(start: Any) -> None:
    _, port = start()
    with Client(f"127.0.0.1:{port}", timeout=30) as client:
        client.put_snapshot(cluster(), snapshot_id="c")
        answer = client.defragment(spb.DefragmentGoal(count=2, max_pods=20), snapshot="c")
    assert set(answer.freed) == {"n11", "n01"} and len(answer.moves) == 3
    assert answer.generation == 1


@pytest.mark.parametrize(
    ("goal", "field"),
    [
        (spb.DefragmentGoal(max_pods=-1), "goal.max_pods"),
        (spb.DefragmentGoal(count=0), "goal.count"),
        (spb.DefragmentGoal(shape={"nvidia.com/gpu": "eight"}), "goal.shape[nvidia.com/gpu]"),
    ],
)
def test_a_bad_goal_is_invalid_argument_naming_the_field(
    start: Any, goal: spb.DefragmentGoal, field: str
) -> None:
    _, port = start()
    with (
        Client(f"127.0.0.1:{port}", retries=0, timeout=30) as client,
        pytest.raises(ClientError) as err,
    ):
        client.defragment(goal, cluster=cluster())
    assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert [v[0] for v in err.value.violations] == [field]


def test_room_for_a_gang_over_grpc(start: Any) -> None:
    """examples/defrag/consolidate.yaml: six moves inside rack r1, then the gang placed."""
    _, port = start()
    cluster_msg = cluster_to_proto(load_manifests(str(ROOT / "examples/defrag/consolidate.yaml")))
    with Client(f"127.0.0.1:{port}", timeout=30) as client:
        answer = client.defragment(
            spb.DefragmentGoal(gang="research/train"), cluster=cluster_msg, workers=1
        )
    assert len(answer.moves) == 6 and answer.status == "OPTIMAL"
    assert sorted(answer.placement.values()) == ["gpu-a", "gpu-c"]
