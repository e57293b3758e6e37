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
                room — for anti-affinity by hostname one more domain each, for device
                shares more devices, for the pods' own spread or affinity (`rules`) a node
                of each place by the terms' keys; when no eligible node has room left, the largest
                node — with the same labels and taints, empty; with a catalogue (`gangplan
                plan --catalog`), the cheapest +k of one of its node types instead, where
                that node stands
    cards       the gang's pods accept one more GPU card type (`volcano.sh/card.name`,
                Volcano's capacity-card): the first of the cluster's other card types, most
                cards first, with which it runs
    slices      a Kueue pod set in slices of k runs in slices of s (the largest s below k
                that divides its pods and runs: larger ones were tried and do not)
    min-member  the gang runs with minMember m (the largest m below its own that runs)
    topology    the gang runs with its required topology as a preference, in its dialect's
                words: PreferGather (Koordinator), networkTopology mode soft (Volcano),
                preferredTopologyLevel (KAI), podGroupAffinity preferred (Godel),
                podset-preferred-topology (Kueue); without the Workload API's constraint
    moves       the fewest running pods of their own moved elsewhere, only those
                `--consolidate` may move (`solver.consolidate.room_goal`; `solver.defrag`'s
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

import threading
import time

from solver.changes._base import (
    MAX_MOVES,
    MAX_MOVES_RUNNING,
    MAX_NODES,
    SPEC,
    Change,
    OutOfTime,
    Runs,
    Sized,
    _runs,
)
from solver.changes._cluster import _catalog_nodes, _enqueue, _nodes, _quota
from solver.changes._job import _cards, _min_member, _slices
from solver.changes._kueue import _kueue_quota
from solver.changes._room import _MOVES_SECONDS, _evictions, _moves, _moves_may_help
from solver.changes._topology import _topology
from solver.config import SchedulerConf
from solver.decision import Certificate
from solver.plan import Catalog
from solver.snapshot import Delta, Snapshot

__all__ = [
    "MAX_MOVES",
    "MAX_MOVES_RUNNING",
    "MAX_NODES",
    "SPEC",
    "Change",
    "OutOfTime",
    "changes",
]


def changes(
    snapshot: Snapshot,
    conf: SchedulerConf | None,
    gang: str,
    certificate: Certificate | None,
    *,
    time_limit: float = 2.0,
    deadline: float | None = None,
    stop: threading.Event | None = None,
    catalog: Catalog | None = None,
) -> list[Change]:
    """The checked changes that let `gang` (its pending pods in `snapshot`) run alone,
    smallest first (none when it runs). `time_limit` bounds each check; past `deadline` (a
    `time.perf_counter()` instant) the kinds not yet sized are left out (a change is never
    reported unchecked); `stop` being set (the caller has gone) ends the search the same
    way. `catalog`: the node types that may be bought (the `nodes` change buys from it)."""
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

    def nodes(snap: Snapshot, gang: str, cert: Certificate | None, runs: Runs) -> Sized | None:
        if catalog is None or not catalog.types:
            return _nodes(snap, gang, cert, runs)
        return _catalog_nodes(snap, gang, cert, runs, catalog)

    found: list[Change] = []
    try:
        if runs(Delta(), verified=True):
            return []
        kinds = (_quota, _enqueue, _kueue_quota, nodes, _cards, _slices, _min_member,
                 _topology, moves, evictions)  # fmt: skip
        for make in kinds:
            sized = make(snapshot, gang, certificate, runs)
            # sized on unverified answers; reported only once verified
            if sized is not None and runs(sized[1], verified=True):
                found.append(sized[0])
    except OutOfTime:
        pass
    order = {"quota": 0, "moves": 1, "preemption": 2, "nodes": 3, "cards": 4, "slices": 5,
             "min-member": 6, "topology": 7}  # fmt: skip
    return sorted(found, key=lambda c: order[c.kind])
