"""Builders for Volcano HyperNode tests: HyperNode objects, PodGroups with networkTopology."""

from __future__ import annotations

from typing import Any

from solver import SchedulerConf, schedule
from solver.config import PluginConf, TierConf
from solver.decision import Decision
from solver.model import ClusterModel
from tests.builders import model, node, pod

Objects = list[dict[str, Any]]

NTA = "network-topology-aware"


def conf(*plugins: str, **arguments: Any) -> SchedulerConf:
    """Volcano's test tiers: gang, predicates (and what is listed), network-topology-aware."""
    names = ["gang", "predicates", "network-topology", *plugins, NTA]
    return SchedulerConf(
        tiers=(
            TierConf(
                plugins=[PluginConf(name=n, arguments=arguments if n == NTA else {}) for n in names]
            ),
        )
    )


def hypernode(
    name: str,
    tier: int,
    nodes: tuple[str, ...] = (),
    children: tuple[str, ...] = (),
    *,
    regex: str | None = None,
    labels: dict[str, str] | None = None,
    tier_name: str = "",
) -> dict[str, Any]:
    members: list[dict[str, Any]] = [
        {"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in nodes
    ]
    members += [{"type": "HyperNode", "selector": {"exactMatch": {"name": c}}} for c in children]
    if regex is not None:
        members.append({"type": "Node", "selector": {"regexMatch": {"pattern": regex}}})
    if labels is not None:
        members.append({"type": "Node", "selector": {"labelMatch": {"matchLabels": labels}}})
    spec: dict[str, Any] = {"tier": tier, "members": members}
    if tier_name:
        spec["tierName"] = tier_name
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": spec,
    }


def vc_group(
    name: str,
    min_member: int,
    mode: str | None = "hard",
    tier: int | None = None,
    tier_name: str | None = None,
    min_resources: dict[str, str] | None = None,
    namespace: str = "c1",
) -> dict[str, Any]:
    """`util.BuildPodGroupWithNetWorkTopologies` (mode "" = no networkTopology)."""
    spec: dict[str, Any] = {"minMember": min_member, "queue": "default"}
    if mode:
        topology: dict[str, Any] = {"mode": mode}
        if tier is not None:
            topology["highestTierAllowed"] = tier
        if tier_name is not None:
            topology["highestTierName"] = tier_name
        spec["networkTopology"] = topology
    if min_resources:
        spec["minResources"] = min_resources
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def task(
    name: str, group: str, cpu: str, memory: str, on: str | None = None, **selector: str
) -> dict[str, Any]:
    b = (
        pod(name, "c1")
        .annotate("scheduling.k8s.io/group-name", group)
        .requests(cpu=cpu, memory=memory)
    )
    if selector:
        b = b.selector(**selector)
    if on:
        b = b.on(on)
    return b.obj()


def nodes(*specs: tuple[str, str, str]) -> Objects:
    return [node(n).cpu(cpu).memory(mem).pods(10).obj() for n, cpu, mem in specs]


def run(objects: Objects, engine: str, scheduler_conf: SchedulerConf | None = None) -> Decision:
    return schedule(cluster(objects), scheduler_conf or conf(), engine=engine, workers=1, seed=0)


def cluster(objects: Objects) -> ClusterModel:
    return model(*objects)


def hypernode_count(decision: Decision, groups: dict[str, tuple[str, ...]]) -> list[int]:
    """`ExpectBindNumsInHyperNode`: placed pods per HyperNode (node lists), in order."""
    placed = list(decision.placed.values())
    return sorted((sum(n in members for n in placed) for members in groups.values()), reverse=True)


FOUR = nodes(
    ("s0-n1", "2", "4Gi"), ("s0-n2", "2", "4Gi"), ("s1-n3", "2", "4Gi"), ("s1-n4", "2", "4Gi")
)
"""Four 2-cpu nodes, two per tier-1 leaf (`TestAllocateWithPartitionPolicyNetworkTopology`)."""
TWO_TIERS = [
    hypernode("s0", 1, ("s0-n1", "s0-n2")),
    hypernode("s1", 1, ("s1-n3", "s1-n4")),
    hypernode("s2", 2, children=("s0", "s1")),
]
"""s2 (tier 2) over the leaves s0 and s1 (tier 1)."""
