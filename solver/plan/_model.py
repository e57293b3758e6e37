"""The planner's vocabulary: node types, pod shapes, job classes, the input, the options and
the answer.

Everything here is a plain frozen dataclass (picklable, cheap to hash) so that a sweep can
ship a `PlanInput` to worker processes. Units are integers fixed at the boundary:

* `cpu` in milli-CPU, `memory` in MiB (requests round up, capacities round down), every
  other resource in its Kubernetes base unit;
* GPUs are counted as devices (`gpus`) and each device has `MILLI` = 1000 milli of
  capacity; a pod asks for `gpus` devices with `gpu_milli` milli on each (1000 = whole).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "BUDGET_SLACK",
    "DEFAULT_PODS_CAPACITY",
    "GPU",
    "MIB",
    "MILLI",
    "JobClass",
    "NodeType",
    "PlanInput",
    "PlanOptions",
    "PlanResult",
    "ProgressFn",
    "Shape",
    "Unplaced",
]

GPU = "nvidia.com/gpu"
MILLI = 1000
MIB = 2**20  # the planner's memory unit (MiB), in bytes
DEFAULT_PODS_CAPACITY = 110  # Kubernetes' default `pods` allocatable
BUDGET_SLACK = 1e-9  # a budget holds within this much (round-off in a sum of costs)

ProgressFn = Callable[[str, float], None]  # (stage, fraction done)


def _amount(amounts: tuple[tuple[str, int], ...], resource: str) -> int:
    for name, amount in amounts:
        if name == resource:
            return amount
    return 0


@dataclass(frozen=True)
class NodeType:
    """One kind of node that can be bought (catalogue) or already exists (cluster class)."""

    name: str
    cost: float  # per node, in the catalogue's unit (0 for existing nodes)
    allocatable: tuple[tuple[str, int], ...]  # sorted (resource, amount), GPU excluded
    gpus: int = 0  # GPU devices per node
    gpu_model: str | None = None  # e.g. A100; None for CPU nodes
    max_count: int | None = None  # at most this many of the type (None: unlimited)
    nodes_per_block: int | None = None  # bought in whole blocks of this many nodes
    labels: tuple[tuple[str, str], ...] = ()  # for pods' nodeSelector
    existing: bool = False  # a class of nodes of the current cluster (cost 0)
    gpu_free: tuple[int, ...] = ()  # existing nodes: milli free per device (default: all)

    def capacity(self, resource: str) -> int:
        return _amount(self.allocatable, resource)

    def cluster_units(self) -> dict[str, int]:
        """Allocatable in a cluster's integer units (milli-CPU, memory in bytes, GPUs as
        `nvidia.com/gpu` devices): a node of this type as the model and the wire hold it."""
        out = {r: v * MIB if r == "memory" else v for r, v in self.allocatable}
        if self.gpus:
            out[GPU] = self.gpus
        return out

    @property
    def devices(self) -> tuple[int, ...]:
        """Free milli per GPU device of an empty node of this type."""
        return self.gpu_free or (MILLI,) * self.gpus


@dataclass(frozen=True)
class Shape:
    """Identical pods: same requests, same GPU ask, same allowed GPU models and selector."""

    requests: tuple[tuple[str, int], ...]  # sorted (resource, amount), GPU excluded
    gpus: int = 0  # GPU devices
    gpu_milli: int = MILLI  # milli per device; < 1000 only with gpus == 1 (shared GPU)
    models: frozenset[str] | None = None  # allowed GPU models; None: any
    selector: tuple[tuple[str, str], ...] = ()  # nodeSelector (label equality)

    def request(self, resource: str) -> int:
        return _amount(self.requests, resource)

    @property
    def gpu_total_milli(self) -> int:
        return self.gpus * self.gpu_milli

    @property
    def shared(self) -> bool:
        return self.gpus == 1 and self.gpu_milli < MILLI

    def describe(self) -> str:
        parts = [f"{r}={v}" for r, v in self.requests if v]
        if self.gpus:
            parts.append(
                f"gpu={self.gpus}" + (f"x{self.gpu_milli}m" if self.gpu_milli < MILLI else "")
            )
        if self.models:
            parts.append("models=" + "|".join(sorted(self.models)))
        return " ".join(parts) or "empty"


@dataclass(frozen=True)
class JobClass:
    """`count` identical jobs; each job places all of its pods or none (gang all-or-nothing)."""

    shapes: tuple[tuple[int, int], ...]  # (shape index, pods of that shape per job)
    count: int
    weight: int  # value of placing one job (pods by default; GPU milli in the study)
    names: tuple[str, ...] = ()  # job ids, for reasons (may be truncated for traces)

    @property
    def pods(self) -> int:
        return sum(m for _, m in self.shapes)

    def job_names(self, first: int, count: int) -> list[str]:
        """Ids of `count` jobs of the class from the `first` on (`<first id>...` past the
        ids kept)."""
        names = self.names[first:] or self.names[:1]
        return [names[n] if n < len(names) else f"{self.names[0]}..." for n in range(count)]


@dataclass(frozen=True)
class PlanInput:
    """A whole planning question. Model size depends on shapes and types, not on pods."""

    shapes: tuple[Shape, ...]
    jobs: tuple[JobClass, ...]
    types: tuple[NodeType, ...]
    card_quota: tuple[tuple[str, int], ...] = ()  # GPU model -> most GPUs that may be added
    budget: float | None = None  # most total cost of added nodes
    infeasible: tuple[tuple[str, int, str], ...] = ()  # (job, pods, reason) found up front
    resources: tuple[str, ...] = ()  # non-GPU resources that count, in order
    notes: tuple[str, ...] = ()

    @property
    def pods(self) -> int:
        return sum(j.count * j.pods for j in self.jobs)

    def card_gpus(self, model: str) -> tuple[int, ...]:
        """GPUs one node of each type adds against `cardQuota[model]` (bought types only)."""
        return tuple(t.gpus if not t.existing and t.gpu_model == model else 0 for t in self.types)


@dataclass(frozen=True)
class PlanOptions:
    """How long and how the planner searches (every CP-SAT solve gets workers and seed)."""

    time_limit: float = 10.0  # seconds for the whole plan (greedy + LP + CP-SAT)
    workers: int = 1  # CP-SAT num_workers (set explicitly: it uses every core otherwise)
    seed: int = 0  # CP-SAT random_seed and the POP split's shuffle
    parts: int = 1  # POP-style split of the integer master (1: one model)
    lp_share: float = 0.6  # share of the time limit for column generation
    enumerate_limit: int = 3000  # enumerate every maximal pattern up to this many
    gap_limit: float = 0.0  # CP-SAT relative_gap_limit (0: run to the limit or optimum)


@dataclass(frozen=True)
class Unplaced:
    """Jobs that stay pending, with the same reason."""

    jobs: tuple[str, ...]  # job ids (a trace's pods are jobs of one)
    count: int  # jobs
    pods: int
    reason: str


@dataclass
class PlanResult:
    """The answer: what to add, what stays pending, how full it is, and how good it is."""

    status: str  # OPTIMAL (cost == bound), FEASIBLE (CP-SAT, with a gap), HEURISTIC
    add: dict[str, int]  # catalogue type -> nodes to add
    use: dict[str, int]  # existing node class -> nodes used
    cost: float  # cost of the added nodes
    objective: float  # cost + penalty of unplaced work (== cost when all is placed)
    bound: float  # best valid lower bound on `objective`
    gap: float  # (objective - bound) / max(objective, tiny); 0 when proven optimal
    bounds: dict[str, float | None]  # each bound by name (see solver.plan.planner)
    unplaced: list[Unplaced] = field(default_factory=list)
    reasons: dict[str, int] = field(default_factory=dict)  # reason -> pods
    utilisation: dict[str, dict[str, float]] = field(default_factory=dict)
    placed_pods: int = 0
    total_pods: int = 0
    seconds: float = 0.0
    stats: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # per type: [(nodes, {shape index: pods})] -- the packing that proves feasibility
    packing: dict[str, list[tuple[int, dict[int, int]]]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "add": dict(self.add),
            "use": dict(self.use),
            "cost": self.cost,
            "objective": self.objective,
            "bound": self.bound,
            "gap": self.gap,
            "bounds": dict(self.bounds),
            "placed_pods": self.placed_pods,
            "total_pods": self.total_pods,
            "unplaced": [
                {"jobs": list(u.jobs), "count": u.count, "pods": u.pods, "reason": u.reason}
                for u in self.unplaced
            ],
            "reasons": dict(self.reasons),
            "utilisation": {k: dict(v) for k, v in self.utilisation.items()},
            "seconds": round(self.seconds, 4),
            "stats": dict(self.stats),
            "notes": list(self.notes),
        }
