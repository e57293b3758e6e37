"""Nodes and the scheduling vocabulary pods use to choose among them."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from solver.model._frozen import Frozen

TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class Taint(Frozen):
    key: str
    value: str = ""
    effect: TaintEffect


class Toleration(Frozen):
    key: str = Field(default="", description="empty with operator Exists tolerates every taint")
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str = ""
    effect: Literal["", "NoSchedule", "PreferNoSchedule", "NoExecute"] = Field(
        default="", description="empty matches every effect"
    )


class NodeSelectorRequirement(Frozen):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: tuple[str, ...] = ()


class NodeSelectorTerm(Frozen):
    """Requirements ANDed together; a term with none matches no node (as in Kubernetes)."""

    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    # matchFields supports only `metadata.name`, matched against the node name.
    match_fields: tuple[NodeSelectorRequirement, ...] = ()


class Node(Frozen):
    name: str
    labels: dict[str, str] = Field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    allocatable: dict[str, int] = Field(
        default_factory=dict, description="status.allocatable in integer units; cpu in milli"
    )
    ready: bool = Field(default=True, description="Ready condition True, or no conditions given")
    unschedulable: bool = Field(default=False, description="spec.unschedulable (cordoned)")
