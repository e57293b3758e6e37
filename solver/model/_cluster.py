"""Nodes and the scheduling vocabulary pods use to choose among them."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from solver.model._frozen import Frozen
from solver.model._labels import values_suit_operator

TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class Taint(Frozen):
    key: str = Field(min_length=1)
    value: str = ""
    effect: TaintEffect


class Toleration(Frozen):
    key: str = Field(default="", description="empty with operator Exists tolerates every taint")
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str = ""
    effect: Literal["", "NoSchedule", "PreferNoSchedule", "NoExecute"] = Field(
        default="", description="empty matches every effect"
    )

    @field_validator("operator")
    @classmethod
    def _key_or_exists(cls, operator: str, info: ValidationInfo) -> str:
        """`ValidateTolerations`: an empty key matches every key, with operator Exists only."""
        if operator != "Exists" and not info.data.get("key"):
            raise ValueError("must be Exists when the key is empty (every key and value)")
        return operator

    @field_validator("value")
    @classmethod
    def _no_value_with_exists(cls, value: str, info: ValidationInfo) -> str:
        if value and info.data.get("operator") == "Exists":
            raise ValueError("must be empty when the operator is Exists")
        return value


class NodeSelectorRequirement(Frozen):
    key: str = Field(min_length=1)
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: tuple[str, ...] = ()

    _values = field_validator("values")(values_suit_operator)


class FieldSelectorRequirement(NodeSelectorRequirement):
    """A `matchFields` requirement: kube-scheduler supports only `metadata.name`."""

    @field_validator("key")
    @classmethod
    def _node_name(cls, key: str) -> str:
        if key != "metadata.name":
            raise ValueError("only metadata.name is supported in a node's field selector")
        return key


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
