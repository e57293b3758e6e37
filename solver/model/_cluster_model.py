"""The whole input of one scheduling question: cluster, workload, queues, topology."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Any, Self

from pydantic import Field, model_validator

from solver.model._cluster import Node
from solver.model._disruption import DisruptionBudget
from solver.model._frozen import Frozen
from solver.model._topology import NetworkTopology
from solver.model._workload import Gang, Pod, Queue


class ClusterModel(Frozen):
    """The input as read (manifests or a protobuf cluster), immutable; the state calls are
    answered against is `solver.snapshot.Snapshot`, built from it. Nodes and pods are
    sorted by name so every ordering is stable."""

    nodes: tuple[Node, ...] = ()
    pods: tuple[Pod, ...] = ()
    gangs: dict[str, Gang] = Field(default_factory=dict)
    queues: dict[str, Queue] = Field(default_factory=dict)
    topology: NetworkTopology | None = None
    notes: tuple[str, ...] = Field(default=(), description="what the reader skipped, and why")
    disruption_budgets: dict[str, DisruptionBudget] = Field(
        default_factory=dict, description="PodDisruptionBudgets by `namespace/name`"
    )
    observed: str | None = Field(
        default=None,
        description="RFC 3339 time the cluster was seen (usage histories count up to it); "
        "unset: when it is read",
    )

    @model_validator(mode="after")
    def _consistent(self) -> ClusterModel:
        if len(self.node_by_name) != len(self.nodes):
            raise ValueError("node names must be unique")
        keys = [p.key for p in self.pods]
        if len(set(keys)) != len(keys):
            raise ValueError("pod keys must be unique")
        for pod in self.pods:
            if pod.gang not in self.gangs:
                raise ValueError(f"pod {pod.key} refers to unknown gang {pod.gang}")
        return self

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy without the cached derived values below: they may not hold for `update`."""
        copy = super().model_copy(update=update, deep=deep)
        for name, attr in vars(ClusterModel).items():
            if isinstance(attr, cached_property):
                copy.__dict__.pop(name, None)
        return copy

    @cached_property
    def node_by_name(self) -> dict[str, Node]:
        return {n.name: n for n in self.nodes}

    @cached_property
    def pod_by_key(self) -> dict[str, Pod]:
        return {p.key: p for p in self.pods}

    @cached_property
    def pending_pods(self) -> tuple[Pod, ...]:
        return tuple(p for p in self.pods if p.pending)

    @cached_property
    def bound_pods(self) -> tuple[Pod, ...]:
        return tuple(p for p in self.pods if p.bound)
