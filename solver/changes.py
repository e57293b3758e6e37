"""What would let a gang run: the smallest changes, each checked by placing the gang.

For a gang left out of an answer, each kind of change is sized by search and kept only
when it is checked: with the change, the gang alone (the other pending gangs left as they
are, pending) is placed by `schedule` — so `verify` passed (the search itself runs on
unverified answers; the size reported is verified) — and with the change one unit
smaller it is not (checked, or proven by the certificate's bound where the search starts
from it: k new nodes must offer what the gang is short of). Smallest first:

    quota       +X of a dimension on the queue that sets the limit (its capability); for a
                gang refused at enqueue, the smallest raise on one queue of its path
    nodes       +k nodes like the eligible node (or the best domain's node) with the most
                room, with the same labels and taints, empty
    cards       the gang's pods accept one more GPU card type (`volcano.sh/card.name`,
                Volcano's capacity-card): the first of the cluster's other card types, most
                cards first, with which it runs
    min-member  the gang runs with minMember m (the largest m below its own that runs)
    topology    the gang runs with PreferGather instead of MustGather (Koordinator)
    moves       the fewest running pods of their own moved elsewhere (`solver.defrag`'s
                room for a gang, CP-SAT, at most `MAX_MOVES`; offered only when proven
                fewest, so one move less does not run): consolidation, no eviction
    preemption  the victims the preemption planner picks for the gang (lower priority,
                cheapest plan, as `--preempt` would evict them), with them gone; offered
                only when every victim is needed (each one spared, the gang does not run)

A change is about the cluster before this cycle: other pending gangs may still take the
room first (the certificate says when they did). Each change is a `Delta` on the snapshot
(new nodes, one queue, one gang), so a check costs one scheduling call of the gang, not a
rebuild of the cluster (a node change re-packs the running pods' columns once per check).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from solver.config import SchedulerConf
from solver.decision import Certificate, Decision
from solver.defrag import DefragGoal, defragment, moves_delta
from solver.model import (
    CARD_NAME,
    GPU_MILLI,
    GPU_RESOURCE,
    KAI_RESOURCES,
    KAI_UNLIMITED,
    Node,
    Queue,
)
from solver.quantity import format_quantity
from solver.schedule import schedule, solve
from solver.snapshot import Delta, Snapshot, Workload

__all__ = ["MAX_MOVES", "MAX_MOVES_RUNNING", "MAX_NODES", "Change", "OutOfTime", "changes"]

MAX_NODES = 4096
"""The most nodes a `nodes` change may add."""
MAX_MOVES = 100
"""The most running pods a `moves` change may move."""
MAX_MOVES_RUNNING = 20_000
"""Past this many running pods no `moves` change is sought: the defragmentation planner's
input (O(running pods), in Python) would not fit a call's time."""
SPEC = "gang.scheduling.koordinator.sh/network-topology-spec"
HOST = "kubernetes.io/hostname"


@dataclass(frozen=True)
class Change:
    """One change that lets the gang run, checked; `size` in its unit (nodes, base units
    of a quota dimension, members)."""

    kind: str
    text: str
    size: int
    target: str = ""  # what it changes: the queue (several joined by ","), the node
    #   copied, the gang
    dimension: str = ""  # quota: the dimension raised

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "change": self.text,
            "size": self.size,
            "target": self.target,
            "dimension": self.dimension,
        }


class OutOfTime(Exception):
    """The deadline passed before a change was sized: that kind is left out."""


def changes(
    snapshot: Snapshot,
    conf: SchedulerConf | None,
    gang: str,
    certificate: Certificate | None,
    *,
    time_limit: float = 2.0,
    deadline: float | None = None,
    stop: threading.Event | None = None,
) -> list[Change]:
    """The checked changes that let `gang` (its pending pods in `snapshot`) run alone,
    smallest first (none when it runs). `time_limit` bounds each check; past `deadline` (a
    `time.perf_counter()` instant) the kinds not yet sized are left out (a change is never
    reported unchecked); `stop` being set (the caller has gone) ends the search the same
    way."""
    conf = conf or SchedulerConf.default()

    def left() -> float:
        return time_limit if deadline is None else min(time_limit, deadline - time.perf_counter())

    def runs(delta: Delta, verified: bool = False) -> bool:
        if left() <= 0.02 or (stop is not None and stop.is_set()):
            raise OutOfTime
        return _runs(snapshot.apply(delta), conf, gang, left(), verified)

    def moves(snap: Snapshot, gang: str, cert: Certificate | None, runs: Runs) -> Sized | None:
        # half of what is left (the other half checks it), at most _MOVES_SECONDS
        seconds = min(_MOVES_SECONDS, left() / 2)
        if seconds <= 0.05 or (stop is not None and stop.is_set()):
            raise OutOfTime
        if int(snap.running.alive.sum()) > MAX_MOVES_RUNNING:
            return None  # the planner reads every running pod: past this, not within a call
        if not _moves_may_help(snap, cert):
            return None
        return _moves(snap, gang, conf, seconds, stop)

    def evictions(snap: Snapshot, gang: str, cert: Certificate | None, runs: Runs) -> Sized | None:
        if cert is not None and cert.kind in ("predicates", "blocked"):
            return None  # evicting frees room; it changes no filter and lifts no gate
        return _evictions(snap, gang, conf, left(), runs)

    found: list[Change] = []
    try:
        if runs(Delta(), verified=True):
            return []
        for make in (_quota, _enqueue, _nodes, _cards, _min_member, _topology, moves, evictions):
            sized = make(snapshot, gang, certificate, runs)
            # sized on unverified answers; reported only once verified
            if sized is not None and runs(sized[1], verified=True):
                found.append(sized[0])
    except OutOfTime:
        pass
    order = {"quota": 0, "moves": 1, "preemption": 2, "nodes": 3, "cards": 4, "min-member": 5,
             "topology": 6}  # fmt: skip
    return sorted(found, key=lambda c: order[c.kind])


Runs = Callable[[Delta], bool]
Sized = tuple[Change, Delta]


def _runs(
    snapshot: Snapshot, conf: SchedulerConf, gang: str, time_limit: float, verified: bool
) -> bool:
    alone = snapshot.pending.get(gang)
    own = [alone] if alone is not None and alone.gang == gang else []
    workload = Workload.of(snapshot, pods=own) if own else Workload.of(snapshot, gang_ids=[gang])
    d: Decision = (schedule if verified else solve)(
        snapshot, conf, workload=workload, engine="auto", time_limit=time_limit, workers=1
    )
    return d.gang_placed(gang)


def _smallest(fits: Callable[[int], bool], top: int, start: int = 1) -> int | None:
    """The smallest k in start..top with fits(k), fits monotone (`start`: a proven lower
    bound); None when top does not fit. Steps grow geometrically from `start`, then bisect."""
    start = max(1, min(start, top))
    lo = hi = start  # lo: the smallest k not yet ruled out
    while not fits(hi):
        if hi >= top:
            return None
        lo = hi + 1
        hi = min(top, start + 2 * (hi - start + 1) - 1)
    while lo < hi:
        mid = (lo + hi) // 2
        if fits(mid):
            hi = mid
        else:
            lo = mid + 1
    return hi


def _quota(snapshot: Snapshot, gang: str, cert: Certificate | None, runs: Runs) -> Sized | None:
    if cert is None or cert.kind != "quota" or not cert.unit:
        return None
    queue, _, row = cert.constraint.removeprefix("queue ").partition(" ")
    dim = cert.unit
    q = snapshot.queues.get(queue)
    if q is not None and q.kai is not None:
        return _kai_quota(q, dim, "quota" if row else "limit", cert, runs)
    if q is None or dim not in q.capability:
        return None
    delta = cert.needed - cert.offered

    def raised(by: int) -> Delta:
        capability = {**q.capability, dim: q.capability[dim] + by}
        return Delta(upsert_queues=(q.model_copy(update={"capability": capability}),))

    if delta <= 0 or not runs(raised(delta)) or runs(raised(delta - 1)):
        return None
    shown = dim.removeprefix("card:")
    change = Change(
        "quota",
        f"+{format_quantity(dim, delta)} {shown} capability on queue {queue}",
        delta,
        queue,
        dim,
    )
    return change, raised(delta)


def _kai_quota(q: Queue, dim: str, field: str, cert: Certificate, runs: Runs) -> Sized | None:
    """A KAI Queue: the smallest raise of its limit (or, for a non-preemptible job, its
    quota) on the resource short; a quota dimension in milli-GPUs raises GPUs by 1/1000."""
    assert q.kai is not None
    resource, per = (GPU_RESOURCE, 1000) if dim == GPU_MILLI else (dim, 1)
    values: dict[str, float] = getattr(q.kai, field)
    now = values.get(resource, 0.0)
    delta = cert.needed - cert.offered
    if resource not in KAI_RESOURCES or now == KAI_UNLIMITED or delta <= 0:
        return None

    def raised(by: int) -> Delta:
        kai = q.kai.model_copy(update={field: {**values, resource: now + by / per}})  # type: ignore[union-attr]
        return Delta(upsert_queues=(q.model_copy(update={"kai": kai}),))

    if not runs(raised(delta)) or runs(raised(delta - 1)):
        return None
    text = f"+{format_quantity(dim, delta)} {resource} {field} on KAI queue {q.name}"
    return Change("quota", text, delta, q.name, dim), raised(delta)


def _enqueue(snapshot: Snapshot, gang: str, cert: Certificate | None, runs: Runs) -> Sized | None:
    """A gang refused at enqueue: the smallest raise of one capability on one queue of its
    path (leaf first), else on every queue of the path that limits it, that lets it in and
    run; searched up to what the gang requests of it."""
    g = snapshot.gangs.get(gang)
    if cert is None or cert.kind != "blocked" or cert.constraint != "enqueue" or g is None:
        return None
    asked = dict(g.min_resources) or _requests(snapshot, gang)
    path: list[str] = []
    name = g.queue
    while name and name in snapshot.queues and name not in path and len(path) < 64:
        path.append(name)
        name = snapshot.queues[name].parent
    for dim in sorted(d for d in asked if asked[d] > 0):
        limiting = [q for q in path if dim in snapshot.queues[q].capability]
        choices = [[q] for q in limiting] + ([limiting] if len(limiting) > 1 else [])
        for queues in choices:
            found = _raise(snapshot, queues, dim, asked[dim], runs)
            if found is not None:
                return found
    return None


def _raise(snapshot: Snapshot, queues: list[str], dim: str, top: int, runs: Runs) -> Sized | None:
    """The smallest raise of `dim` on all of `queues` (at most `top`) after which it runs."""

    def raised(by: int) -> Delta:
        return Delta(
            upsert_queues=tuple(
                q.model_copy(update={"capability": {**q.capability, dim: q.capability[dim] + by}})
                for q in (snapshot.queues[name] for name in queues)
            )
        )

    if not runs(raised(top)):
        return None
    by = _smallest(lambda x: runs(raised(x)), top)
    if by is None:
        return None
    where = f"queue {queues[0]}" if len(queues) == 1 else f"queues {', '.join(queues)}"
    text = f"+{format_quantity(dim, by)} {dim} capability on {where} (to enter it)"
    return Change("quota", text, by, ",".join(queues), dim), raised(by)


def _requests(snapshot: Snapshot, gang: str) -> dict[str, int]:
    """What the gang's pending pods request together."""
    total: dict[str, int] = {}
    for pod in snapshot.pending.values():
        if pod.gang == gang:
            for resource, value in pod.requests.items():
                total[resource] = total.get(resource, 0) + value
    return total


def _nodes(snapshot: Snapshot, gang: str, cert: Certificate | None, runs: Runs) -> Sized | None:
    if cert is None or cert.kind not in ("capacity", "pods", "domain") or not cert.places:
        return None
    if cert.kind == "domain":
        like = _node_in(snapshot, cert.places[0][0])
    else:
        like = snapshot.nodes.by_name.get(cert.places[0][0])
    if like is None:
        return None

    def more(k: int) -> Delta:
        return Delta(upsert_nodes=tuple(_clone(like, f"{like.name}-new-{i}") for i in range(k)))

    # more nodes than pending pods cannot be what it takes: each new node holds one at least
    group = _group(snapshot, gang)
    pending = sum(1 for p in snapshot.pending.values() if p.gang in group)
    top = max(1, min(MAX_NODES, pending))
    k = _smallest(lambda k: runs(more(k)), top, _fewest_nodes(cert, like))
    if k is None:
        return None
    where = f" in {cert.places[0][0]}" if cert.kind == "domain" else ""
    return Change("nodes", f"+{k} node(s) like {like.name}{where}, empty", k, like.name), more(k)


def _fewest_nodes(cert: Certificate, like: Node) -> int:
    """A lower bound on the nodes to add: the certificate's resource short, over what one
    empty copy offers of it (each copy is eligible where `like` is, in its domain)."""
    per = like.allocatable.get(cert.unit, 0) if cert.unit else 0
    short = cert.needed - cert.offered
    return max(1, -(-short // per)) if per > 0 and short > 0 else 1


def _group(snapshot: Snapshot, gang: str) -> set[str]:
    g = snapshot.gangs.get(gang)
    return {gang, *(g.groups if g is not None else ())}


def _node_in(snapshot: Snapshot, domain: str) -> Node | None:
    """The node of the named domain (a label value) with the most allocatable."""
    inside = [n for n in snapshot.nodes.nodes if domain in n.labels.values()]
    return max(inside, key=lambda n: sorted(n.allocatable.items()), default=None)


def _clone(node: Node, name: str) -> Node:
    labels = {**node.labels, **({HOST: name} if HOST in node.labels else {})}
    return node.model_copy(update={"name": name, "labels": labels})


def _cards(snapshot: Snapshot, gang: str, cert: Certificate | None, runs: Runs) -> Sized | None:
    """One more card type the gang's pods accept (all of them name the same cards now)."""
    pods = [p for p in snapshot.pending.values() if (p.gang or p.key) == gang]
    named = {p.annotations.get(CARD_NAME) for p in pods}
    if len(named) != 1 or None in named:
        return None
    (text,) = named
    assert text is not None
    listed = {c.strip() for c in text.split("|")}
    total = snapshot.nodes.cards.total
    for card in sorted((c for c in total if c not in listed), key=lambda c: (-total[c], c)):
        wider = f"{text}|{card}"
        delta = Delta(upsert_pods=tuple(
            p.model_copy(update={"annotations": {**p.annotations, CARD_NAME: wider}}) for p in pods
        ))  # fmt: skip
        if runs(delta):
            change = Change("cards", f"card {card} as an alternative ({CARD_NAME}: {wider})",
                            1, gang, dimension=card)  # fmt: skip
            return change, delta
    return None


def _min_member(
    snapshot: Snapshot, gang: str, cert: Certificate | None, runs: Runs
) -> Sized | None:
    g = snapshot.gangs.get(gang)
    if g is None or g.min_member <= 1:
        return None

    def with_min(m: int) -> Delta:
        return Delta(upsert_gangs=(g.model_copy(update={"min_member": m}),))

    # the largest m below min_member that runs: the smallest cut (min_member - m) that runs
    cut = _smallest(lambda c: runs(with_min(g.min_member - c)), g.min_member - 1)
    if cut is None:
        return None
    m = g.min_member - cut
    change = Change("min-member", f"minMember {m} instead of {g.min_member}", cut, gang)
    return change, with_min(m)


def _topology(snapshot: Snapshot, gang: str, cert: Certificate | None, runs: Runs) -> Sized | None:
    g = snapshot.gangs.get(gang)
    if g is None or "MustGather" not in g.annotations.get(SPEC, ""):
        return None
    try:
        spec = json.loads(g.annotations[SPEC])
    except ValueError:
        return None
    for rule in spec.get("gatherStrategy", []):
        if isinstance(rule, dict) and rule.get("strategy") == "MustGather":
            rule["strategy"] = "PreferGather"
    annotations = {**g.annotations, SPEC: json.dumps(spec)}
    prefer = Delta(upsert_gangs=(g.model_copy(update={"annotations": annotations}),))
    if not runs(prefer):
        return None
    return Change("topology", "PreferGather instead of MustGather", 1, gang), prefer


def _moves_may_help(snapshot: Snapshot, cert: Certificate | None) -> bool:
    """Moving pods never helps a gang held by its queue or its own filters, nor one short
    of a resource the whole cluster lacks (moves add no room, they only gather it)."""
    if cert is None:
        return True
    if cert.kind in ("quota", "predicates", "blocked"):
        return False
    if cert.kind == "capacity" and cert.unit:
        axis = (cert.unit,)
        free = snapshot.nodes.capacity(axis)[:, 0] - snapshot.used(axis)[:, 0]
        return int(free.clip(min=0).sum()) >= cert.needed
    return True


def _moves(
    snapshot: Snapshot,
    gang: str,
    conf: SchedulerConf,
    seconds: float,
    stop: threading.Event | None,
) -> Sized | None:
    """Room by moving running pods (consolidation): CP-SAT's fewest moves within `seconds`,
    then checked like every change (the gang scheduled on the cluster with the moves)."""
    plan = defragment(
        snapshot, DefragGoal(gang=gang, max_pods=MAX_MOVES), engine="cpsat",
        time_limit=seconds, workers=1, seed=0, stop=stop, conf=conf,
    )  # fmt: skip
    if not plan.moves or plan.status != "OPTIMAL":  # smallest only when proven fewest
        return None
    rows = {int(snapshot.running.find(m.pod)): m.target for m in plan.moves}
    sources = len({m.source for m in plan.moves})
    text = f"move {len(plan.moves)} running pod(s) off {sources} node(s) (gangplan defrag --gang)"
    return Change("moves", text, len(plan.moves), target=gang), moves_delta(snapshot, rows)


MAX_VICTIMS = 32
"""The most victims a `preemption` change names (each is checked to be needed)."""


def _evictions(
    snapshot: Snapshot, gang: str, conf: SchedulerConf, seconds: float, runs: Runs
) -> Sized | None:
    """The preemption planner's victims for the gang alone (`schedule(preempt=True)`), when
    each of them is needed: with it spared and the others gone, the gang does not run."""
    alone = snapshot.pending.get(gang)
    own = [alone] if alone is not None and alone.gang == gang else []
    workload = Workload.of(snapshot, pods=own) if own else Workload.of(snapshot, gang_ids=[gang])
    d = schedule(snapshot, conf, workload=workload, engine="auto", time_limit=seconds / 2,
                 workers=1, preempt=True)  # fmt: skip
    victims = tuple(sorted(v.pod for v in d.victims))
    if not victims or len(victims) > MAX_VICTIMS:
        return None
    for spared in victims:  # irreducible: every victim is needed
        if runs(Delta(remove_pods=tuple(v for v in victims if v != spared))):
            return None
    running = snapshot.running
    jobs = sorted({running.gang_name(g) if (g := int(running.gang[running.find(v)])) >= 0 else v
                   for v in victims})  # fmt: skip
    nodes = sorted({v.node for v in d.victims})
    named = ", ".join(jobs[:3]) + (f" and {len(jobs) - 3} more" if len(jobs) > 3 else "")
    text = (f"evict {len(victims)} pod(s) of {named} on {', '.join(nodes[:3])}"
            f"{' …' if len(nodes) > 3 else ''} (gangplan schedule --preempt)")  # fmt: skip
    return Change("preemption", text, len(victims), target=gang), Delta(remove_pods=victims)


_MOVES_SECONDS = 1.0
