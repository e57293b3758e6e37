"""A topology layer or queue that is its own ancestor is an input error at every edge
(manifests, a gRPC cluster, a gRPC delta), naming the entry — never a KeyError or a
Decision that fails verification."""

from __future__ import annotations

import pytest

from gangplan.v1 import cluster_pb2 as pb
from solver import SCHEMA
from solver.codec import ConvertError, snapshot_from_proto
from solver.errors import ManifestError
from solver.model import Queue, parent_cycle
from solver.snapshot import Delta, DeltaError
from tests.builders import model, network_topology, queue


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        ([("a", "a")], 0),  # its own parent
        ([("x", "a"), ("a", "b"), ("b", "a")], 1),  # x leads into a cycle it is not on
        ([("a", "b"), ("b", None)], None),
        ([("a", "missing")], None),  # unknown parents are another error
        ([], None),
    ],
)
def test_parent_cycle_finds_the_first_entry_on_a_cycle(
    entries: list[tuple[str, str | None]], expected: int | None
) -> None:
    assert parent_cycle(entries) == expected


def test_a_manifest_queue_cycle_names_the_queue() -> None:
    with pytest.raises(ManifestError) as err:
        model(queue("a", "b"), queue("b", "a"))
    assert err.value.field == "spec.parent" and "Queue a" in str(err.value)


def test_a_manifest_layer_that_is_its_own_parent_names_the_layer() -> None:
    topology = network_topology(
        ("NodeTopologyLayer", "BlockLayer", []), ("BlockLayer", "BlockLayer", [])
    )
    with pytest.raises(ManifestError) as err:
        model(topology)
    assert err.value.field == "spec.networkTopologySpec[1].parentTopologyLayer"


def test_a_grpc_cluster_with_cycles_names_both_fields() -> None:
    cluster = pb.Cluster(
        queues=[pb.Queue(name="q", parent="q")],
        topology=pb.NetworkTopology(layers=[pb.TopologyLayer(name="L", parent="L")]),
    )
    with pytest.raises(ConvertError) as err:
        snapshot_from_proto(cluster, "cluster", SCHEMA)
    assert [f for f, _ in err.value.violations] == [
        "cluster.queues[0].parent",
        "cluster.topology.layers[0].parent",
    ]


def test_a_delta_closing_a_queue_cycle_is_refused_at_the_upserted_queue() -> None:
    start = snapshot_from_proto(
        pb.Cluster(queues=[pb.Queue(name="a", parent="b"), pb.Queue(name="b")]), "c", SCHEMA
    )
    with pytest.raises(DeltaError) as err:
        start.apply(Delta(upsert_queues=(Queue(name="c"), Queue(name="b", parent="a"))))
    assert [f for f, _ in err.value.violations] == ["upsert_queues[1].parent"]
