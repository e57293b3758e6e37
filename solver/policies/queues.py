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
from solver.model import ClusterModel, Pod, Queue
from solver.policies.cards import (
    CARD_QUOTA,
    CARD_REQUEST,
    CardError,
    ClusterCards,
    discover,
    node_cards,
    parse_quota,
    pod_card_demand,
)
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
    "sum_resources",
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
    card_mode: bool = False  # capacity-card: quotas from volcano.sh/card.quota, unset = 0
    cards: ClusterCards | None = None  # card discovery (capacity-card)
    unlimited_cpu_memory: bool = False  # capacity-card cardUnlimitedCpuMemory
    notes: list[str] = field(default_factory=list)

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
    """The gang's queue: its own, else the first member pod's queue annotation."""
    queues = model.memo.get("job_queue")
    if not isinstance(queues, dict):
        queues = model.memo["job_queue"] = {}
    if gang_id not in queues:
        gang = model.gangs[gang_id]
        queues[gang_id] = gang.queue or next(
            (
                name
                for key in gang.members
                if (name := model.pod_by_key[key].annotations.get(QUEUE_ANNOTATION))
            ),
            None,
        )
    found = queues[gang_id]
    return found if isinstance(found, str) else None


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
    """The queue tree of the input; None when no quota plugin is on or nothing uses queues.

    `capacity-card` (mutually exclusive with `capacity`, checked when the conf is read)
    builds the same tree with its own quotas; see `_card_capabilities`.
    """
    card_mode = conf.enabled("capacity-card")
    if not conf.enabled("capacity") and not card_mode:
        return None
    used = {name for gid in model.gangs if (name := job_queue(model, gid))}
    if not model.queues and not used:
        return None
    plugin = conf.plugin("capacity-card" if card_mode else "capacity")
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
    tree = QueueTree(queues=queues, hierarchical=hierarchical, card_mode=card_mode)
    if card_mode:
        flag = conf.arguments("capacity-card").get("cardUnlimitedCpuMemory", False)
        tree.unlimited_cpu_memory = flag if isinstance(flag, bool) else False
        tree.cards = discover(model)
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
    if card_mode:
        _card_capabilities(tree)
    else:
        _capabilities(model, tree)
    _usage(model, tree)
    return tree


CARD = "card:"  # quota dimension of a card type: `card:NVIDIA-A100`


def _card_capabilities(tree: QueueTree) -> None:
    """capacity-card quotas: cpu/memory from `spec.capability`, cards from
    `volcano.sh/card.quota`; a leaf queue's unset quota is zero (upstream), an ancestor's
    unset quota is no limit (the hierarchical extension); realCapability = capability."""
    assert tree.cards is not None
    card_names = set(tree.cards.total)
    for q in tree.queues.values():
        spec_cap = q.spec.capability if q.spec else {}
        quota: dict[str, int] = {}
        if q.spec is not None:
            quota, warning = parse_quota(q.spec.annotations.get(CARD_QUOTA))
            if warning:
                tree.notes.append(f"queue {q.name}: annotation {CARD_QUOTA} ignored: {warning}")
        unset = 0 if q.leaf and not q.implicit else INF
        cap = {r: spec_cap[r] if spec_cap.get(r, 0) > 0 else unset for r in (CPU, MEMORY)}
        for name in card_names | set(quota):
            cap[CARD + name] = quota.get(name, unset)
        q.capability = cap
        q.real_capability = dict(cap)


def card_request(
    model: ClusterModel, tree: QueueTree, gang_id: str, *, pending_only: bool = False
) -> dict[str, int]:
    """GetMinResources of a job under capacity-card: card demand (pods', else the PodGroup's
    `volcano.sh/card.request`) keyed `card:A|B`, plus minResources cpu/memory (left out when
    `cardUnlimitedCpuMemory` and the job has cards)."""
    assert tree.cards is not None
    gang = model.gangs[gang_id]
    cards: dict[str, int] = {}
    for key in gang.members:
        pod = model.pod_by_key[key]
        if pending_only and not pod.pending:
            continue
        try:
            demand = pod_card_demand(pod, tree.cards)
        except CardError:
            continue
        if demand is not None:
            cards[CARD + demand.key] = cards.get(CARD + demand.key, 0) + demand.count
    if not cards:
        annotated, _ = parse_quota(gang.annotations.get(CARD_REQUEST))
        cards = {CARD + k: v for k, v in annotated.items() if v > 0}
    out = dict(cards)
    if not (tree.unlimited_cpu_memory and cards):
        out.update({r: v for r, v in gang.min_resources.items() if r in (CPU, MEMORY)})
    return out


def _pod_card_usage(model: ClusterModel, tree: QueueTree, pod: Pod) -> dict[str, int]:
    """What a bound pod uses of its queue under capacity-card (its card: the node's type)."""
    assert tree.cards is not None
    try:
        demand = pod_card_demand(pod, tree.cards)
    except CardError:
        demand = None
    out: dict[str, int] = {}
    if demand is not None and pod.node_name in model.node_by_name:
        offered = node_cards(model.node_by_name[pod.node_name])
        card = next((a for a in demand.alternatives if a in offered), demand.alternatives[0])
        out[CARD + card] = demand.count
    if not (tree.unlimited_cpu_memory and demand is not None):
        out.update({r: v for r, v in pod.requests.items() if r in (CPU, MEMORY)})
    return out


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
        root.deserved = sum_resources(queues[c].deserved for c in root.children)
        root.guarantee = sum_resources(queues[c].guarantee for c in root.children)


def sum_resources(items: Iterable[dict[str, int]]) -> dict[str, int]:
    """Resource-wise sum of resource maps."""
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
        bound_pods = [model.pod_by_key[k] for k in gang.members if model.pod_by_key[k].bound]
        if tree.card_mode:
            allocated = sum_resources(_pod_card_usage(model, tree, p) for p in bound_pods)
            minimum = card_request(model, tree, gid)
        else:
            allocated = sum_resources(p.requests for p in bound_pods)
            minimum = {r: v for r, v in gang.min_resources.items() if r != PODS}
        _bump(tree, leaf, "allocated", allocated)
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
    if tree.card_mode:
        return _card_gate(tree, leaf, request, enqueue=enqueue)
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


_REASON = {CPU: "InsufficientCPUQuota", MEMORY: "InsufficientMemoryQuota"}


def _card_gate(tree: QueueTree, leaf: str, request: dict[str, int], *, enqueue: bool) -> str | None:
    """capacity-card's checks with the upstream reason names, at the leaf and every ancestor.

    cpu/memory and single cards: `used + request ≤ capability`. An alternative `A|B`:
    job mode (enqueue) `Σ_alt used + request ≤ Σ_alt capability`; task mode: some single
    alternative fits alone (the engines then charge the card type of the node it lands on).
    """
    spec = tree.queues[leaf].spec
    if spec is not None and not spec.capability and CARD_QUOTA not in spec.annotations:
        return f"EmptyQueueCapability: queue {leaf} has neither spec.capability nor {CARD_QUOTA}"
    for name in tree.path(leaf):
        q = tree.queues[name]

        def used(dim: str, q: QueueInfo = q) -> int:
            value = q.allocated.get(dim, 0)
            if enqueue:
                value += q.inqueue.get(dim, 0) - q.elastic.get(dim, 0)
            return value

        for dim, v in sorted(request.items()):
            if v <= 0:
                continue
            if not dim.startswith(CARD):
                limit = q.real(dim)
                if limit < INF and used(dim) + v > limit:
                    return (
                        f"{_REASON.get(dim, 'InsufficientScalarQuota')}: queue {name}: {dim} "
                        f"{format_quantity(dim, v)} requested + {format_quantity(dim, used(dim))} "
                        f"in use > capability {format_quantity(dim, limit)}"
                    )
                continue
            alternatives = [CARD + a for a in dim.removeprefix(CARD).split("|")]
            limits = [q.real(a) for a in alternatives]
            if any(limit >= INF for limit in limits):
                continue
            if enqueue or len(alternatives) == 1:
                total = sum(used(a) for a in alternatives) + v
                if total > sum(limits):
                    return (
                        f"InsufficientScalarQuota: queue {name}: {dim.removeprefix(CARD)} "
                        f"{v} requested + {total - v} in use > quota {sum(limits)}"
                    )
            elif not any(
                used(a) + v <= limit for a, limit in zip(alternatives, limits, strict=True)
            ):
                return f"InsufficientScalarQuota: queue {name}: no card type of {dim.removeprefix(CARD)} has quota for {v}"
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
    if tree is None:  # no quota plugin, or nothing uses queues: every job may enter
        return rejected
    for gid in order:
        gang = model.gangs[gid]
        leaf = job_queue(model, gid)
        if leaf is None:
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
        if tree.card_mode:
            request = card_request(model, tree, gid)
        else:
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
    quota_dims: tuple[str, ...]  # D: resources (capacity) or cpu, memory, card:<name> (cards)
    headroom: list[list[int]]  # [Q][D] realCapability − allocated (INF: no limit)
    type_queues: list[list[int]]  # [T] indices of the type's leaf queue and its ancestors
    type_quota_demand: list[list[int]]  # [T][D] what one pod uses of a quota, card dims 0
    type_card_dims: list[list[int]]  # [T] card alternatives as indices into quota_dims
    type_card_count: list[int]  # [T] cards per pod (0: no card demand)
    type_node_card: list[list[int]]  # [T][N] quota dim of the card the pod uses on node n; -1
    unit_order: list[int] | None  # units in Volcano's queue order (None: no queues in play)
    masks: dict[int, list[tuple[list[bool], int]]]  # gang -> [(node allowed, reason code)]
    scores: dict[int, list[float]]  # gang -> nodegroup score per node
    card_masks: dict[int, list[tuple[list[bool], int]]]  # type -> [(node allowed, reason code)]
    card_scores: dict[int, list[float]]  # type -> capacity-card score per node


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
    type_pods: list[list[str]],
    type_demand: list[list[int]],
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
    rejected_ids: dict[str, str] = {}
    if tree is not None:
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
    num_types, num_nodes = len(type_gang), len(model.nodes)
    type_card_dims: list[list[int]] = [[] for _ in range(num_types)]
    type_card_count = [0] * num_types
    type_node_card = [[-1] * num_nodes for _ in range(num_types)]
    card_masks: dict[int, list[tuple[list[bool], int]]] = {}
    card_scores: dict[int, list[float]] = {}
    if conf.enabled("capacity-card"):
        # Card awareness (node filter, scores, the card each pod uses) applies with or without
        # queues; quotas only where a queue tree exists.
        cards = tree.cards if tree is not None and tree.cards is not None else discover(model)
        quota_cards = _quota_cards(tree) if tree is not None else set()
        flag = conf.arguments("capacity-card").get("cardUnlimitedCpuMemory", False)
        unlimited = flag if isinstance(flag, bool) else False
        dims = [CPU, MEMORY, *sorted(CARD + c for c in {*cards.total, *quota_cards})]
        quota_demand = []
        offered = [set(node_cards(n)) for n in model.nodes]
        weight = card_weight(conf.arguments("capacity-card").get("nodeOrderWeight", 1.0))
        for t in range(num_types):
            pod = model.pod_by_key[type_pods[t][0]]
            try:
                demand = pod_card_demand(pod, cards)
            except CardError as err:
                card_masks[t] = [
                    ([False] * num_nodes, code_of(f"GetTaskRequestResourceFailed: {err}"))
                ]
                demand = None
            row = [
                0 if (unlimited and demand) else type_demand[t][resources.index(r)]
                for r in (CPU, MEMORY)
            ]
            quota_demand.append(row + [0] * (len(dims) - 2))
            if demand is None:
                continue
            type_card_count[t] = demand.count
            type_card_dims[t] = [
                dims.index(CARD + a) for a in demand.alternatives if CARD + a in dims
            ]
            card_row = [0.0] * num_nodes
            for n in range(num_nodes):
                pick = next((i for i, a in enumerate(demand.alternatives) if a in offered[n]), None)
                if pick is not None:
                    type_node_card[t][n] = dims.index(CARD + demand.alternatives[pick])
                    if len(demand.alternatives) > 1:
                        card_row[n] = 100 * 0.5**pick * weight
            allowed = [d >= 0 for d in type_node_card[t]]
            if not all(allowed):
                card_masks.setdefault(t, []).append(
                    (allowed, code_of(f"node offers none of card types {demand.key}"))
                )
            if any(card_row):
                card_scores[t] = card_row
        quota_dims: tuple[str, ...] = tuple(dims)
    else:
        quota_dims = resources
        quota_demand = [
            [0 if r == PODS else v for r, v in zip(resources, row, strict=True)]
            for row in type_demand
        ]
    headroom = [
        [
            INF
            if r == PODS or tree is None
            else max(0, _sub(tree.queues[q].real(r), tree.queues[q].allocated.get(r, 0)))
            for r in quota_dims
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
        tree=tree,
        enqueue_rejected=rejected,
        queue_names=tuple(queue_names),
        quota_dims=quota_dims,
        headroom=headroom,
        type_queues=type_queues,
        type_quota_demand=quota_demand,
        type_card_dims=type_card_dims,
        type_card_count=type_card_count,
        type_node_card=type_node_card,
        unit_order=unit_order,
        masks=masks,
        scores=scores,
        card_masks=card_masks,
        card_scores=card_scores,
    )


def _quota_cards(tree: QueueTree) -> set[str]:
    return {
        d.removeprefix(CARD)
        for q in tree.queues.values()
        for d in q.capability
        if d.startswith(CARD)
    }


def card_weight(value: object) -> float:
    """nodeOrderWeight: a positive number, else 1.0 (upstream warns and uses the default)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return 1.0
    return float(value)
