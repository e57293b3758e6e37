"""Volcano HyperNodes and networkTopology on the wire: round trip through the codec, every
bad field reported with its path, INVALID_ARGUMENT over gRPC, and a PlaceJob placing a hard
job inside one HyperNode."""

from __future__ import annotations

from collections.abc import Callable

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from gangplan.v1 import cluster_pb2 as pb
from gangplan.v1 import placement_service_pb2 as spb
from server import GangplanServer
from solver import SCHEMA, load_manifests
from solver.codec import ConvertError, cluster_to_proto, snapshot_from_proto
from tests.server.conftest import small_cluster

EXAMPLE = "examples/topology/volcano-hypernode.yaml"
SUBGROUP_EXAMPLE = "examples/topology/volcano-subgroup.yaml"


def test_hypernodes_and_network_topology_round_trip() -> None:
    model = load_manifests(EXAMPLE)
    message = pb.Cluster.FromString(cluster_to_proto(model).SerializeToString())
    assert [h.name for h in message.topology.hypernodes] == ["s0", "s1", "s2"]
    rebuilt = snapshot_from_proto(message, "cluster", SCHEMA)
    assert rebuilt.topology is not None and model.topology is not None
    assert rebuilt.topology.hypernodes == model.topology.hypernodes
    assert rebuilt.topology.name == ""  # only HyperNodes: no ClusterNetworkTopology
    train = rebuilt.gangs["default/train"].network_topology
    assert train == model.gangs["default/train"].network_topology
    assert train is not None and train.highest_tier_name == "leaf"


def test_sub_group_policy_round_trip() -> None:
    model = load_manifests(SUBGROUP_EXAMPLE)
    message = pb.Cluster.FromString(cluster_to_proto(model).SerializeToString())
    rebuilt = snapshot_from_proto(message, "cluster", SCHEMA)
    policy = rebuilt.gangs["default/train"].sub_group_policy
    assert policy == model.gangs["default/train"].sub_group_policy
    assert [(p.name, p.sub_group_size, p.min_sub_groups, p.match_label_keys) for p in policy] == [
        ("pipeline", 2, 2, ("pipeline",))
    ]
    assert policy[0].network_topology is not None
    assert policy[0].network_topology.highest_tier_name == "leaf"


def _bad_cluster() -> pb.Cluster:
    return pb.Cluster(
        topology=pb.NetworkTopology(
            hypernodes=[
                pb.HyperNode(name="", tier=1),
                pb.HyperNode(
                    name="h",
                    tier=-1,
                    members=[
                        pb.HyperNodeMember(),
                        pb.HyperNodeMember(type=pb.HYPER_NODE_MEMBER_TYPE_NODE),
                        pb.HyperNodeMember(type=pb.HYPER_NODE_MEMBER_TYPE_HYPER_NODE, regex="x"),
                    ],
                ),
            ]
        ),
        gangs=[
            pb.Gang(name="a", min_member=1, network_topology=pb.VolcanoNetworkTopology(mode="x")),
            pb.Gang(
                name="b",
                min_member=1,
                network_topology=pb.VolcanoNetworkTopology(
                    highest_tier_allowed=1, highest_tier_name="rack"
                ),
            ),
            pb.Gang(
                name="c",
                min_member=1,
                sub_group_policy=[
                    pb.VolcanoSubGroupPolicy(name="p", sub_group_size=-1, min_sub_groups=-2),
                    pb.VolcanoSubGroupPolicy(
                        name="p",
                        match_label_keys=[""],
                        network_topology=pb.VolcanoNetworkTopology(mode="x"),
                    ),
                ],
            ),
        ],
    )


BAD_FIELDS = {
    "cluster.topology.hypernodes[0].name",
    "cluster.topology.hypernodes[1].tier",
    "cluster.topology.hypernodes[1].members[0].type",
    "cluster.topology.hypernodes[1].members[1]",
    "cluster.topology.hypernodes[1].members[2]",
    "cluster.gangs[0].network_topology.mode",
    "cluster.gangs[1].network_topology.highest_tier_name",
    "cluster.gangs[2].sub_group_policy[0].sub_group_size",
    "cluster.gangs[2].sub_group_policy[0].min_sub_groups",
    "cluster.gangs[2].sub_group_policy[1].name",
    "cluster.gangs[2].sub_group_policy[1].match_label_keys[0]",
    "cluster.gangs[2].sub_group_policy[1].network_topology.mode",
}


def test_every_bad_field_is_named() -> None:
    with pytest.raises(ConvertError) as err:
        snapshot_from_proto(_bad_cluster(), "cluster", SCHEMA)
    assert {f for f, _ in err.value.violations} == BAD_FIELDS


def test_bad_hypernodes_are_invalid_argument_with_field_paths(
    start: Callable[..., tuple[GangplanServer, int]],
) -> None:
    _, port = start()
    request = spb.PutSnapshotRequest(cluster=_bad_cluster())
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = channel.unary_unary("/gangplan.v1.PlacementService/PutSnapshot")
        with pytest.raises(grpc.RpcError) as err:
            call(request.SerializeToString(), timeout=10)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    status = rpc_status.from_call(err.value)  # type: ignore[arg-type]
    assert status is not None
    bad = error_details_pb2.BadRequest()
    status.details[0].Unpack(bad)
    assert {v.field for v in bad.field_violations} == BAD_FIELDS


def test_place_job_keeps_a_hard_job_inside_one_hypernode(
    start: Callable[..., tuple[GangplanServer, int]],
) -> None:
    _, port = start()
    cluster = small_cluster(nodes=4, gpus=1)
    cluster.topology.hypernodes.extend(
        [
            pb.HyperNode(
                name="r0",
                tier=1,
                members=[pb.HyperNodeMember(type=pb.HYPER_NODE_MEMBER_TYPE_NODE, regex="^n[01]$")],
            ),
            pb.HyperNode(
                name="r1",
                tier=1,
                members=[pb.HyperNodeMember(type=pb.HYPER_NODE_MEMBER_TYPE_NODE, regex="^n[23]$")],
            ),
        ]
    )
    topology = pb.VolcanoNetworkTopology(mode="hard", highest_tier_allowed=1)
    cluster.gangs.add(namespace="default", name="g", min_member=2, network_topology=topology)
    for i in range(2):
        cluster.pods.add(
            namespace="default", name=f"g-{i}", gang="default/g", requests={"nvidia.com/gpu": 1}
        )
    request = spb.PlaceJobRequest(cluster=cluster)
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = channel.unary_unary(
            "/gangplan.v1.PlacementService/PlaceJob",
            response_deserializer=spb.PlaceJobResponse.FromString,
        )
        answer = call(request.SerializeToString(), timeout=30)
    nodes = {p.node for p in answer.decision.placements}
    assert nodes in ({"n0", "n1"}, {"n2", "n3"})
