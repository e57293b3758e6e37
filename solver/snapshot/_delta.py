"""A change to a snapshot (one `UpdateSnapshot`), as plain data."""

from __future__ import annotations

from dataclasses import dataclass, field

from solver.model import DisruptionBudget, Gang, NetworkTopology, Node, Pod, Queue
from solver.snapshot._columns import RunningPod

__all__ = ["KEEP", "Delta", "DeltaError"]


class Keep:
    def __repr__(self) -> str:
        return "KEEP"


KEEP = Keep()
"""`Delta.topology` default: leave the network topology as it is."""


@dataclass(frozen=True)
class Delta:
    """Applied in this order: removals, upserts, bindings, topology; all or nothing.

    A pod upsert is a `Pod` (pending, or bound when `node_name` is set) or a `RunningPod`.
    `topology` replaces the network topology (None removes it). `observed` is the new
    generation's time (`Snapshot.observed`).
    """

    remove_nodes: tuple[str, ...] = ()
    remove_pods: tuple[str, ...] = ()
    remove_gangs: tuple[str, ...] = ()
    remove_queues: tuple[str, ...] = ()
    upsert_nodes: tuple[Node, ...] = ()
    upsert_gangs: tuple[Gang, ...] = ()
    upsert_pods: tuple[Pod | RunningPod, ...] = ()
    upsert_queues: tuple[Queue, ...] = ()
    bindings: tuple[tuple[str, str], ...] = ()  # (pod key, node name)
    topology: NetworkTopology | Keep | None = field(default=KEEP)
    observed: float | None = None  # when the change was seen (seconds); None: now
    upsert_budgets: tuple[DisruptionBudget, ...] = ()  # PodDisruptionBudgets, by namespace/name
    remove_budgets: tuple[str, ...] = ()


class DeltaError(ValueError):
    """The delta does not apply; `violations` are (field, description) pairs, the field
    named as in `Delta` (and UpdateSnapshotRequest): `remove_pods[3]`, `bindings[0].node`."""

    def __init__(self, violations: list[tuple[str, str]]) -> None:
        self.violations = violations
        first = "; ".join(f"{f}: {d}" for f, d in violations[:3])
        more = f" (and {len(violations) - 3} more)" if len(violations) > 3 else ""
        super().__init__(f"invalid update: {first}{more}")
