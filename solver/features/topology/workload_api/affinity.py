"""The Workload API's and KAI-Scheduler's PodGroup topology, read as job-level affinity.

A Kubernetes Workload API PodGroup with a topology constraint is a Godel unit with one
required key, its domains tried tightest first (KEP-5732's placement score: NodeResourcesFit's
least room first); a KAI PodGroup is one with its required level as that key and the levels
from its preferred one up as preferred terms, tried least GPU room first (KAI's `sortTree`
packing, `Gang.topology_pack`). Godel's own `podGroupAffinity` is read in `godel/`.
"""

from __future__ import annotations

from solver.model import Gang, JobAffinity, SortRule

__all__ = ["TIGHTEST_FIRST", "is_topology_unit", "pod_group_affinity", "rule_words", "source"]

WORKLOAD_API = "scheduling.k8s.io"

# KEP-5732 scores feasible domains by NodeResourcesFit's tightest fit: least room first.
TIGHTEST_FIRST = (SortRule(resource="CPU", dimension="Available", order="Ascending"),)


def is_topology_unit(gang: Gang) -> bool:
    """The PodGroup carries a Workload API or KAI topology (always on: kube-scheduler's own
    and KAI's, not a plugin a conf turns off)."""
    return gang.topology_key is not None or bool(gang.preferred_keys or gang.topology_sub_groups)


def pod_group_affinity(gang: Gang) -> JobAffinity | None:
    """The PodGroup's topology as job-affinity terms; None when it has none."""
    if not (gang.topology_key or gang.preferred_keys or gang.topology_sub_groups):
        return None
    rules = tuple(
        SortRule(resource=r, dimension="Available", order="Ascending") for r in gang.topology_pack
    )
    return JobAffinity(
        required=(gang.topology_key,) if gang.topology_key else (),
        preferred=gang.preferred_keys,
        sort_rules=rules or TIGHTEST_FIRST,
    )


def rule_words(gang: Gang) -> str | None:
    """The one-domain rule's source in the words of the dialect that asked for it (None:
    not this package's dialects)."""
    if gang.dialect == WORKLOAD_API:
        return "Workload API schedulingConstraints.topology"
    if gang.topology_key:
        return "KAI requiredTopologyLevel"
    return None


def source(gang: Gang) -> str | None:
    """What asked for the unit's domains, as its reasons name it (None: not this package's)."""
    if gang.topology_key:
        return f"PodGroup topology {gang.topology_key}"
    if gang.preferred_keys:
        return f"PodGroup preferred topology {gang.preferred_keys[-1]}"
    if gang.topology_sub_groups:
        return "PodGroup sub-groups' topology"
    return None
