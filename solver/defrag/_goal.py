"""What a defragmentation plan is asked for: the goal, the budget and who is protected.

A *domain* is one value of a node label (`level`; `node`: every node is its own domain),
restricted to nodes of one shape when `shape` is given (every node of the domain has that
allocatable). The goal frees domains — no pod left on their nodes but DaemonSet pods and
pods already terminating — either `count` of them with the fewest pods moved, or as many as
the budget allows. With `gang` the goal is room for that pending gang instead: the fewest
pods moved so that the scheduler places it (KAI-Scheduler's consolidation, offline).

`goal_of(...)` builds a goal from what the CLI and the RPC receive (quantities as text);
an invalid field raises `GoalError`, which names it (the CLI prints its flag, the server
its field path).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from solver.errors import InputError
from solver.quantity import QuantityError, to_int

__all__ = ["MAX_PODS", "NODE_LEVEL", "DefragGoal", "GoalError", "goal_of"]

NODE_LEVEL = "node"  # the level whose domains are single nodes
MAX_PODS = 100_000
_NO_LABELS: Mapping[str, str] = MappingProxyType({})
_NO_SHAPE: Mapping[str, int] = MappingProxyType({})


class GoalError(InputError):
    def __init__(self, name: str, reason: str) -> None:
        self.field, self.reason = name, reason
        super().__init__(f"defrag goal: {name}: {reason}")


@dataclass(frozen=True)
class DefragGoal:
    level: str = NODE_LEVEL  # a node label key, or `node`
    count: int | None = None  # free this many domains (None: as many as the budget allows)
    max_pods: int = 100  # pods moved, at most (a moved gang counts all its pods)
    max_gangs: int | None = None  # units moved (a gang or a pod of its own), at most
    max_cost_per_domain: int | None = None  # a domain costing more pods than this stays
    shape: Mapping[str, int] = field(default_factory=lambda: _NO_SHAPE)  # resource -> alloc
    protect_priority: int | None = None  # pods at or above this priority never move
    protect_namespaces: frozenset[str] = frozenset()
    protect_labels: Mapping[str, str] = field(default_factory=lambda: _NO_LABELS)
    topology_keys: tuple[str, ...] = ()  # more node labels that say where, not what
    gang: str | None = None  # room for this pending gang instead of freeing domains

    def __post_init__(self) -> None:
        checks = (
            ("level", bool(self.level.strip()) and len(self.level) <= 317, "a node label key, or `node`"),
            ("count", self.count is None or 1 <= self.count <= MAX_PODS, f"between 1 and {MAX_PODS:,}"),
            ("max_pods", 0 <= self.max_pods <= MAX_PODS, f"between 0 and {MAX_PODS:,}"),
            ("max_gangs", self.max_gangs is None or 0 <= self.max_gangs <= MAX_PODS, f"between 0 and {MAX_PODS:,}"),
            ("gang", self.gang is None or (0 < len(self.gang) <= 317 and "/" in self.gang), "a pending gang as namespace/name"),
            ("max_cost_per_domain", self.max_cost_per_domain is None or 0 <= self.max_cost_per_domain <= MAX_PODS, f"between 0 and {MAX_PODS:,}"),
        )  # fmt: skip
        for name, ok, what in checks:
            if not ok:
                raise GoalError(name, what)


def goal_of(
    *,
    level: str = "",
    count: int | None = None,
    max_pods: int | None = None,
    max_gangs: int | None = None,
    max_cost_per_domain: int | None = None,
    shape: Mapping[str, str] | None = None,
    protect_priority: int | None = None,
    protect_namespaces: tuple[str, ...] = (),
    protect_labels: Mapping[str, str] | None = None,
    topology_keys: tuple[str, ...] = (),
    gang: str | None = None,
) -> DefragGoal:
    """A goal from text as the front doors receive it (quantities such as `8` or `80Gi`)."""
    parsed: dict[str, int] = {}
    for resource, text in (shape or {}).items():
        try:
            parsed[resource] = to_int(resource, text)
        except QuantityError as err:
            raise GoalError(f"shape[{resource}]", str(err)) from None
    return DefragGoal(
        level=level or NODE_LEVEL,
        count=count,
        max_pods=100 if max_pods is None else max_pods,
        max_gangs=max_gangs,
        max_cost_per_domain=max_cost_per_domain,
        shape=MappingProxyType(parsed),
        protect_priority=protect_priority,
        protect_namespaces=frozenset(protect_namespaces),
        protect_labels=MappingProxyType(dict(protect_labels or {})),
        topology_keys=tuple(topology_keys),
        gang=gang or None,
    )
