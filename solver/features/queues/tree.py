"""The Volcano queue tree: specs, hierarchy, real capabilities and usage.

Built once per snapshot generation and quota mode (`QuotaMode`: the `capacity` plugin, or
`capacity-card`), memoised on the snapshot; a call copies only the usage it moves
(`QueueTree.fork`). Usage comes from the snapshot's derived totals, never from a walk over
running pods.

With `enableHierarchy` (the default in gangplan's default conf) the reference's
hierarchical rules apply (`reference/volcano.md` §3.3):

* root: capability as given (cpu/memory ≤ 0 or unset, and every missing resource, = ∞);
  realCapability = capability;
* top-down, for each child of P: capability cpu/memory ≤ 0 or unset -> P's; scalar
  resources missing -> copied from P; deserved = max(deserved, guarantee);
  `realCapability = min(max(P.real − Σ guarantees of P's children, 0) + guarantee, capability)`;
* usage (allocated = requests of running pods; inqueue; elastic) is computed at the leaf
  and added to every ancestor.

Without `enableHierarchy` every queue is a child of root and realCapability =
min(max(cluster − Σ all guarantees, 0) + guarantee, capability). Quantities use the
integer units of `solver.quantity`; the `pods` resource is never a quota.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field

from solver.model import Queue, job_queue
from solver.quantity import PODS, UNLIMITED

__all__ = [
    "DEFAULT_QUEUE",
    "ROOT",
    "QueueInfo",
    "QueueTree",
    "job_queue",
    "sum_resources",
]

ROOT = "root"
DEFAULT_QUEUE = "default"


def sum_resources(items: Iterable[dict[str, int]]) -> dict[str, int]:
    """Resource-wise sum of resource maps."""
    out: dict[str, int] = {}
    for item in items:
        for r, v in item.items():
            out[r] = out.get(r, 0) + v
    return out


@dataclass
class QueueInfo:
    """One queue with its derived numbers (dicts map resource -> integer amount)."""

    name: str
    parent: str | None  # None for root
    children: list[str] = field(default_factory=list)
    ancestors: list[str] = field(default_factory=list)  # root first, parent last
    capability: dict[str, int] = field(default_factory=dict)  # after inheritance; UNLIMITED = none
    deserved: dict[str, int] = field(default_factory=dict)
    guarantee: dict[str, int] = field(default_factory=dict)
    real_capability: dict[str, int] = field(default_factory=dict)
    allocated: dict[str, int] = field(default_factory=dict)  # running usage, subtree total
    inqueue: dict[str, int] = field(default_factory=dict)
    elastic: dict[str, int] = field(default_factory=dict)
    state: str = "Open"
    priority: int = 0
    implicit: bool = False  # not in the input (root, default)
    spec: Queue | None = None

    @property
    def leaf(self) -> bool:
        return not self.children

    def with_own_usage(self) -> QueueInfo:
        """A shallow copy whose usage maps are its own (`dataclasses.replace` costs ~10 µs a
        queue: a fork of 1,000 queues paid 10 ms)."""
        out = copy.copy(self)
        out.allocated, out.inqueue, out.elastic = (
            dict(self.allocated),
            dict(self.inqueue),
            dict(self.elastic),
        )
        return out

    def real(self, resource: str) -> int:
        return self.real_capability.get(resource, UNLIMITED)

    def share(self) -> float:
        """max over deserved dimensions of allocated/deserved; 1 when nothing is deserved."""
        ratios = [
            self.allocated.get(r, 0) / d for r, d in self.deserved.items() if d > 0 and r != PODS
        ]
        return max(ratios) if ratios else 1.0


@dataclass
class QueueTree:
    queues: dict[str, QueueInfo]
    hierarchical: bool
    broken: str | None = None  # a cycle or missing parent: every capacity gate rejects
    notes: list[str] = field(default_factory=list)

    def path(self, name: str) -> list[str]:
        """`name` and its ancestors, leaf first, root last."""
        q = self.queues[name]
        return [name, *reversed(q.ancestors)]

    def parting(self, a: str, b: str) -> tuple[str, str]:
        """The two sibling queues where the paths of `a` and `b` part (a queue itself when
        its path is a prefix of the other's): the level at which queue orders compare."""
        pa = [*self.queues[a].ancestors, a]
        pb = [*self.queues[b].ancestors, b]
        depth = 0
        while depth < min(len(pa), len(pb)) and pa[depth] == pb[depth]:
            depth += 1
        return (pa[depth] if depth < len(pa) else a), (pb[depth] if depth < len(pb) else b)

    def resources(self) -> list[str]:
        names: set[str] = set()
        for q in self.queues.values():
            names |= set(q.real_capability)
        return sorted(names - {PODS})

    def bump(self, leaf: str, attr: str, amounts: dict[str, int]) -> None:
        """Add `amounts` to `attr` (allocated, inqueue, elastic) of `leaf` and its ancestors."""
        for name in self.path(leaf):
            target: dict[str, int] = getattr(self.queues[name], attr)
            for r, v in amounts.items():
                if r != PODS and v:
                    target[r] = target.get(r, 0) + v

    def fork(self) -> QueueTree:
        """A copy whose usage (allocated, inqueue, elastic: what `bump` moves) a call may
        change without touching the memoised tree; specs and capabilities are shared."""
        return QueueTree(
            queues={name: q.with_own_usage() for name, q in self.queues.items()},
            hierarchical=self.hierarchical,
            broken=self.broken,
            notes=list(self.notes),
        )
