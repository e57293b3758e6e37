"""Queue quotas and node groups, re-derived from the Queue specs and the node labels.

* `capacity` / `capacity-card`: for every queue (leaf and every ancestor), allocated + the use of its newly placed pods
  stays within realCapability on each dimension those pods use. realCapability is derived
  here from the specs (Volcano's hierarchical rules, or capacity-card's quotas);
  allocated is the snapshot's usage of the running pods charged to the queue and its
  descendants, less the Decision's victims (evicted pods free their queue's quota, as
  Volcano's DeallocateFunc does at every level); a placed card pod uses the card type the
  Decision names (checked below).
* `nodegroup`: every placed pod of a job in a queue is on a node its queue's node-group
  affinity allows.
* `capacity-card`: a pod with `volcano.sh/card.name` is reported with a card type that is
  one of its alternatives and that its node offers.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from functools import partial

from solver.config import Plugin
from solver.json_limits import read_json
from solver.model import GPU_MILLI, Node, Pod, Queue, gpu_milli, in_gpu_milli, pod_queue
from solver.verify._context import VerifyContext
from solver.verify._shares import shares

__all__ = ["cards", "nodegroups", "quotas"]

UNLIMITED = 2**62
CARD_NAME = "volcano.sh/card.name"
CARD_QUOTA = "volcano.sh/card.quota"
NODEGROUP = "volcano.sh/nodegroup-name"
UNSET_CARD = "card:"  # capacity-card: the quota of a card type the queue does not list


def _queue_of(ctx: VerifyContext, gang_id: str) -> str | None:
    """The job's queue: its spec.queue, else the first queue its pods name (`pod_queue`)."""
    if gang_id not in ctx.job_queue:
        gang = ctx.workload.gangs[gang_id]
        ctx.job_queue[gang_id] = gang.queue or next(
            (q for p in ctx.members(gang_id) if (q := pod_queue(p.labels, p.annotations))), None
        )
    return ctx.job_queue[gang_id]


def _parents(queues: Mapping[str, Queue], hierarchical: bool) -> dict[str, str | None]:
    out: dict[str, str | None] = {"root": None}
    for name, spec in queues.items():
        if name != "root":
            out[name] = (spec.parent or "root") if hierarchical else "root"
    return out


def _ancestors(parents: dict[str, str | None], name: str) -> list[str] | None:
    """`name` and its ancestors up to root; None on a missing parent or a cycle."""
    out: list[str] = []
    seen: set[str] = set()
    walk: str | None = name
    while walk is not None:
        if walk in seen or walk not in parents:
            return None
        seen.add(walk)
        out.append(walk)
        walk = parents[walk]
    return out


def _plus(a: int, b: int) -> int:
    return UNLIMITED if max(a, b) >= UNLIMITED else a + b


def _real_capabilities(
    ctx: VerifyContext,
    queues: Mapping[str, Queue],
    parents: dict[str, str | None],
    cards: bool,
    milli: bool = False,
) -> dict[str, dict[str, int]]:
    """realCapability of every queue (missing resources: unlimited; capacity-card: a card
    type a queue does not list has the limit under `UNSET_CARD`)."""
    children: dict[str, list[str]] = defaultdict(list)
    for name, parent in parents.items():
        if parent is not None:
            children[parent].append(name)
    spec = {name: queues.get(name) for name in parents}
    if cards:
        out: dict[str, dict[str, int]] = {}
        for name, q in spec.items():
            leaf = not children[name] and q is not None
            unset = 0 if leaf else UNLIMITED
            cap = dict((q.capability if q else {}).items())
            limit = {r: cap[r] if cap.get(r, 0) > 0 else unset for r in ("cpu", "memory")}
            try:
                quota = read_json((q.annotations if q else {}).get(CARD_QUOTA) or "{}")
            except json.JSONDecodeError:
                quota = {}
            if not isinstance(quota, dict):
                quota = {}
            limit.update(
                {f"card:{k}": int(v) for k, v in quota.items() if isinstance(v, int | float)}
            )
            limit[UNSET_CARD] = unset
            out[name] = limit
        return out
    hierarchical = ctx.conf.plugin(Plugin.CAPACITY) is None or bool(
        ctx.conf.plugin(Plugin.CAPACITY).options.get("enableHierarchy", True)  # type: ignore[union-attr]
    )

    def limits(own: dict[str, int], inherit: dict[str, int] | None) -> dict[str, int]:
        out = {r: v for r, v in own.items() if r != "pods"}
        for r in ("cpu", "memory"):
            if out.get(r, 0) <= 0:
                out[r] = inherit.get(r, UNLIMITED) if inherit is not None else UNLIMITED
        if inherit is not None and hierarchical:
            for r, v in inherit.items():
                out.setdefault(r, v)
        return out

    capability: dict[str, dict[str, int]] = {}
    real: dict[str, dict[str, int]] = {}
    root = spec["root"]
    if hierarchical:
        capability["root"] = limits(root.capability if root else {}, None)
    else:
        total: dict[str, int] = defaultdict(int)
        for node in ctx.snapshot.nodes.nodes:
            for r, v in node.allocatable.items():
                if r != "pods":
                    total[r] += v
        capability["root"] = in_gpu_milli(total, UNLIMITED) if milli else dict(total)
    real["root"] = dict(capability["root"])
    todo = ["root"]
    while todo:
        parent = todo.pop(0)
        guaranteed: dict[str, int] = defaultdict(int)
        for child in children[parent]:
            q = spec[child]
            for r, v in (q.guarantee if q else {}).items():
                guaranteed[r] += v
        for child in sorted(children[parent]):
            q = spec[child]
            own = q.capability if q else {}
            capability[child] = limits(own, capability[parent] if hierarchical else None)
            guarantee = q.guarantee if q else {}
            mine: dict[str, int] = {}
            for r in (set(real[parent]) | set(capability[child]) | set(guarantee)) - {"pods"}:
                above = real[parent].get(r, UNLIMITED)
                carved = above if above >= UNLIMITED else max(above - guaranteed[r], 0)
                mine[r] = min(
                    _plus(carved, guarantee.get(r, 0)), capability[child].get(r, UNLIMITED)
                )
            real[child] = mine
            todo.append(child)
    return real


def _card_use(
    ctx: VerifyContext, pod: Pod, node: Node, card: str | None
) -> tuple[dict[str, int], str | None]:
    """What a placed pod uses under capacity-card, and a violation when its card is wrong."""
    text = pod.annotations.get(CARD_NAME, "").strip()
    alternatives = [a.strip() for a in text.split("|") if a.strip()]
    args = ctx.conf.arguments(Plugin.CAPACITY_CARD)
    unlimited = args.get("cardUnlimitedCpuMemory") is True
    use: dict[str, int] = {}
    why = None
    if alternatives:
        offered = _offered_cards(node)
        if card is None or card not in alternatives or card not in offered:
            why = f"{pod.key} on {node.name}: card {card} is not one of {text} offered by the node"
        else:
            use[f"card:{card}"] = pod.requests.get(offered[card], 0)
    if not (unlimited and alternatives):
        use.update({r: v for r, v in pod.requests.items() if r in ("cpu", "memory")})
    return use, why


def _offered_cards(node: Node) -> dict[str, str]:
    """Card type -> resource name, from the product label and allocatable (capacity-card)."""
    for key in sorted(node.labels):
        if not key.endswith(".product") or "nvidia.com/mig-" in key or "/" not in key:
            continue
        base = key.removesuffix(".product")
        prefix, kind = base.split("/", 1)
        if not kind or not kind.replace("_", "").isalnum():
            continue
        if f"{base}.count" not in node.labels or f"{base}.memory" not in node.labels:
            continue
        product = node.labels[key]
        try:
            memory_gb = round(int(node.labels[f"{base}.memory"]) / 1024)
        except ValueError:
            memory_gb = 0
        out: dict[str, str] = {}
        for resource, amount in node.allocatable.items():
            if amount <= 0:
                continue
            if resource == "nvidia.com/gpu.shared":
                replicas = node.labels.get("nvidia.com/gpu.replicas", "0")
                if replicas.isdigit() and int(replicas) > 0:
                    out[f"{product}/mps-{memory_gb}g*1/{replicas}"] = resource
            elif resource.startswith("nvidia.com/mig-"):
                out[f"{product}/mig-{resource.removeprefix('nvidia.com/mig-')}-mixed"] = resource
            elif resource.startswith(prefix):
                out[product] = resource
        return out
    return {}


def _allocated(ctx: VerifyContext, queue: str, cards: bool, unlimited: bool) -> dict[str, int]:
    """The snapshot's usage charged to one queue (not its descendants)."""
    snapshot = ctx.snapshot
    running = snapshot.running
    q = running.queue_names.get(queue)
    usage = snapshot.usage
    if q < 0 or q >= usage.queue_requests.shape[0]:
        return {}
    names = running.resources
    requests = dict(zip(names, usage.queue_requests[q].tolist(), strict=False))
    if not cards:
        return {r: v for r, v in requests.items() if r != "pods" and v}
    plain = dict(zip(names, usage.queue_plain[q].tolist(), strict=False))
    source = plain if unlimited else requests
    out = {r: source.get(r, 0) for r in ("cpu", "memory")}
    for c, v in enumerate(usage.queue_cards[q].tolist()):
        if v:
            out[f"card:{running.card_names.value(c)}"] = v
    return out


def _charged_queue(ctx: VerifyContext, row: int) -> str | None:
    """The queue a running pod is charged to: its gang's spec.queue, else its own
    queue annotation or KAI queue label (`pod_queue`)."""
    running = ctx.snapshot.running
    gang = int(running.gang[row])
    if gang >= 0:
        spec = ctx.snapshot.gangs.get(running.gang_name(gang))
        if spec is not None and spec.queue:
            return spec.queue
    return pod_queue(running.labels(row), running.annotations(row))


def _evicted_use(ctx: VerifyContext, cards: bool, unlimited: bool) -> dict[str, dict[str, int]]:
    """Per queue, what the Decision's victims charged to it held (in `_allocated`'s terms)."""
    running = ctx.snapshot.running
    out: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for key in sorted(ctx.evicted):
        row = running.find(key)
        queue = _charged_queue(ctx, row) if row >= 0 else None
        if queue is None:
            continue
        requests = dict(zip(running.resources, running.requests()[row].tolist(), strict=False))
        card = running.card_text(row) if cards and int(running.card_type[row]) >= 0 else None
        use = {r: v for r, v in requests.items() if r != "pods" and v}
        if cards:
            use = {} if unlimited and card else {r: use.get(r, 0) for r in ("cpu", "memory")}
            if card is not None:
                name = running.card_names.value(int(running.card_type[row]))
                use[f"card:{name}"] = int(running.card_count[row])
        for r, v in use.items():
            out[queue][r] += v
    return out


def quotas(ctx: VerifyContext) -> list[str]:
    problems: list[str] = []
    placed = [pod for pods in ctx.new_on.values() for pod in pods]
    cards = ctx.conf.enabled(Plugin.CAPACITY_CARD)
    plugin = ctx.conf.plugin("capacity-card" if cards else "capacity")
    hierarchical = plugin is None or bool(plugin.options.get("enableHierarchy", True))
    queues = dict(ctx.snapshot.queues)
    if any(q.kai is not None or q.kueue is not None for q in queues.values()):
        return problems  # KAI Queues: `_kai`; Kueue's: `_kueue_quotas`
    parents = _parents(queues, hierarchical)
    job_queues = {_queue_of(ctx, pod.gang) for pod in placed} - {None}
    if "default" in job_queues and "default" not in parents:
        parents["default"] = "root"
    if not queues and not job_queues:
        return problems
    shared = None if cards else shares(ctx.snapshot, ctx.workload, partial(_charged_queue, ctx))
    if shared is not None:  # GPU shares in play: nvidia.com/gpu counted in milli-GPUs
        queues = {
            name: q.model_copy(
                update={
                    "capability": in_gpu_milli(q.capability, UNLIMITED),
                    "guarantee": in_gpu_milli(q.guarantee, UNLIMITED),
                }
            )
            for name, q in queues.items()
        }
    real = _real_capabilities(ctx, queues, parents, cards, milli=shared is not None)
    has_children = {p for p in parents.values() if p is not None}
    unlimited = ctx.conf.arguments(Plugin.CAPACITY_CARD).get("cardUnlimitedCpuMemory") is True
    added: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for pod in placed:
        leaf = _queue_of(ctx, pod.gang)
        if leaf is None:
            continue
        path = _ancestors(parents, leaf) if leaf in parents else None
        if path is None or leaf in has_children:
            problems.append(f"{pod.key}: placed although queue {leaf} cannot run jobs")
            continue
        if cards:
            card = ctx.decision.placements[pod.key].card
            use, _ = _card_use(ctx, pod, ctx.node(ctx.target[pod.key]), card)
        else:
            use = {r: v for r, v in pod.requests.items() if r != "pods"}
            if shared is not None:
                use = in_gpu_milli(use, UNLIMITED)
                use[GPU_MILLI] = gpu_milli(pod.requests, pod.annotations)[0]
        for name in path:
            for r, v in use.items():
                added[name][r] += v
    subtree: dict[str, list[str]] = defaultdict(list)  # queue -> itself and every descendant
    for q in parents:
        for name in _ancestors(parents, q) or []:
            subtree[name].append(q)
    own: dict[str, dict[str, int]] = {}
    freed = _evicted_use(ctx, cards, unlimited)
    for name, extra in sorted(added.items()):
        allocated: dict[str, int] = defaultdict(int)
        for q in subtree[name]:
            if q not in own:
                own[q] = _allocated(ctx, q, cards, unlimited)
                if shared is not None:
                    own[q] = in_gpu_milli(own[q], UNLIMITED)
                    own[q][GPU_MILLI] = own[q].get(GPU_MILLI, 0) + shared[1].get(q, 0)
            for r, v in own[q].items():
                allocated[r] += v
            for r, v in freed.get(q, {}).items():
                allocated[r] -= v
        for r, v in sorted(extra.items()):
            unset = real[name].get(UNSET_CARD, UNLIMITED) if r.startswith("card:") else UNLIMITED
            limit = real[name].get(r, unset)
            if v and limit < UNLIMITED and allocated[r] + v > limit:
                problems.append(
                    f"queue {name}: {r} allocated {allocated[r]} + placed {v} > realCapability {limit}"
                )
    return problems


def cards(ctx: VerifyContext) -> list[str]:
    problems = []
    for node_name, pods in sorted(ctx.new_on.items()):
        for pod in pods:
            card = ctx.decision.placements[pod.key].card
            _, why = _card_use(ctx, pod, ctx.node(node_name), card)
            if why:
                problems.append(why)
    return problems


def _affinity(queues: Mapping[str, Queue], queue: str, hierarchy: bool) -> dict[str, list[str]]:
    """The node-group terms in force for a queue (its own, else its nearest ancestor's)."""
    walk: str | None = queue
    seen: set[str] = set()
    while walk is not None and walk not in seen:
        seen.add(walk)
        spec = queues.get(walk)
        terms = _terms(spec)
        if any(terms.values()) or not hierarchy:
            return terms
        if spec is None and walk != queue:
            break
        walk = (spec.parent if spec else None) or ("root" if walk != "root" else None)
    return _terms(None)


def _terms(spec: Queue | None) -> dict[str, list[str]]:
    affinity = (spec.affinity if spec else None) or {}
    out = {}
    for key, block in (
        ("", affinity.get("nodeGroupAffinity")),
        ("anti-", affinity.get("nodeGroupAntiAffinity")),
    ):
        body = block if isinstance(block, dict) else {}
        for kind, field in (
            ("required", "requiredDuringSchedulingIgnoredDuringExecution"),
            ("preferred", "preferredDuringSchedulingIgnoredDuringExecution"),
        ):
            values = body.get(field)
            out[key + kind] = [str(v) for v in values] if isinstance(values, list) else []
    return out


def nodegroups(ctx: VerifyContext) -> list[str]:
    plugin = ctx.conf.plugin("nodegroup")
    strict = ctx.conf.arguments(Plugin.NODEGROUP).get("strict", True)
    strict = strict if isinstance(strict, bool) else True
    hierarchy = bool(plugin.options.get("enableHierarchy", False)) if plugin else False
    problems = []
    in_force: dict[str, dict[str, list[str]]] = {}  # queue -> its terms, once per call
    for node_name, pods in sorted(ctx.new_on.items()):
        group = ctx.node(node_name).labels.get(NODEGROUP)
        for pod in pods:
            queue = _queue_of(ctx, pod.gang)
            if queue is None:
                continue
            if queue not in in_force:
                in_force[queue] = _affinity(ctx.snapshot.queues, queue, hierarchy)
            terms = in_force[queue]
            unset = not any(terms.values())
            if group is None:
                ok = not strict and unset
            elif unset:
                ok = False
            else:
                ok = group in terms["required"] or group in terms["preferred"]
                ok = (ok and group not in terms["anti-required"]) or group in terms[
                    "anti-preferred"
                ]
            if not ok:
                problems.append(
                    f"{pod.key} on {node_name}: not allowed by queue {queue}'s node groups"
                )
    return problems
