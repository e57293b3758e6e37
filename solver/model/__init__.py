"""The domain model: what the cluster and the workload are, independent of any CRD dialect.

Built from Kubernetes manifests by `solver.kube` (and, later, from protobuf messages by
`server`). Every quantity is already an integer (milli-CPU, bytes, device counts).
Policies read this model; engines never do.
"""

from solver.model._cluster import Node, NodeSelectorRequirement, NodeSelectorTerm, Taint, Toleration
from solver.model._snapshot import ClusterModel
from solver.model._topology import NetworkTopology, TopologyLayer
from solver.model._workload import Gang, MatchPolicy, Pod, Queue

__all__ = [
    "ClusterModel",
    "Gang",
    "MatchPolicy",
    "NetworkTopology",
    "Node",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "Pod",
    "Queue",
    "Taint",
    "Toleration",
    "TopologyLayer",
]
