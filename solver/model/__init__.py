"""The domain model: what the cluster and the workload are, independent of any CRD dialect.

Built from Kubernetes manifests by `solver.kube` (and, later, from protobuf messages by
`server`). Every quantity is already an integer (milli-CPU, bytes, device counts).
Policies read this model; engines never do.
"""

from solver.model._cluster import Node, NodeSelectorRequirement, NodeSelectorTerm, Taint, Toleration
from solver.model._snapshot import ClusterModel
from solver.model._topology import (
    CLUSTER_LAYER,
    MUST_GATHER,
    NODE_LAYER,
    PREFER_GATHER,
    GatherRule,
    GatherSpec,
    GatherSpecError,
    JobAffinity,
    JobAffinityError,
    NetworkTopology,
    SortRule,
    TopologyLayer,
    parse_gather_spec,
    parse_job_affinity,
)
from solver.model._workload import Gang, MatchPolicy, Pod, Queue

__all__ = [
    "CLUSTER_LAYER",
    "MUST_GATHER",
    "NODE_LAYER",
    "PREFER_GATHER",
    "ClusterModel",
    "Gang",
    "GatherRule",
    "GatherSpec",
    "GatherSpecError",
    "JobAffinity",
    "JobAffinityError",
    "MatchPolicy",
    "NetworkTopology",
    "Node",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "Pod",
    "Queue",
    "SortRule",
    "Taint",
    "Toleration",
    "TopologyLayer",
    "parse_gather_spec",
    "parse_job_affinity",
]
