"""The Decision: what gangplan answers, engine-neutral and keyed by Kubernetes names.

Plain data, importable without numpy or OR-Tools (the thin client reads it).
`Decision.to_dict()` is the stable JSON shape of `gangplan schedule -o json` (fields are
added, never renamed). `solver.decide` builds it from an engine's answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "CERTIFICATE_KINDS",
    "Certificate",
    "Decision",
    "GroupOutcome",
    "KueueFlavorAssignment",
    "KueueTopologyAssignment",
    "Move",
    "Placement",
    "Preemption",
    "QueueUse",
    "Victim",
]

INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class Placement:
    node: str | None
    card: str | None = None  # chosen GPU card type (capacity-card)
    nominated: str | None = None  # status.nominatedNodeName after preemption
    reason: str = ""  # why not, when node is None
    devices: tuple[int, ...] = ()  # GPU device indices on the node (device sharing)
    annotations: dict[str, str] = field(default_factory=dict, hash=False)  # device plugin
    #   assignment annotation, in the pod's dialect


@dataclass(frozen=True)
class GroupOutcome:
    enqueued: bool
    placed: bool
    reason: str = ""


CERTIFICATE_KINDS = {
    "capacity": "a resource summed over the gang's eligible nodes is short (proven)",
    "pods": "the eligible nodes take fewer of the gang's pods than it needs (proven)",
    "predicates": "no node passes the gang's filters: selectors, taints, affinity (proven)",
    "domain": "no single domain of its required topology level has room (proven)",
    "quota": "its queue's limit leaves less than the gang needs (proven)",
    "anti-affinity": "its pods repel each other and too few domains have room (proven)",
    "devices": "too few GPU devices have the share its pods ask for (proven)",
    "rules": "CP-SAT proved the named rules together leave no placement (proven)",
    "blocked": "a rule of the gang itself rules it out this cycle (proven)",
    "competition": "it fits alone; the room went to the gangs named (proven by a placement)",
    "time": "the call's time ran out before its turn (not a proof)",
    "unproven": "no proof in the time given; the counted reason stands",
}
"""Certificate kinds: the constraint that binds, and what the certificate proves."""


@dataclass(frozen=True)
class Certificate:
    """Why a gang is not placed, as a proof: one sentence naming the constraint that binds
    and the numbers that prove it, engine-independent. `proven`: no placement of the gang
    exists in the state before this cycle (for `competition`: the gang alone was placed,
    so it is the gangs ahead of it that took the room)."""

    kind: str  # a key of CERTIFICATE_KINDS
    constraint: str  # what binds, in the dialect's words (a resource, a level, a queue)
    sentence: str
    proven: bool
    unit: str = ""  # the resource `needed`, `offered` and `places` count (base units: cpu
    #   in milli, memory in bytes); "" for pods
    needed: int = 0
    offered: int = 0
    places: tuple[tuple[str, int], ...] = ()  # the best nodes / domains and what they offer
    rivals: tuple[str, ...] = ()  # competition: the gangs placed that took its room

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "constraint": self.constraint,
            "sentence": self.sentence,
            "proven": self.proven,
            "unit": self.unit,
            "needed": self.needed,
            "offered": self.offered,
            "places": [{"name": n, "offers": v} for n, v in self.places],
            "rivals": list(self.rivals),
        }


@dataclass(frozen=True)
class KueueTopologyAssignment:
    """Kueue's `TopologyAssignment` of one placed pod set: its levels (hostname alone when
    the lowest level is hostname) and the pods per domain, sorted by level values."""

    podgroup: str
    pod_set: str
    levels: tuple[str, ...]
    domains: tuple[tuple[tuple[str, ...], int], ...]  # (values per level, count)

    def to_dict(self) -> dict[str, Any]:
        return {
            "podgroup": self.podgroup,
            "podSet": self.pod_set,
            "levels": list(self.levels),
            "domains": [{"values": list(v), "count": c} for v, c in self.domains],
        }


@dataclass(frozen=True)
class KueueFlavorAssignment:
    """Kueue's admission of one placed pod set: its ClusterQueue and, per resource, the
    flavor whose quota it uses (what Kueue writes in the Workload's `status.admission`)."""

    podgroup: str
    pod_set: str
    cluster_queue: str
    flavors: tuple[tuple[str, str], ...]  # (resource, flavor), sorted

    def to_dict(self) -> dict[str, Any]:
        return {
            "podgroup": self.podgroup,
            "podSet": self.pod_set,
            "clusterQueue": self.cluster_queue,
            "flavors": dict(self.flavors),
        }


@dataclass(frozen=True)
class Victim:
    pod: str
    node: str
    message: str  # the DisruptionTarget condition message
    cause: Literal["preemption", "reclaim"] = "preemption"
    queue: str = ""  # the reclaiming queue (reclaim only)


@dataclass(frozen=True)
class QueueUse:
    """One queue's quota in an answer: the allocate gate's limit on each resource it limits
    (deserved under `proportion`, realCapability under `capacity` / `capacity-card`, the
    Queue's limit under KAI's `proportion`, quota for its non-preemptible rows), what
    its running pods held at the start of the call, and what the answer places in it."""

    queue: str
    limit: dict[str, int]
    allocated: dict[str, int]
    placed: dict[str, int]

    def share(self, after: bool = False) -> float:
        """The largest (allocated [+ placed]) / limit over the limited resources; 0 without."""
        ratios = [
            (self.allocated.get(r, 0) + (self.placed.get(r, 0) if after else 0)) / v
            for r, v in self.limit.items()
            if v > 0
        ]
        return max(ratios, default=0.0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "queue": self.queue,
            "limit": dict(self.limit),
            "allocated": dict(self.allocated),
            "placed": dict(self.placed),
            "shareBefore": round(self.share(), 6),
            "shareAfter": round(self.share(after=True), 6),
        }


@dataclass(frozen=True)
class Decision:
    placements: dict[str, Placement]
    podgroups: dict[str, GroupOutcome]
    engine: str
    status: str
    objective: int
    tiers: dict[str, int]
    seconds: float
    victims: tuple[Victim, ...] = ()
    bound: float | None = None
    notes: tuple[str, ...] = field(default=())
    stats: dict[str, float | int] = field(default_factory=dict)
    minimized: tuple[str, ...] = ()  # the fewer-is-better tiers (the others: higher is better)
    topology_assignments: tuple[KueueTopologyAssignment, ...] = ()  # Kueue TAS pod sets
    flavor_assignments: tuple[KueueFlavorAssignment, ...] = ()  # Kueue ClusterQueue pod sets
    queues: tuple[QueueUse, ...] = ()  # the queues of the call's jobs (a quota plugin on)
    certificates: dict[str, Certificate] = field(default_factory=dict)  # gang id (a pod's
    #   key for a pod without a PodGroup) -> why it is not placed, for every gang left out
    moves: tuple[Move, ...] = ()  # running pods moved to make room (consolidation), in order

    @property
    def gap(self) -> float | None:
        """(bound - objective) / max(1, |bound|); 0 when proven optimal, None without a bound."""
        if self.bound is None:
            return None
        return max(0.0, (self.bound - self.objective) / max(1.0, abs(self.bound)))

    @property
    def objective_fits_int64(self) -> bool:
        """The packed objective fits a signed 64-bit integer (else compare `tiers`)."""
        return -INT64_MAX - 1 <= self.objective <= INT64_MAX

    def gang_placed(self, gang: str) -> bool:
        """Gang `gang` is placed: its PodGroup's outcome, or for a pod without a PodGroup
        (its gang id is its key) its own placement."""
        outcome = self.podgroups.get(gang)
        if outcome is not None:
            return outcome.placed
        alone = self.placements.get(gang)
        return alone is not None and alone.node is not None

    @property
    def placed(self) -> dict[str, str]:
        """pod key -> node, for placed pods only."""
        return {k: p.node for k, p in self.placements.items() if p.node is not None}

    def to_dict(self) -> dict[str, Any]:
        return (
            {
                "placements": {
                    k: {
                        "node": p.node,
                        "card": p.card,
                        "nominated": p.nominated,
                        "reason": p.reason,
                    }
                    | ({"devices": list(p.devices)} if p.devices else {})
                    | ({"annotations": dict(p.annotations)} if p.annotations else {})
                    for k, p in self.placements.items()
                },
                "podgroups": {
                    k: {"enqueued": g.enqueued, "placed": g.placed, "reason": g.reason}
                    for k, g in self.podgroups.items()
                },
                "victims": [
                    {"pod": v.pod, "node": v.node, "message": v.message, "cause": v.cause}
                    | ({"queue": v.queue} if v.queue else {})
                    for v in self.victims
                ],
                "engine": self.engine,
                "status": self.status,
                "objective": self.objective,
                "tiers": dict(self.tiers),
                "bound": self.bound,
                "gap": self.gap,
                "seconds": round(self.seconds, 6),
                "stats": {
                    k: round(v, 6) if isinstance(v, float) else v for k, v in self.stats.items()
                },
                "notes": list(self.notes),
                "patches": self.patches(),
            }
            | (
                {"topologyAssignments": [a.to_dict() for a in self.topology_assignments]}
                if self.topology_assignments
                else {}
            )
            | (
                {"flavorAssignments": [a.to_dict() for a in self.flavor_assignments]}
                if self.flavor_assignments
                else {}
            )
            | ({"queues": [q.to_dict() for q in self.queues]} if self.queues else {})
            | ({"moves": [m.to_dict() for m in self.moves]} if self.moves else {})
            | (
                {"certificates": {k: c.to_dict() for k, c in self.certificates.items()}}
                if self.certificates
                else {}
            )
        )

    def patches(self) -> list[dict[str, Any]]:
        """The Kubernetes patches a front end applies: device assignment annotations,
        nominated members and victims."""
        out: list[dict[str, Any]] = [
            {"pod": key, "metadata": {"annotations": dict(p.annotations)}}
            for key, p in self.placements.items()
            if p.annotations
        ]
        out += [
            {"pod": key, "status": {"nominatedNodeName": p.nominated}}
            for key, p in self.placements.items()
            if p.nominated
        ]
        out += [
            {
                "pod": v.pod,
                "delete": True,
                "status": {
                    "conditions": [
                        {
                            "type": "DisruptionTarget",
                            "status": "True",
                            "reason": "PreemptionByScheduler",
                            "message": v.message,
                        }
                    ]
                },
            }
            for v in self.victims
        ]
        out += [
            {
                "pod": m.pod,
                "delete": True,
                "moveTo": m.target,
                "status": {
                    "conditions": [
                        {
                            "type": "DisruptionTarget",
                            "status": "True",
                            "reason": "PreemptionByScheduler",
                            "message": f"moved from {m.source} to {m.target} (consolidation)",
                        }
                    ]
                },
            }
            for m in self.moves
        ]
        return out


@dataclass(frozen=True)
class Move:
    """A running pod moved: evicted from `source`, its replacement placed on `target`
    (defragmentation, consolidation)."""

    pod: str  # namespace/name
    unit: str  # its gang (moved whole), or the pod itself
    source: str
    target: str

    def to_dict(self) -> dict[str, str]:
        return {"pod": self.pod, "unit": self.unit, "from": self.source, "to": self.target}


@dataclass(frozen=True)
class Preemption:
    """What the preemption step adds: victims and the nominated node of each member pod."""

    victims: tuple[Victim, ...]
    nominated: dict[str, str]  # pod key -> node
    reasons: dict[int, str]  # gang index -> why preemption did not help
    cost: int
    evicted: int
    lost: int = 0  # GPU-hours of work the victims lose (from their creation times)
