"""`gangplan queues validate`: Volcano's Queue admission-webhook rules over a whole tree
(KAI-Scheduler Queues: `_kai_verdicts`; Kueue's: `_kueue_verdicts`).

Rules (reference/volcano.md §3.6), checked for every queue in the input:

1. every `guarantee` resource is also in `deserved`, with deserved ≥ guarantee;
2. for resources in both, deserved ≤ capability;
3. `status.state` is Open or Closed;
4. the parent is not the queue itself, exists, and the tree has no cycle;
5. the depth (root = 0) is at most `max_depth`;
6. a parent that runs pods itself (allocated pods, or bound pods of its jobs) takes no
   children ("cannot be the parent queue of ... because it has allocated Pods");
7. below root: each capability resource ≤ the capability of the nearest ancestor below
   root that defines it; Σ guarantee and Σ deserved of the queue and its siblings ≤ the
   parent's (a resource the parent lacks counts as 0); children of root are exempt;
8. with children: each capability resource ≥ the largest capability found in every child
   subtree; Σ children's guarantee/deserved ≤ its own.

Deleting is checked with `delete=`: never `root` or `default`, never a queue with children.
Warnings (the nodegroup seed's "risk"): a queue whose capability exceeds what the nodes of
its node groups can ever offer; a `volcano.sh/nodegroup-resource-limits` annotation that
cannot be read (Volcano's webhook admits it, and then every node fails for the queue's pods).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from solver.features.nodegroup import ANNOTATION as LIMITS_ANNOTATION
from solver.features.nodegroup import LABEL as NODEGROUP_LABEL
from solver.features.nodegroup import queue_affinity
from solver.features.nodegroup.limits import parse_limits
from solver.features.queues.tree import ROOT, sum_resources
from solver.model import MAX_COHORT_DEPTH, Queue
from solver.quantity import PODS, format_quantity
from solver.snapshot import Snapshot

__all__ = ["DEFAULT_MAX_DEPTH", "QueueVerdict", "validate_queues"]

DEFAULT_MAX_DEPTH = 10


@dataclass
class QueueVerdict:
    valid: bool = True
    problems: list[tuple[str, str]] = field(default_factory=list)  # (field path, message)
    warnings: list[str] = field(default_factory=list)

    def fail(self, field_path: str, reason: str) -> None:
        self.valid = False
        self.problems.append((field_path, reason))

    @property
    def reason(self) -> str:
        return "; ".join(message for _, message in self.problems)


def _parent(queues: dict[str, Queue], name: str) -> str | None:
    if name == ROOT:
        return None
    return queues[name].parent or ROOT


def _chain(queues: dict[str, Queue], name: str) -> tuple[list[str], str | None]:
    """Ancestors (parent first, root last) and the problem that cut the walk, if any."""
    out: list[str] = []
    seen = {name}
    p = _parent(queues, name)
    while p is not None:
        if p in seen:
            return out, f"cycle in the queue tree through {p}"
        if p != ROOT and p not in queues:
            return out, f"parent queue {p} does not exist"
        seen.add(p)
        out.append(p)
        p = _parent(queues, p) if p in queues else None
    return out, None


def _path(attr: str) -> str:
    return "guarantee.resource" if attr == "guarantee" else attr


def _fmt(resources: dict[str, int]) -> str:
    return (
        "{" + ", ".join(f"{r}: {format_quantity(r, v)}" for r, v in sorted(resources.items())) + "}"
    )


def _running_pods(snapshot: Snapshot) -> dict[str, int]:
    """Running pods charged to each queue (the snapshot's usage), or its status.allocated."""
    running = snapshot.running
    counts: dict[str, int] = {}
    if PODS in running.resources:
        column = snapshot.usage.queue_requests[:, running.resources.index(PODS)]
        for q in np.flatnonzero(column > 0).tolist():
            counts[running.queue_names.value(q)] = int(column[q])
    for name, spec in snapshot.queues.items():
        counts[name] = max(counts.get(name, 0), spec.allocated.get(PODS, 0))
    return counts


def validate_queues(
    snapshot: Snapshot, *, max_depth: int = DEFAULT_MAX_DEPTH, delete: str | None = None
) -> dict[str, QueueVerdict]:
    queues = dict(snapshot.queues)
    if any(q.kai is not None for q in queues.values()):
        return _kai_verdicts(queues)
    if any(q.kueue is not None for q in queues.values()):
        return _kueue_verdicts(queues)
    verdicts = {name: QueueVerdict() for name in sorted(queues)}
    children: dict[str, list[str]] = {}
    for name in queues:
        p = _parent(queues, name)
        if p is not None:
            children.setdefault(p, []).append(name)
    running = _running_pods(snapshot)

    for name, q in sorted(queues.items()):
        v = verdicts[name]
        for r, g in sorted(q.guarantee.items()):
            if r not in q.deserved:
                v.fail(
                    f"spec.guarantee.resource.{r}",
                    f"guarantee[{r}] is set but deserved[{r}] is not",
                )
            elif q.deserved[r] < g:
                v.fail(
                    f"spec.deserved.{r}",
                    f"deserved[{r}]={format_quantity(r, q.deserved[r])} is less than guarantee[{r}]={format_quantity(r, g)}",
                )
        for r, d in sorted(q.deserved.items()):
            if r in q.capability and d > q.capability[r]:
                v.fail(
                    f"spec.deserved.{r}",
                    f"deserved[{r}]={format_quantity(r, d)} exceeds capability[{r}]={format_quantity(r, q.capability[r])}",
                )
        if q.state not in ("Open", "Closed"):
            v.fail("status.state", f"state {q.state!r} is not Open or Closed")
        parsed = parse_limits(q.annotations.get(LIMITS_ANNOTATION))
        if parsed.error:
            v.warnings.append(
                f"annotation {LIMITS_ANNOTATION} is invalid: {parsed.error}; every node fails "
                "for the queue's pods"
            )
        if q.parent == name:
            v.fail("spec.parent", "a queue cannot be its own parent")
            continue
        ancestors, broken = _chain(queues, name)
        if broken:
            v.fail("spec.parent", broken)
            continue
        if len(ancestors) > max_depth:
            v.fail(
                "spec.parent", f"depth {len(ancestors)} exceeds the maximum queue depth {max_depth}"
            )
        parent = _parent(queues, name)
        if parent is not None and running.get(parent, 0) > 0:
            v.fail(
                "spec.parent",
                f"queue {parent} cannot be the parent queue of queue {name} because it has allocated Pods: {running[parent]}",
            )
        if name == ROOT:
            continue
        # 7. against ancestors (children of root are exempt from the sum checks)
        for r, cap in sorted(q.capability.items()):
            if r == PODS:
                continue
            for a in ancestors:
                if a == ROOT:
                    break
                limit = queues[a].capability.get(r, 0)
                if limit > 0:
                    if cap > limit:
                        v.fail(
                            f"spec.capability.{r}",
                            f"capability[{r}]={format_quantity(r, cap)} exceeds its ancestor's capability={format_quantity(r, limit)}",
                        )
                    break
        if parent is not None and parent != ROOT:
            parent_spec = queues[parent]
            siblings = [queues[s] for s in children.get(parent, [])]
            for attr in ("guarantee", "deserved"):
                total = sum_resources([getattr(s, attr) for s in siblings])
                own: dict[str, int] = getattr(parent_spec, attr)
                over = {r: t for r, t in total.items() if r != PODS and t > own.get(r, 0)}
                if over:
                    v.fail(
                        f"spec.{_path(attr)}",
                        f"sum of children's {attr} {_fmt(total)} exceeds parent's {attr} limit {_fmt(own)}",
                    )
        # 8. against its own subtree
        if children.get(name):
            for r, cap in sorted(q.capability.items()):
                biggest = _subtree_max(queues, children, name, r)
                if biggest is not None and cap < biggest:
                    v.fail(
                        f"spec.capability.{r}",
                        f"capability[{r}]={format_quantity(r, cap)} is smaller than its descendants' max capability={format_quantity(r, biggest)}",
                    )
            for attr in ("guarantee", "deserved"):
                total = sum_resources([getattr(queues[c], attr) for c in children[name]])
                own = getattr(q, attr)
                if any(r != PODS and t > own.get(r, 0) for r, t in total.items()):
                    v.fail(
                        f"spec.{_path(attr)}",
                        f"sum of children's {attr} {_fmt(total)} exceeds its {attr} {_fmt(own)}",
                    )
        _nodegroup_risk(snapshot, name, v)

    if delete is not None:
        v = verdicts.setdefault(delete, QueueVerdict())
        if delete in (ROOT, "default"):
            v.fail("metadata.name", f"queue {delete} cannot be deleted")
        elif delete not in queues:
            v.fail("metadata.name", f"queue {delete} does not exist")
        elif children.get(delete):
            v.fail(
                "metadata.name",
                f"queue {delete} cannot be deleted: it has child queues {', '.join(sorted(children[delete]))}",
            )
    return verdicts


def _subtree_max(
    queues: dict[str, Queue], children: dict[str, list[str]], name: str, r: str
) -> int | None:
    """Largest capability[r] over the nearest queue defining r on each path down from `name`."""
    best: int | None = None
    for c in children.get(name, []):
        value = queues[c].capability.get(r, 0)
        found = value if value > 0 else _subtree_max(queues, children, c, r)
        if found is not None:
            best = found if best is None else max(best, found)
    return best


def _nodegroup_risk(snapshot: Snapshot, name: str, verdict: QueueVerdict) -> None:
    aff = queue_affinity(snapshot.queues, name, hierarchy=True)
    if aff.unset:
        return
    groups = set(aff.required) | set(aff.preferred)
    offered: dict[str, int] = {}
    for node in snapshot.nodes.nodes:
        if node.labels.get(NODEGROUP_LABEL) in groups:
            for r, v in node.allocatable.items():
                offered[r] = offered.get(r, 0) + v
    for r, cap in sorted(snapshot.queues[name].capability.items()):
        if r != PODS and cap > offered.get(r, 0):
            verdict.warnings.append(
                f"capability[{r}]={format_quantity(r, cap)} exceeds what its node groups "
                f"({', '.join(sorted(groups))}) can offer: {format_quantity(r, offered.get(r, 0))}"
            )


def _kai_verdicts(queues: dict[str, Queue]) -> dict[str, QueueVerdict]:
    """KAI-Scheduler Queues: KAI's admission checks only that `spec.resources` is set (the
    reader notes what is unset). Checked here: the parent exists and is not the queue
    itself; warned: a resource whose limit is 0 (no job asking for it runs) and a quota
    above its finite limit (the queue can never hold its whole quota)."""
    verdicts = {name: QueueVerdict() for name in sorted(queues)}
    for name, q in sorted(queues.items()):
        v = verdicts[name]
        if q.parent is not None and (q.parent == name or q.parent not in queues):
            v.fail("spec.parentQueue", f"parent queue {q.parent} does not exist")
        kai = q.kai
        if kai is None:
            continue
        for r in sorted(set(kai.limit) | set(kai.quota)):
            limit, quota = kai.limit.get(r, 0.0), kai.quota.get(r, 0.0)
            if limit == 0:
                v.warnings.append(f"{r} limit is 0: no job of the queue asking for {r} runs")
            elif limit > 0 and quota > limit:
                v.warnings.append(
                    f"{r} quota {quota:g} exceeds its limit {limit:g}: the queue never holds "
                    "its whole quota"
                )
    return verdicts


def _kueue_verdicts(queues: dict[str, Queue]) -> dict[str, QueueVerdict]:
    """Kueue's ClusterQueues, Cohorts and LocalQueues: the reader already applies Kueue's
    CRD and webhook rules. Checked here: the parent exists (a LocalQueue's ClusterQueue, a
    ClusterQueue's cohort, a Cohort's parent), no cycle, and at most `MAX_COHORT_DEPTH`
    levels of cohorts above a queue (gangplan's bound: deeper trees are not acted on)."""
    verdicts = {name: QueueVerdict() for name in sorted(queues)}
    for name, q in sorted(queues.items()):
        kind = q.kueue.kind if q.kueue is not None else "Queue"
        field = {"LocalQueue": "spec.clusterQueue", "ClusterQueue": "spec.cohortName"}.get(
            kind, "spec.parentName"
        )
        if q.parent is not None and q.parent not in queues:
            verdicts[name].fail(field, f"{q.parent} does not exist")
            continue
        seen, at, depth = {name}, q.parent, 0
        while at is not None and at in queues:
            if at in seen:
                verdicts[name].fail(field, f"cycle through {at}")
                break
            seen.add(at)
            parent = queues[at]
            depth += parent.kueue is not None and parent.kueue.kind == "Cohort"
            if depth > MAX_COHORT_DEPTH:
                verdicts[name].fail(
                    field,
                    f"more than {MAX_COHORT_DEPTH} levels of cohorts above it (gangplan's bound)",
                )
                break
            at = parent.parent
    return verdicts
