"""The object kinds the scheduler front end watches: every kind gangplan's reader reads.

Each entry names an API group, the versions gangplan reads (the first one the cluster
serves is used), the resource's plural and kind, and whether it is namespaced. Core kinds
(`""` group) are always present; every other one is looked up in the API's discovery, so a
cluster without Volcano's, Kueue's or Koordinator's CRDs is not an error: the kind is left
out with a note.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CONTEXT_KINDS", "KINDS", "KUEUE_QUEUE_KINDS", "TOPOLOGY_KINDS", "Kind"]


@dataclass(frozen=True)
class Kind:
    group: str
    versions: tuple[str, ...]
    plural: str
    kind: str
    namespaced: bool

    @property
    def label(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def api_version(self, version: str) -> str:
        return f"{self.group}/{version}" if self.group else version


KINDS: tuple[Kind, ...] = (
    Kind("", ("v1",), "nodes", "Node", False),
    Kind("", ("v1",), "pods", "Pod", True),
    Kind("", ("v1",), "namespaces", "Namespace", False),
    Kind("scheduling.k8s.io", ("v1",), "priorityclasses", "PriorityClass", False),
    # the Kubernetes Workload API: built in behind its feature gate, no CRD
    Kind("scheduling.k8s.io", ("v1beta1", "v1alpha3", "v1alpha2"), "workloads", "Workload", True),
    Kind("scheduling.k8s.io", ("v1beta1", "v1alpha3", "v1alpha2"), "podgroups", "PodGroup", True),
    Kind("scheduling.volcano.sh", ("v1beta1",), "podgroups", "PodGroup", True),
    Kind("scheduling.volcano.sh", ("v1beta1",), "queues", "Queue", False),
    Kind("scheduling.sigs.k8s.io", ("v1alpha1",), "podgroups", "PodGroup", True),
    Kind("scheduling.x-k8s.io", ("v1alpha1",), "podgroups", "PodGroup", True),
    Kind("scheduling.godel.kubewharf.io", ("v1alpha1",), "podgroups", "PodGroup", True),
    Kind("kueue.x-k8s.io", ("v1beta2", "v1beta1", "v1alpha1"), "topologies", "Topology", False),
    Kind("kueue.x-k8s.io", ("v1beta2", "v1beta1"), "resourceflavors", "ResourceFlavor", False),
    Kind("kueue.x-k8s.io", ("v1beta2", "v1beta1"), "clusterqueues", "ClusterQueue", False),
    Kind("kueue.x-k8s.io", ("v1beta2", "v1alpha1"), "cohorts", "Cohort", False),
    Kind("kueue.x-k8s.io", ("v1beta2", "v1beta1"), "localqueues", "LocalQueue", True),
    Kind("topology.volcano.sh", ("v1alpha1",), "hypernodes", "HyperNode", False),
    Kind("scheduling.run.ai", ("v2alpha2",), "podgroups", "PodGroup", True),
    Kind("scheduling.run.ai", ("v2",), "queues", "Queue", False),
    Kind("kai.scheduler", ("v1alpha1",), "topologies", "Topology", False),
    Kind(
        "scheduling.koordinator.sh",
        ("v1alpha1",),
        "clusternetworktopologies",
        "ClusterNetworkTopology",
        False,
    ),
)

# Kinds read again whenever a pod, node or gang object changes (few objects each): what
# a pod's priority, gang (a KAI PodGroup's Topology levels), affinity namespaces and queue
# (a Kueue ClusterQueue's flavors: their ResourceFlavors' node labels) are resolved against.
KUEUE_QUEUE_KINDS = frozenset({"ClusterQueue", "Cohort", "LocalQueue"})
CONTEXT_KINDS = frozenset(
    {"Namespace", "PriorityClass", "Queue", "Workload", "Topology", "ResourceFlavor",
     *KUEUE_QUEUE_KINDS}
)  # fmt: skip
# Kinds that make up the network topology; any change re-sends it whole.
TOPOLOGY_KINDS = frozenset({"Topology", "ResourceFlavor", "HyperNode", "ClusterNetworkTopology"})
