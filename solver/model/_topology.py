"""Koordinator's ClusterNetworkTopology: the layers of the network tree and their node labels."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

CLUSTER_LAYER = "ClusterTopologyLayer"
NODE_LAYER = "NodeTopologyLayer"


class TopologyLayer(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    parent: str | None = None
    label_keys: tuple[str, ...] = ()


class NetworkTopology(BaseModel):
    """`ClusterNetworkTopology/default`: layers as declared (the tree is built by the topology policy)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = "default"
    layers: tuple[TopologyLayer, ...] = ()
