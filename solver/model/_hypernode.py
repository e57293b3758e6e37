"""Volcano network-topology vocabulary: `HyperNode` trees and a job's `networkTopology`.

* `HyperNode` (`topology.volcano.sh/v1alpha1`, cluster-scoped): `spec.tier` (lower = closer),
  `spec.tierName`, `spec.members[]` of type `Node` or `HyperNode`, each chosen by
  `exactMatch.name`, `regexMatch.pattern` (a Go regexp searched, unanchored, in node names)
  and/or `labelMatch` (a label selector over node labels; an empty one selects nothing);
  a member's selectors are a union, as `member_selector.go` `GetMembers` builds it.
* `subGroupPolicy[]` of a Volcano PodGroup: sub-groups of its pods (one per distinct
  tuple of `matchLabelKeys` values, among the pods its `labelSelector` selects), each
  placing `subGroupSize` pods inside one HyperNode allowed by its own `networkTopology`;
  the job needs `minSubGroups` such sub-groups per policy.
* `networkTopology` of a Volcano PodGroup or Job: `mode` hard|soft and either
  `highestTierAllowed` or `highestTierName` (the tier of the HyperNodes whose `tierName`
  it is).

The tree built from them lives in `solver.features.topology.hypernode.tree`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from solver.model._frozen import Frozen
from solver.model._interpod import LabelSelector

__all__ = ["HyperNode", "HyperNodeMember", "VolcanoNetworkTopology", "VolcanoSubGroupPolicy"]


class HyperNodeMember(Frozen):
    """One `spec.members[]` entry: its type and the union of its selectors."""

    type: Literal["Node", "HyperNode"]
    exact_name: str | None = None  # exactMatch.name (None: no exactMatch)
    regex: str | None = None  # regexMatch.pattern (None: no regexMatch)
    labels: LabelSelector | None = None  # labelMatch (None: none; empty selects nothing)


class HyperNode(Frozen):
    """A `HyperNode` object as written (its nodes are resolved against a node generation)."""

    name: str = Field(min_length=1)
    tier: int = Field(ge=0)
    tier_name: str = ""
    members: tuple[HyperNodeMember, ...] = ()


class VolcanoNetworkTopology(Frozen):
    """A PodGroup's (or Volcano Job's) `spec.networkTopology`."""

    mode: Literal["hard", "soft"] = "hard"
    highest_tier_allowed: int | None = Field(default=None, ge=0)
    highest_tier_name: str | None = None

    @model_validator(mode="after")
    def _one_limit(self) -> VolcanoNetworkTopology:
        if self.highest_tier_allowed is not None and self.highest_tier_name:
            raise ValueError("highestTierAllowed and highestTierName are mutually exclusive")
        return self


class VolcanoSubGroupPolicy(Frozen):
    """One `spec.subGroupPolicy[]` entry of a PodGroup (`SubGroupPolicySpec`)."""

    name: str = Field(min_length=1)
    sub_group_size: int | None = Field(default=None, ge=0)  # None: 1 (NewSubJobInfo)
    min_sub_groups: int = Field(default=0, ge=0)
    label_selector: LabelSelector | None = None  # None: every pod of the job
    match_label_keys: tuple[str, ...] = ()
    network_topology: VolcanoNetworkTopology | None = None
