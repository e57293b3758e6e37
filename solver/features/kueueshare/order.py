"""Kueue's scheduling cycles over one call's workloads (`pkg/scheduler/scheduler.go`).

Each ClusterQueue orders its pending workloads by priority (higher first), then creation
(earlier first), then id (Kueue's `BestEffortFIFO` and `StrictFIFO` queues). A **cycle**:

1. takes the head of every ClusterQueue and assigns it flavors on the usage at the start
   of the cycle (`flavors.assign`); a head that does not fit is inadmissible: under
   `BestEffortFIFO` the next workload becomes the head, under `StrictFIFO` it stays the
   head and every workload behind it waits;
2. orders the heads that fit:
   - **classical** (`classicalIterator`), as numbered criteria:
     1. the lower borrowing level first (0: within the ClusterQueue's own quota);
     2. priority, higher first;
     3. creation, earlier first;
   - **fair sharing** (`fairSharingIterator`, with `fairSharing` in the conf): one
     workload at a time, by a tournament from the root of each cohort tree; at each
     cohort its children's candidates are compared:
     1. not borrowing (on the flavor-resources the workload uses) first;
     2. the lower dominant resource share of the child, with the workload admitted
        (`quota.KueueNodes.drs`);
     3. priority, higher first;
     4. creation, earlier first;
3. admits each in that order when it still fits the usage left by the ones before it;
   one that no longer fits stays the head for the next cycle.

Cycles repeat until one admits nothing and finds nothing new inadmissible. The answer
is the order of the walk (admitted first, as admitted; the rest after), each workload's
assignment and, for those left out, why.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from solver.features.kueueshare.flavors import Assignment, PodSet, assign
from solver.features.kueueshare.quota import Drs, KueueNodes
from solver.model import KueueQueue

__all__ = ["Cycles", "Workload", "run_cycles"]


@dataclass(frozen=True)
class Workload:
    """One unit of the call as Kueue sees it: its ClusterQueue, pod sets and sort key."""

    unit: int
    name: str  # the unit's id, for reasons
    cq: str
    pod_sets: tuple[PodSet, ...]
    key: tuple[int, str, str]  # the order inside its ClusterQueue: -priority, created, id
    priority: int


@dataclass
class Cycles:
    """What the cycles decided."""

    order: list[int] = field(default_factory=list)  # units, admitted first
    assigned: dict[int, Assignment] = field(default_factory=dict)  # unit -> its flavors
    refused: dict[int, str] = field(default_factory=dict)  # unit -> why


def run_cycles(
    nodes: KueueNodes,
    specs: dict[str, KueueQueue],
    workloads: Sequence[Workload],
    fair_sharing: bool,
) -> Cycles:
    """Kueue's cycles (see the module) on a copy of `nodes`."""
    nodes = nodes.copy()
    out = Cycles()
    queues: dict[str, deque[Workload]] = {}
    for w in sorted(workloads, key=lambda w: w.key):
        queues.setdefault(w.cq, deque()).append(w)
    while queues:
        progress = False
        entries: list[tuple[Workload, Assignment]] = []
        for cq in sorted(queues):
            waiting = queues[cq]
            while waiting:
                head = waiting[0]
                found = assign(nodes, cq, specs[cq], head.pod_sets)
                if found.why is None:
                    entries.append((head, found))
                    break
                progress = True
                if specs[cq].strategy == "StrictFIFO":
                    for behind in waiting:
                        out.refused[behind.unit] = (
                            found.why if behind is head
                            else f"StrictFIFO: waits behind {head.name} in ClusterQueue {cq}"
                        )  # fmt: skip
                    waiting.clear()
                else:
                    out.refused[head.unit] = found.why
                    waiting.popleft()
        pick = _fair_pick if fair_sharing else _classical_pick
        for w, found in pick(nodes, entries):
            if _fits(nodes, w.cq, found):  # else it stays the head for the next cycle
                nodes.add_all(w.cq, found.usage)
                out.order.append(w.unit)
                out.assigned[w.unit] = found
                queues[w.cq].popleft()
                progress = True
        for cq in [cq for cq, waiting in queues.items() if not waiting]:
            del queues[cq]
        if not progress:
            for waiting in queues.values():
                for w in waiting:
                    out.refused[w.unit] = "no longer fits after admitting other workloads"
            break
    out.order.extend(sorted(out.refused))
    return out


def _fits(nodes: KueueNodes, cq: str, found: Assignment) -> bool:
    return all(v <= nodes.available(cq, fr) for fr, v in found.usage.items())


Entry = tuple[Workload, Assignment]


def _classical_pick(nodes: KueueNodes, entries: list[Entry]) -> Iterator[Entry]:
    """The heads as `classicalIterator` sorts them (the module's criteria 1-3)."""
    return iter(sorted(entries, key=lambda e: (e[1].borrowing, e[0].key)))


def _fair_pick(nodes: KueueNodes, entries: list[Entry]) -> Iterator[Entry]:
    """The heads in the fair-sharing tournament's order, each pop on the usage the ones
    before it left (the caller admits between pops: this generator reads `nodes` live).

    A head's shares (its ClusterQueue's and ancestors' DRS with it admitted) are kept
    between pops and computed again only when a popped head's ClusterQueue shares a node
    below the root with its path: only those nodes' usage can have moved."""
    by_root: dict[str, list[Entry]] = {}
    for e in entries:
        by_root.setdefault(nodes.root(e[0].cq).name, []).append(e)
    shares: dict[int, dict[str, Drs]] = {}
    while by_root:
        root = min(by_root)
        mine = by_root[root]
        for w, found in mine:
            if w.unit not in shares:
                shares[w.unit] = _shares(nodes, w, found)
        best = _tournament(nodes, root, mine, shares)
        mine.remove(best)
        if not mine:
            del by_root[root]
        below = set(nodes.path_names(best[0].cq)[:-1])
        for w, _ in mine:
            if below & set(nodes.path_names(w.cq)[:-1]):
                shares.pop(w.unit, None)
        yield best


def _shares(nodes: KueueNodes, w: Workload, found: Assignment) -> dict[str, Drs]:
    """Per cohort on the head's path, the DRS of its child on that path with the head
    admitted (`computeDRS`)."""
    nodes.add_all(w.cq, found.usage)
    path = nodes.path(w.cq)
    out = {parent.name: nodes.drs(child.name) for child, parent in itertools.pairwise(path)}
    nodes.add_all(w.cq, found.usage, sign=-1)
    return out


def _tournament(
    nodes: KueueNodes, root: str, entries: list[Entry], shares: dict[int, dict[str, Drs]]
) -> Entry:
    """`runTournament`: the winner at `root`, comparing at every cohort the candidates its
    children put forward."""
    if nodes.nodes[root].cluster_queue:  # a ClusterQueue without a cohort
        return entries[0]
    by_cq = {w.cq: (w, found) for w, found in entries}

    def run(cohort: str) -> Entry | None:
        node = nodes.nodes[cohort]
        candidates = []
        for child in sorted(node.children):
            if nodes.nodes[child].cluster_queue:
                if child in by_cq:
                    candidates.append(by_cq[child])
            elif (won := run(child)) is not None:
                candidates.append(won)
        if not candidates:
            return None

        def key(e: Entry) -> tuple[bool, tuple[int, float], int, tuple[int, str, str]]:
            drs = shares[e[0].unit][cohort]
            borrowing = bool(drs.borrowed & set(e[1].usage))
            return (borrowing, drs.key(), -e[0].priority, e[0].key)

        return min(candidates, key=key)

    won = run(root)
    assert won is not None
    return won
