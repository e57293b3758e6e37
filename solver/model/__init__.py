"""The domain model: what the cluster and the workload are, independent of any CRD dialect.

Built from Kubernetes manifests by `solver.kube` (and, later, from protobuf messages by
`server`). Every quantity is already an integer (milli-CPU, bytes, device counts).
Policies read this model; engines never do.
"""

from solver.model._cards import (
    CARD_NAME,
    CARD_QUOTA,
    CARD_REQUEST,
    CardDemand,
    CardError,
    ClusterCards,
    card_alternatives,
    card_demand,
    discover_cards,
    node_cards,
    parse_quota,
)
from solver.model._cluster import Node, NodeSelectorRequirement, NodeSelectorTerm, Taint, Toleration
from solver.model._hypernode import HyperNode, HyperNodeMember, VolcanoNetworkTopology
from solver.model._interpod import (
    InterPodTerms,
    LabelRequirement,
    LabelSelector,
    PodAffinityTerm,
    PreferredSchedulingTerm,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)
from solver.model._selection import DEFAULT_SCHEDULER_NAMES, PodSelection
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
    parent_cycle,
    parse_gather_spec,
    parse_job_affinity,
)
from solver.model._workload import (
    QUEUE_ANNOTATION,
    Dialect,
    Gang,
    MatchPolicy,
    Pod,
    Queue,
    job_queue,
)

__all__ = [
    "CARD_NAME",
    "CARD_QUOTA",
    "CARD_REQUEST",
    "CLUSTER_LAYER",
    "DEFAULT_SCHEDULER_NAMES",
    "MUST_GATHER",
    "NODE_LAYER",
    "PREFER_GATHER",
    "QUEUE_ANNOTATION",
    "CardDemand",
    "CardError",
    "ClusterCards",
    "ClusterModel",
    "Dialect",
    "Gang",
    "GatherRule",
    "GatherSpec",
    "GatherSpecError",
    "HyperNode",
    "HyperNodeMember",
    "InterPodTerms",
    "JobAffinity",
    "JobAffinityError",
    "LabelRequirement",
    "LabelSelector",
    "MatchPolicy",
    "NetworkTopology",
    "Node",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "Pod",
    "PodAffinityTerm",
    "PodSelection",
    "PreferredSchedulingTerm",
    "Queue",
    "SortRule",
    "Taint",
    "Toleration",
    "TopologyLayer",
    "TopologySpreadConstraint",
    "VolcanoNetworkTopology",
    "WeightedPodAffinityTerm",
    "card_alternatives",
    "card_demand",
    "discover_cards",
    "job_queue",
    "node_cards",
    "parent_cycle",
    "parse_gather_spec",
    "parse_job_affinity",
    "parse_quota",
]
