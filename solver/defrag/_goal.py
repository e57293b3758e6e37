"""What a defragmentation plan is asked for: the goal, the budget and who is protected.

A *domain* is one value of a node label (`level`; `node`: every node is its own domain),
restricted to nodes of one shape when `shape` is given (every node of the domain has that
allocatable). The goal frees domains — no pod left on their nodes but DaemonSet pods and
pods already terminating — either `count` of them with the fewest pods moved, or as many as
the budget allows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from solver.errors import InputError

__all__ = ["NODE_LEVEL", "DefragGoal"]

NODE_LEVEL = "node"  # the level whose domains are single nodes
MAX_PODS = 100_000
_NO_LABELS: Mapping[str, str] = MappingProxyType({})
_NO_SHAPE: Mapping[str, int] = MappingProxyType({})


@dataclass(frozen=True)
class DefragGoal:
    level: str = NODE_LEVEL  # a node label key, or `node`
    count: int | None = None  # free this many domains (None: as many as the budget allows)
    max_pods: int = 100  # pods moved, at most (a moved gang counts all its pods)
    max_gangs: int | None = None  # units moved (a gang or a pod of its own), at most
    max_cost_per_domain: int | None = None  # a domain costing more pods than this stays
    shape: Mapping[str, int] = field(default_factory=lambda: _NO_SHAPE)  # resource -> allocatable
    protect_priority: int | None = None  # pods at or above this priority never move
    protect_namespaces: frozenset[str] = frozenset()
    protect_labels: Mapping[str, str] = field(default_factory=lambda: _NO_LABELS)
    topology_keys: tuple[str, ...] = ()  # more node labels that say where, not what

    def __post_init__(self) -> None:
        checks = (
            ("level", bool(self.level.strip())),
            ("count", self.count is None or self.count >= 1),
            ("max_pods", 0 <= self.max_pods <= MAX_PODS),
            ("max_gangs", self.max_gangs is None or self.max_gangs >= 0),
            (
                "max_cost_per_domain",
                self.max_cost_per_domain is None or self.max_cost_per_domain >= 0,
            ),
            ("shape", all(v >= 0 for v in self.shape.values())),
        )
        for name, ok in checks:
            if not ok:
                raise InputError(f"defrag goal: {name}: {_WHAT[name]}")


_WHAT = {
    "level": "a node label key, or `node`",
    "count": "at least 1",
    "max_pods": f"between 0 and {MAX_PODS:,}",
    "max_gangs": "at least 0",
    "max_cost_per_domain": "at least 0",
    "shape": "quantities at least 0",
}
