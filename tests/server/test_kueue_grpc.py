"""Kueue TAS over gRPC: every bad Kueue field is named in INVALID_ARGUMENT."""

from __future__ import annotations

from typing import Any

import pytest

from clients.client import Client, ClientError
from gangplan.v1 import cluster_pb2 as pb
from solver import SCHEMA
from solver.codec import ConvertError, snapshot_from_proto

RACK = "cloud.com/topology-rack"
SLICE_LEVEL = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"


def test_grpc_invalid_argument_names_kueue_fields(start: Any) -> None:
    _, port = start()
    cluster_msg = pb.Cluster(
        pods=[pb.Pod(name="p", annotations={SLICE_LEVEL: RACK})],
        topology=pb.NetworkTopology(
            kueue_topologies=[pb.KueueTopology(name="t", levels=["kubernetes.io/hostname", RACK])],
            kueue_flavors=[pb.KueueResourceFlavor(name="f", topology_name="nope")],
        ),
    )
    with pytest.raises(ConvertError) as convert:
        snapshot_from_proto(cluster_msg, "cluster", SCHEMA)
    expected = [
        f"cluster.pods[0].annotations[{SLICE_SIZE}]",
        "cluster.topology.kueue_topologies[0].levels",
        "cluster.topology.kueue_flavors[0].topology_name",
        "cluster.topology.kueue_flavors[0].node_labels",
    ]
    assert [f for f, _ in convert.value.violations] == expected
    with Client(f"127.0.0.1:{port}") as client, pytest.raises(ClientError) as err:
        client.place_job(cluster=cluster_msg)
    assert err.value.code.name == "INVALID_ARGUMENT"
    assert [f for f, _ in err.value.violations] == expected
