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

from collections.abc import Iterable
from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from solver.model._frozen import Frozen
from solver.model._interpod import LabelSelector

__all__ = [
    "HyperNode",
    "HyperNodeMember",
    "VolcanoNetworkTopology",
    "VolcanoSubGroupPolicy",
    "duplicate_name",
]


class HyperNodeMember(Frozen):
    """One `spec.members[]` entry: its type and the union of its selectors."""

    type: Literal["Node", "HyperNode"]
    exact_name: str | None = None  # exactMatch.name (None: no exactMatch)
    regex: str | None = None  # regexMatch.pattern (None: no regexMatch)
    labels: LabelSelector | None = None  # labelMatch (None: none; empty selects nothing)

    @model_validator(mode="after")
    def _selected(self) -> HyperNodeMember:
        """The CRD's rules: a selector needs one of its matches; a HyperNode member is
        chosen by its exact name only."""
        if self.exact_name is None and self.regex is None and self.labels is None:
            raise ValueError("needs an exact name, a regex or labels to select its members")
        if self.type == "HyperNode" and (
            self.regex is not None or self.labels is not None or not self.exact_name
        ):
            raise ValueError("a HyperNode member is selected by its exact name only")
        return self


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

    @field_validator("highest_tier_name")
    @classmethod
    def _one_limit(cls, name: str | None, info: ValidationInfo) -> str | None:
        if name and info.data.get("highest_tier_allowed") is not None:
            raise ValueError("a tier allowed and a tier name are mutually exclusive")
        return name


class VolcanoSubGroupPolicy(Frozen):
    """One `spec.subGroupPolicy[]` entry of a PodGroup (`SubGroupPolicySpec`)."""

    name: str = Field(min_length=1)
    sub_group_size: int | None = Field(default=None, ge=0)  # None: 1 (NewSubJobInfo)
    min_sub_groups: int = Field(default=0, ge=0)
    label_selector: LabelSelector | None = None  # None: every pod of the job
    match_label_keys: tuple[Annotated[str, Field(min_length=1)], ...] = ()
    network_topology: VolcanoNetworkTopology | None = None


def duplicate_name(names: Iterable[str]) -> int | None:
    """The index of the first name listed a second time (names must be unique: HyperNodes,
    sub-group policies, topology layers); None when each is listed once."""
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name in seen:
            return i
        seen.add(name)
    return None
