"""Volcano queues on the `capacity` plugin: the tree, real capabilities, usage, enqueue.

Which queue a job is in: the Volcano PodGroup's `spec.queue` (default `default`), else the
pod annotation `scheduling.volcano.sh/queue-name`; jobs of other dialects without that
annotation are in no queue and not limited by any. The `root` queue (and `default`, when a
job names it) exist implicitly when the input does not define them.

With `enableHierarchy` (the default in gangplan's default conf) the reference's
hierarchical rules apply (`reference/volcano.md` §3.3):

* root: capability as given (cpu/memory ≤ 0 or unset, and every missing resource, = ∞);
  realCapability = capability;
* top-down, for each child of P: capability cpu/memory ≤ 0 or unset -> P's; scalar
  resources missing -> copied from P; deserved = max(deserved, guarantee);
  `realCapability = min(max(P.real − Σ guarantees of P's children, 0) + guarantee, capability)`;
* usage (allocated = requests of bound pods; inqueue; elastic) is computed at the leaf and
  added to every ancestor.

Without `enableHierarchy` every queue is a child of root and realCapability =
min(max(cluster − Σ all guarantees, 0) + guarantee, capability). Quantities use the
integer units of `solver.quantity`; the `pods` resource is never a quota.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from solver.config import SchedulerConf
from solver.model import ClusterModel, Queue
from solver.quantity import CPU, MEMORY, PODS, format_quantity

__all__ = [
    "INF",
    "QueueInfo",
    "QueuePlan",
    "QueueTree",
    "build_queue_tree",
    "compile_queues",
    "gate_failure",
    "job_queue",
    "plan_enqueue",
]

INF = 2**62  # "unlimited" in integer arithmetic; saturating helpers below keep it there
ROOT = "root"
DEFAULT_QUEUE = "default"
QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"


def _add(a: int, b: int) -> int:
    return INF if a >= INF or b >= INF else a + b


def _sub(a: int, b: int) -> int:
    return INF if a >= INF else a - b


@dataclass
class QueueInfo:
    """One queue with its derived numbers (dicts map resource -> integer amount)."""

    name: str
    parent: str | None  # None for root
    children: list[str] = field(default_factory=list)
    ancestors: list[str] = field(default_factory=list)  # root first, parent last
    capability: dict[str, int] = field(default_factory=dict)  # after inheritance; INF = none
    deserved: dict[str, int] = field(default_factory=dict)
    guarantee: dict[str, int] = field(default_factory=dict)
    real_capability: dict[str, int] = field(default_factory=dict)
    allocated: dict[str, int] = field(default_factory=dict)  # bound usage, subtree total
    inqueue: dict[str, int] = field(default_factory=dict)
    elastic: dict[str, int] = field(default_factory=dict)
    state: str = "Open"
    priority: int = 0
    implicit: bool = False  # not in the input (root, default)
    spec: Queue | None = None

    @property
    def leaf(self) -> bool:
        return not self.children

    def real(self, resource: str) -> int:
        return self.real_capability.get(resource, INF)

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

    def path(self, name: str) -> list[str]:
        """`name` and its ancestors, leaf first, root last."""
        q = self.queues[name]
        return [name, *reversed(q.ancestors)]

    def resources(self) -> list[str]:
        names: set[str] = set()
        for q in self.queues.values():
            names |= set(q.real_capability)
        return sorted(names - {PODS})


def job_queue(model: ClusterModel, gang_id: str) -> str | None:
    gang = model.gangs[gang_id]
    if gang.queue:
        return gang.queue
    for key in gang.members:
        name = model.pod_by_key[key].annotations.get(QUEUE_ANNOTATION)
        if name:
            return name
    return None


def _limits(
    values: dict[str, int], inherit: dict[str, int] | None, scalars_from_parent: bool
) -> dict[str, int]:
    """Capability with Volcano's rules: cpu/memory ≤ 0 or unset -> parent's (or ∞)."""
    out = {r: v for r, v in values.items() if r != PODS}
    for r in (CPU, MEMORY):
        if out.get(r, 0) <= 0:
            out[r] = inherit.get(r, INF) if inherit is not None else INF
    if inherit is not None and scalars_from_parent:
        for r, v in inherit.items():
            out.setdefault(r, v)
    return out


def build_queue_tree(model: ClusterModel, conf: SchedulerConf) -> QueueTree | None:
    """The queue tree of the input; None when the capacity plugin is off or nothing uses queues."""
    if not conf.enabled("capacity"):
        return None
    used = {name for gid in model.gangs if (name := job_queue(model, gid))}
    if not model.queues and not used:
        return None
    plugin = conf.plugin("capacity")
    hierarchical = bool(plugin.options.get("enableHierarchy", True)) if plugin else True
    queues: dict[str, QueueInfo] = {}
    for name, spec in model.queues.items():
        parent = (spec.parent or ROOT) if name != ROOT else None
        queues[name] = QueueInfo(
            name=name, parent=parent if hierarchical or name == ROOT else ROOT,
            deserved=dict(spec.deserved), guarantee=dict(spec.guarantee), state=spec.state,
            priority=spec.priority, spec=spec,
        )  # fmt: skip
    if ROOT not in queues:
        queues[ROOT] = QueueInfo(name=ROOT, parent=None, implicit=True)
    if DEFAULT_QUEUE in used and DEFAULT_QUEUE not in queues:
        queues[DEFAULT_QUEUE] = QueueInfo(name=DEFAULT_QUEUE, parent=ROOT, implicit=True)
    tree = QueueTree(queues=queues, hierarchical=hierarchical)
    for info in queues.values():
        if info.parent is not None and info.parent not in queues:
            tree.broken = f"queue {info.name}: parent queue {info.parent} does not exist"
            return tree
    for info in queues.values():
        seen, p = {info.name}, info.parent
        while p is not None:
            if p in seen:
                tree.broken = f"queue {info.name}: cycle in the queue tree through {p}"
                return tree
            seen.add(p)
            info.ancestors.insert(0, p)
            p = queues[p].parent
        if info.parent is not None:
            queues[info.parent].children.append(info.name)
    for info in queues.values():
        info.children.sort()
    _capabilities(model, tree)
    _usage(model, tree)
    return tree


def _cluster_total(model: ClusterModel) -> dict[str, int]:
    total: dict[str, int] = {}
    for node in model.nodes:
        for r, v in node.allocatable.items():
            total[r] = total.get(r, 0) + v
    return total


def _capabilities(model: ClusterModel, tree: QueueTree) -> None:
    queues = tree.queues
    root = queues[ROOT]
    root_spec = root.spec.capability if root.spec else {}
    if tree.hierarchical:
        root.capability = _limits(root_spec, None, False)
    else:
        root.capability = {r: v for r, v in _cluster_total(model).items() if r != PODS}
    root.real_capability = dict(root.capability)
    order = [ROOT]
    for name in order:
        parent = queues[name]
        siblings_guarantee: dict[str, int] = {}
        for sibling in parent.children:
            for r, v in queues[sibling].guarantee.items():
                siblings_guarantee[r] = siblings_guarantee.get(r, 0) + v
        for child_name in parent.children:
            child = queues[child_name]
            spec = child.spec.capability if child.spec else {}
            child.capability = _limits(
                spec, parent.capability if tree.hierarchical else None, tree.hierarchical
            )
            child.deserved = {
                r: max(v, child.guarantee.get(r, 0)) for r, v in child.deserved.items()
            }
            keys = set(parent.real_capability) | set(child.capability) | set(child.guarantee)
            real = {}
            for r in keys - {PODS}:
                carved = max(_sub(parent.real(r), siblings_guarantee.get(r, 0)), 0)
                real[r] = min(_add(carved, child.guarantee.get(r, 0)), child.capability.get(r, INF))
            child.real_capability = real
            order.append(child_name)
    if tree.hierarchical:
        root.deserved = _sum(queues[c].deserved for c in root.children)
        root.guarantee = _sum(queues[c].guarantee for c in root.children)


def _sum(items: Iterable[dict[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items:
        for r, v in item.items():
            out[r] = out.get(r, 0) + v
    return out


def _bump(tree: QueueTree, leaf: str, attr: str, amounts: dict[str, int]) -> None:
    for name in tree.path(leaf):
        target: dict[str, int] = getattr(tree.queues[name], attr)
        for r, v in amounts.items():
            if r != PODS and v:
                target[r] = target.get(r, 0) + v


def _usage(model: ClusterModel, tree: QueueTree) -> None:
    for gid, gang in model.gangs.items():
        leaf = job_queue(model, gid)
        if leaf is None or leaf not in tree.queues:
            continue
        allocated = _sum(
            model.pod_by_key[k].requests for k in gang.members if model.pod_by_key[k].bound
        )
        _bump(tree, leaf, "allocated", allocated)
        minimum = {r: v for r, v in gang.min_resources.items() if r != PODS}
        if not minimum:
            continue
        bound = sum(1 for k in gang.members if model.pod_by_key[k].bound)
        if gang.phase == "Inqueue":
            _bump(tree, leaf, "inqueue", minimum)
        elif gang.phase == "Running" and bound >= gang.min_member:
            _bump(
                tree,
                leaf,
                "inqueue",
                {r: max(0, v - allocated.get(r, 0)) for r, v in minimum.items()},
            )
        _bump(
            tree, leaf, "elastic", {r: max(0, allocated.get(r, 0) - v) for r, v in minimum.items()}
        )


def gate_failure(
    tree: QueueTree, leaf: str, request: dict[str, int], *, enqueue: bool
) -> str | None:
    """Why `request` does not fit `leaf` and every ancestor now; None when it fits.

    Enqueue: `request + allocated + inqueue − elastic ≤ realCapability`; allocate:
    `allocated + request ≤ realCapability`; both only on the dimensions requested.
    """
    if tree.broken:
        return f"queue tree is invalid, the capacity plugin rejects everything: {tree.broken}"
    queue = tree.queues[leaf]
    if queue.state != "Open":
        return f"queue {leaf} is {queue.state}"
    if not queue.leaf:
        return f"queue {leaf} is not a leaf queue; only leaf queues run jobs"
    for name in tree.path(leaf):
        q = tree.queues[name]
        for r, v in sorted(request.items()):
            if v <= 0 or r == PODS:
                continue
            used = q.allocated.get(r, 0)
            if enqueue:
                used = used + q.inqueue.get(r, 0) - q.elastic.get(r, 0)
            limit = q.real(r)
            if limit < INF and used + v > limit:
                over = used + v - limit
                return (
                    f"queue {name}: {r} {format_quantity(r, v)} requested + "
                    f"{format_quantity(r, used)} in use > realCapability "
                    f"{format_quantity(r, limit)} (over by {format_quantity(r, over)})"
                )
    return None


def plan_enqueue(
    model: ClusterModel, conf: SchedulerConf, tree: QueueTree | None, order: list[str]
) -> dict[str, str]:
    """Jobs (gang ids, in `order`) that may not enter their queue this cycle, with the reason.

    A job already admitted (PodGroup phase Inqueue/Running, or any bound member) is not
    asked again. Without `minResources` the capacity plugin permits (Volcano's rule).
    Admission adds `minResources` to the queue's inqueue for the jobs after it.
    """
    rejected: dict[str, str] = {}
    for gid in order:
        gang = model.gangs[gid]
        leaf = job_queue(model, gid)
        if leaf is None:
            continue
        if tree is None:
            continue
        if leaf not in tree.queues:
            rejected[gid] = f"queue {leaf} does not exist"
            continue
        if not tree.queues[leaf].leaf:
            rejected[gid] = f"queue {leaf} is not a leaf queue; only leaf queues run jobs"
            continue
        if gang.phase in ("Inqueue", "Running") or any(
            model.pod_by_key[k].bound for k in gang.members
        ):
            continue
        if "enqueue" not in conf.actions:
            continue
        request = {r: v for r, v in gang.min_resources.items() if r != PODS}
        why = gate_failure(tree, leaf, request, enqueue=True) if request or tree.broken else None
        if why:
            rejected[gid] = why
            continue
        _bump(tree, leaf, "inqueue", request)
    return rejected


# ----------------------------------------------------------------------------- Problem parts


@dataclass(frozen=True)
class QueuePlan:
    """What the capacity and nodegroup plugins add to the Problem (see compile.py)."""

    tree: QueueTree | None
    enqueue_rejected: dict[int, str]  # gang index -> why it may not enter its queue
    queue_names: tuple[str, ...]  # Q: every queue on the path of a job with pending pods
    headroom: list[list[int]]  # [Q][R] realCapability − allocated (INF: no limit)
    type_queues: list[list[int]]  # [T] indices of the type's leaf queue and its ancestors
    unit_order: list[int] | None  # units in Volcano's queue order (None: no queues in play)
    masks: dict[int, list[tuple[list[bool], int]]]  # gang -> [(node allowed, reason code)]
    scores: dict[int, list[float]]  # gang -> nodegroup score per node


def _queue_cmp(tree: QueueTree, a: str, b: str) -> int:
    """Volcano's queue order: priority ↓, leaf first, share at the deepest common ancestor ↑,
    queue with deserved first, then name."""
    qa, qb = tree.queues[a], tree.queues[b]
    if qa.priority != qb.priority:
        return -1 if qa.priority > qb.priority else 1
    if qa.leaf != qb.leaf:
        return -1 if qa.leaf else 1
    pa, pb = [*qa.ancestors, a], [*qb.ancestors, b]
    depth = 0
    while depth < min(len(pa), len(pb)) and pa[depth] == pb[depth]:
        depth += 1
    ca = tree.queues[pa[depth]] if depth < len(pa) else qa
    cb = tree.queues[pb[depth]] if depth < len(pb) else qb
    sa, sb = ca.share(), cb.share()
    if sa != sb:
        return -1 if sa < sb else 1
    da, db = bool(ca.deserved), bool(cb.deserved)
    if da != db:
        return -1 if da else 1
    return (a > b) - (a < b)


def compile_queues(
    model: ClusterModel,
    conf: SchedulerConf,
    gang_ids: tuple[str, ...],
    gang_unit: tuple[int, ...],
    unit_job_key: list[tuple[int, str, str]],  # per unit: (-priority, created, id)
    type_gang: list[int],
    resources: tuple[str, ...],
    code_of: Callable[[str], int],
) -> QueuePlan:
    from solver.policies import nodegroup

    tree = build_queue_tree(model, conf)
    queue_of = [job_queue(model, gid) for gid in gang_ids]
    unit_queue: dict[int, str | None] = {}
    for g, u in enumerate(gang_unit):
        unit_queue.setdefault(u, queue_of[g])

    unit_order: list[int] | None = None
    if tree is not None and not tree.broken:

        def cmp(u: int, v: int) -> int:
            qu, qv = unit_queue.get(u), unit_queue.get(v)
            if qu != qv and qu in tree.queues and qv in tree.queues:
                assert qu is not None and qv is not None
                c = _queue_cmp(tree, qu, qv)
                if c:
                    return c
            ku, kv = unit_job_key[u], unit_job_key[v]
            return (ku > kv) - (ku < kv)

        unit_order = sorted(range(len(unit_job_key)), key=functools.cmp_to_key(cmp))

    order = (
        unit_order
        if unit_order is not None
        else sorted(range(len(unit_job_key)), key=lambda u: unit_job_key[u])
    )
    unit_members: dict[int, list[str]] = {}
    for g, u in enumerate(gang_unit):
        unit_members.setdefault(u, []).append(gang_ids[g])
    gangs_in_order = [gid for u in order for gid in unit_members.get(u, [])]
    rejected_ids = plan_enqueue(model, conf, tree, gangs_in_order)
    index = {gid: g for g, gid in enumerate(gang_ids)}
    rejected = {index[gid]: why for gid, why in rejected_ids.items()}

    queue_names: list[str] = []
    type_queues: list[list[int]] = []
    if tree is not None:
        for g in sorted({type_gang[t] for t in range(len(type_gang))}):
            q = queue_of[g]
            if q in tree.queues:
                for name in tree.path(q):
                    if name not in queue_names:
                        queue_names.append(name)
        q_index = {name: i for i, name in enumerate(queue_names)}
        for t in range(len(type_gang)):
            q = queue_of[type_gang[t]]
            type_queues.append([q_index[n] for n in tree.path(q)] if q in tree.queues else [])
    else:
        type_queues = [[] for _ in type_gang]
    headroom = [
        [
            INF
            if r == PODS or tree is None
            else max(0, _sub(tree.queues[q].real(r), tree.queues[q].allocated.get(r, 0)))
            for r in resources
        ]
        for q in queue_names
    ]

    masks: dict[int, list[tuple[list[bool], int]]] = {}
    scores: dict[int, list[float]] = {}
    if conf.enabled("nodegroup"):
        cache: dict[str, tuple[list[str | None], Any]] = {}
        for g in sorted(set(type_gang)):
            q = queue_of[g]
            if q is None:
                continue
            if q not in cache:
                cache[q] = nodegroup.nodegroup_verdict(model, conf, q)
            reasons, node_scores = cache[q]
            by_reason: dict[str, list[bool]] = {}
            for n, why in enumerate(reasons):
                if why:
                    by_reason.setdefault(why, [True] * len(reasons))[n] = False
            masks[g] = [(allowed, code_of(why)) for why, allowed in by_reason.items()]
            scores[g] = node_scores.tolist()
    return QueuePlan(
        tree, rejected, tuple(queue_names), headroom, type_queues, unit_order, masks, scores
    )
