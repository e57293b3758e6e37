"""Kueue's ClusterQueue quotas as a `QuotaMode` of the shared queue machinery.

What changes against Volcano's `capacity`:

* **The tree**: LocalQueues (`<namespace>/<name>`, the leaves jobs name with the label
  `kueue.x-k8s.io/queue-name`) under their ClusterQueue, under its cohort and the cohort's
  parents. Quota lives on ClusterQueues and cohorts, per flavor-resource.
* **Admission** is always walked (Kueue admits every workload, whatever the conf's
  actions) in the order of Kueue's cycles (`order.run_cycles`); each workload's flavors
  are assigned there (`flavors.assign`) and its pods may use only the nodes of those
  flavors (`nodeLabels`), as Kueue injects them into the pods it admits.
* **The gate** is Kueue's `available` (`quota.py`), lending limits included, on the usage
  the walk has admitted so far.
* **The engines' rows** (`allocate_limit`) hold the admitted workloads' placement within
  the same quotas, linearly: at a cohort root `Σ use ≤ SQ + Σ LQ` of its descendants, at
  a node with a borrowing limit `Σ use ≤ SQ + borrowingLimit + Σ LQ` (exact without
  lending limits; with them a relaxation, which cannot let more in: the walk admitted
  only what fits, and `verify` checks Kueue's own arithmetic).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from solver.config import Plugin, SchedulerConf
from solver.features.kueueshare.flavors import PodSet
from solver.features.kueueshare.order import Cycles, Workload, run_cycles
from solver.features.kueueshare.quota import KueueNodes, depth_problem
from solver.features.kueueshare.usage import running_usage
from solver.features.queues import ROOT, QueueTree, QuotaMode, TypeQuota
from solver.model import Gang, KueueQueue, Pod, flavor_resource, kueue_queue
from solver.quantity import UNLIMITED, format_quantity
from solver.snapshot import Snapshot
from solver.snapshot import Workload as CallWorkload

if TYPE_CHECKING:
    from solver.features._base import CompileContext

__all__ = ["KueueMode", "kueue_nodes", "kueue_specs"]


def kueue_specs(snapshot: Snapshot) -> dict[str, tuple[str | None, KueueQueue]]:
    """Every ClusterQueue and cohort: (parent, spec), read once per generation."""

    def compute() -> dict[str, tuple[str | None, KueueQueue]]:
        return {
            name: (q.parent, q.kueue)
            for name, q in snapshot.queues.items()
            if q.kueue is not None and q.kueue.kind != "LocalQueue"
        }

    return snapshot.memo(("kueue", "specs"), compute)


def kueue_nodes(snapshot: Snapshot) -> KueueNodes:
    """The cohort forest with the running pods' usage (memoised per generation; copy it
    before charging anything)."""

    def compute() -> KueueNodes:
        nodes = KueueNodes.build(kueue_specs(snapshot))
        for local, usage in sorted(running_usage(snapshot).items()):
            cq = snapshot.queues[local].parent if local in snapshot.queues else None
            if cq in nodes.nodes:
                nodes.add_all(cq, usage)
        return nodes

    return snapshot.memo(("kueue", "nodes"), compute)


class KueueMode(QuotaMode):
    plugin = Plugin.CAPACITY  # (unused: Kueue's quotas need no plugin)
    dialect = "kueue"
    loop = False
    always_walks = True
    rejecter = "Kueue"

    def __init__(self, conf: SchedulerConf, *, gpu_milli: bool = False) -> None:
        super().__init__(conf, gpu_milli=False)  # Kueue counts nvidia.com/gpu whole
        self.hierarchical = True
        self.fair_sharing = conf.fair_sharing
        self.nodes: KueueNodes | None = None  # the walk's usage
        self.cycles = Cycles()
        self.gang_unit: dict[str, int] = {}
        self.unit_first: dict[int, str] = {}  # unit -> its first gang (carries the request)
        self.type_flavors: dict[int, dict[str, str]] = {}  # pod type -> resource -> flavor
        self.type_cq: dict[int, str] = {}  # pod type -> its ClusterQueue

    @property
    def key(self) -> Hashable:
        return ("kueue",)

    def job_queue(self, gang: Gang, pods: Sequence[Pod]) -> str | None:
        """The LocalQueue the job's first pod that names one names."""
        return next((q for p in pods if (q := kueue_queue(p.labels, p.namespace))), None)

    def queues_in_use(self, snapshot: Snapshot) -> frozenset[str]:
        return frozenset()

    # ------------------------------------------------------------------ the tree

    def capabilities(self, snapshot: Snapshot, tree: QueueTree) -> None:
        """No Volcano capability: every limit is Kueue's (`allocate_limit`, `gate`); a
        cohort tree too deep to walk breaks the tree (every workload refused, saying so)."""
        if problem := depth_problem(kueue_specs(snapshot)):
            tree.broken = problem

    def usage(self, snapshot: Snapshot, tree: QueueTree) -> None:
        for local, usage in running_usage(snapshot).items():
            if local in tree.queues:
                tree.bump(local, "allocated", dict(usage))

    def settle(
        self,
        snapshot: Snapshot,
        workload: CallWorkload,
        tree: QueueTree,
        call_queues: Sequence[str | None],
    ) -> None:
        self.nodes = kueue_nodes(snapshot).copy()

    def cluster_queue(self, tree: QueueTree, leaf: str) -> str | None:
        q = tree.queues.get(leaf)
        return q.parent if q is not None and q.spec is not None and q.spec.kueue else None

    # ------------------------------------------------------------------ the cycles

    def enqueue_order(
        self, ctx: CompileContext, tree: QueueTree, unit_queue: Sequence[str | None]
    ) -> list[int]:
        """Kueue's cycles (`order.run_cycles`): units with no Kueue queue and those already
        admitted (with running pods) first, then the walk's order."""
        specs = {n: s for n, (_, s) in kueue_specs(ctx.snapshot).items()}
        unit_gangs = ctx.gangs.unit_gangs()
        first, workloads = [], []
        for u, gangs in enumerate(unit_gangs):
            ids = [ctx.gangs.gang_ids[g] for g in gangs]
            for gid in ids:
                self.gang_unit[gid] = u
            self.unit_first[u] = ids[0] if ids else ""
            leaf = unit_queue[u]
            cq = self.cluster_queue(tree, leaf) if leaf is not None else None
            admitted = any(
                ctx.workload.gangs[gid].phase in ("Inqueue", "Running")
                or ctx.snapshot.gang_running(gid) > 0
                for gid in ids
            )
            if cq is None or cq not in specs or admitted:
                first.append(u)
                continue
            if tree.queues[cq].state != "Open":
                self.cycles.refused[u] = f"ClusterQueue {cq} is stopped (spec.stopPolicy)"
                continue
            types = [t for g in gangs for t in ctx.types_of(g)]
            workloads.append(
                Workload(
                    unit=u, name=ctx.gangs.unit_ids[u], cq=cq,
                    pod_sets=tuple(PodSet(ctx.first_pod(t), len(ctx.type_pods[t])) for t in types),
                    key=(-int(ctx.unit_priority[u]), ctx.unit_created[u], ctx.gangs.unit_ids[u]),
                    priority=int(ctx.unit_priority[u]),
                )
            )  # fmt: skip
        assert self.nodes is not None
        stopped = dict(self.cycles.refused)
        self.cycles = run_cycles(self.nodes, specs, workloads, self.fair_sharing)
        self.cycles.refused.update(stopped)
        for w in workloads:
            found = self.cycles.assigned.get(w.unit)
            if found is None:
                continue
            types = [t for g in unit_gangs[w.unit] for t in ctx.types_of(g)]
            for t, flavors in zip(types, found.flavors, strict=True):
                self.type_flavors[t] = flavors
                self.type_cq[t] = w.cq
        later = [u for u in self.cycles.order if u not in stopped] + sorted(stopped)
        return sorted(first, key=ctx.unit_key) + later

    def order_units(
        self, ctx: CompileContext, tree: QueueTree, unit_queue: Sequence[str | None]
    ) -> list[int]:
        """The engines place in the order the walk admitted (`enqueue_order` ran first)."""
        walked = set(self.cycles.order)
        admitted = walked - set(self.cycles.refused)
        rest = [u for u in range(len(ctx.gangs.unit_ids)) if u not in walked]
        return (
            sorted(rest, key=ctx.unit_key)
            + [u for u in self.cycles.order if u in admitted]
            + [u for u in self.cycles.order if u not in admitted]
        )

    def refuse(self, gang_id: str) -> str | None:
        unit = self.gang_unit.get(gang_id)
        return self.cycles.refused.get(unit) if unit is not None else None

    def request(self, gang: Gang, pending: Sequence[Pod], snapshot: Snapshot) -> dict[str, int]:
        unit = self.gang_unit.get(gang.id)
        if unit is None or self.unit_first.get(unit) != gang.id:
            return {}
        found = self.cycles.assigned.get(unit)
        return dict(found.usage) if found is not None else {}

    def gate(
        self, tree: QueueTree, leaf: str, request: dict[str, int], *, enqueue: bool
    ) -> str | None:
        """Kueue's `Fits`: every flavor-resource within what the ClusterQueue may still get."""
        cq = self.cluster_queue(tree, leaf)
        if cq is None or self.nodes is None or cq not in self.nodes.nodes:
            return None
        for fr, v in sorted(request.items()):
            available = max(0, self.nodes.available(cq, fr))
            if v > available:
                flavor, r = fr.split("/", 1)
                return (
                    f"ClusterQueue {cq}: insufficient unused quota for {r} in flavor {flavor}, "
                    f"{format_quantity(r, v - available)} more needed"
                )
        return None

    def admitted(self, tree: QueueTree, leaf: str, request: Mapping[str, int]) -> None:
        cq = self.cluster_queue(tree, leaf)
        if cq is not None and self.nodes is not None and cq in self.nodes.nodes:
            self.nodes.add_all(cq, request)

    # ------------------------------------------------------------------ the engines' rows

    def allocate_limit(self, tree: QueueTree, name: str, resource: str) -> int:
        base = self.nodes
        node = base.nodes.get(name) if base is not None else None
        if base is None or node is None or name == ROOT:
            return UNLIMITED
        slack = sum(base.nodes[d].local(resource) for d in _descendants(base, name))
        quota = node.quotas.get(resource)
        if node.parent is None:
            return node.subtree.get(resource, 0) + slack
        if quota is not None and quota.borrowing_limit is not None:
            return node.subtree.get(resource, 0) + quota.borrowing_limit + slack
        return UNLIMITED

    def fair_dims(self, tree: QueueTree, name: str) -> dict[str, int]:
        return {}

    def reason(self, dim: str, dims: Sequence[str]) -> str:
        return "insufficient quota"

    def type_quota(self, ctx: CompileContext, tree: QueueTree | None) -> TypeQuota:
        """One dimension per flavor-resource a pod of the call was assigned."""
        demand_rows: dict[int, dict[str, int]] = {}
        dims: set[str] = set()
        for t, flavors in self.type_flavors.items():
            pod = ctx.first_pod(t)
            row = {
                flavor_resource(f, r): (1 if r == "pods" else int(pod.requests.get(r, 0)))
                for r, f in flavors.items()
            }
            demand_rows[t] = row
            dims.update(row)
        ordered = tuple(sorted(dims))
        demand = np.zeros((ctx.num_types, len(ordered)), dtype=np.int64)
        for t, row in demand_rows.items():
            for d, fr in enumerate(ordered):
                demand[t, d] = row.get(fr, 0)
        return TypeQuota(dims=ordered, demand=demand)


def _descendants(nodes: KueueNodes, name: str) -> list[str]:
    out, stack = [], list(nodes.nodes[name].children)
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(nodes.nodes[n].children)
    return out
