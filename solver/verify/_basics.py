"""Rules that hold for every Decision: placements, PodGroup outcomes, victims, capacity."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from solver.model import Pod
from solver.verify._context import VerifyContext

__all__ = ["admitted", "capacity", "outcomes", "victims"]

PROTECTING = (
    ("scheduling.koordinator.sh/disable-preemptible", "true"),
    ("quota.scheduling.koordinator.sh/preemptible", "false"),
    ("volcano.sh/preemptable", "false"),
)


def outcomes(ctx: VerifyContext) -> list[str]:
    """`podgroups[..].placed` agrees with the placements."""
    problems = []
    for gid, outcome in ctx.decision.podgroups.items():
        gang = ctx.workload.gangs.get(gid)
        if gang is None:
            problems.append(f"podgroup {gid}: not in the input")
        elif ctx.placed[gid] > 0 and not outcome.placed:
            problems.append(f"podgroup {gid}: pods placed but reported as not placed")
        elif outcome.placed and ctx.placed[gid] == 0 and ctx.members(gid):
            problems.append(f"podgroup {gid}: reported placed but no pending member was placed")
    return problems


def admitted(ctx: VerifyContext) -> list[str]:
    """No placed (or nominated) pod belongs to a job reported as not enqueued: whichever
    rule kept it out (a queue's quota, the cluster's overcommit), it places nothing."""
    problems = []
    for pods in ctx.new_on.values():
        for pod in pods:
            outcome = ctx.decision.podgroups.get(pod.gang)
            if outcome is not None and not outcome.enqueued:
                problems.append(f"{pod.key}: placed although its job {pod.gang} was not enqueued")
    return problems


def victims(ctx: VerifyContext) -> list[str]:
    """Victims are running pods on their node, not protected, with the DisruptionTarget
    message; a preemption's victims have lower priority than the pods placed or nominated;
    with `conformance`, no victim has a system priority (≥ 2,000,000,000: the two system
    PriorityClasses) or runs in `kube-system`."""
    problems = []
    conformance = ctx.conf.enabled("conformance")
    running = ctx.snapshot.running
    top = max((p.priority for pods in ctx.new_on.values() for p in pods), default=None)
    for victim in ctx.decision.victims:
        row = running.find(victim.pod)
        if row < 0 or running.node_name(row) != victim.node:
            problems.append(f"victim {victim.pod}: not a pod running on {victim.node}")
            continue
        labels, annotations = running.labels(row), running.annotations(row)
        if any(labels.get(k) == v or annotations.get(k) == v for k, v in PROTECTING):
            problems.append(f"victim {victim.pod}: labelled as not preemptible")
        priority = int(running.priority[row])
        if conformance and (priority >= 2_000_000_000 or victim.pod.startswith("kube-system/")):
            problems.append(f"victim {victim.pod}: a system pod (conformance protects it)")
        if victim.cause == "preemption" and (top is None or priority >= top):
            problems.append(
                f"victim {victim.pod}: priority {priority} is not below the preemptor's"
            )
        expected = (
            "preempting to accommodate higher priority pods"
            if victim.cause == "preemption"
            else f"reclaiming for queue {victim.queue}"
        )
        if expected not in victim.message:
            problems.append(f"victim {victim.pod}: no DisruptionTarget message")
    return problems


def capacity(ctx: VerifyContext) -> list[str]:
    """On every node receiving pods: running pods (less the evicted) + new pods + the room
    held for pods nominated there (priority >= the lowest new pod's) fit `allocatable` in
    every resource a new pod requests (the pod count included)."""
    snapshot = ctx.snapshot
    running = snapshot.running
    names = running.resources
    column = {r: i for i, r in enumerate(names)}
    width = snapshot.usage.used.shape[1]
    evicted_on: dict[str, list[int]] = defaultdict(list)
    for key in ctx.evicted:
        row = running.find(key)
        if row >= 0:
            evicted_on[running.node_name(row)].append(row)
    nominated = _nominated_elsewhere(ctx)
    problems = []
    for node_name, pods in ctx.new_on.items():
        node = ctx.node(node_name)
        n = snapshot.nodes.index[node_name]
        checked = sorted({r for pod in pods for r in pod.requests})
        lowest = min(pod.priority for pod in pods)
        held = [p for p in nominated.get(node_name, ()) if p.priority >= lowest]
        for r in checked:
            i = column.get(r)
            total = int(snapshot.usage.used[n, i]) if i is not None and i < width else 0
            if i is not None and evicted_on[node_name]:
                rows = np.array(evicted_on[node_name], dtype=np.int64)
                total -= int(running.requests()[rows, i].sum())
            total += sum(pod.requests.get(r, 0) for pod in pods)
            total += sum(pod.requests.get(r, 0) for pod in held)
            if total > node.allocatable.get(r, 0):
                problems.append(
                    f"{node_name}: {r} requested {total} > allocatable {node.allocatable.get(r, 0)}"
                    + (f" (room held for {len(held)} nominated pod(s) included)" if held else "")
                )
    return problems


def _nominated_elsewhere(ctx: VerifyContext) -> dict[str, list[Pod]]:
    """Pending pods this Decision does not place, by the node receiving pods they are
    nominated to (grouped once per snapshot generation): each
    holds its room against pods of lower or equal priority (kube-scheduler's
    `RunFilterPluginsWithNominatedPods`)."""

    def by_node() -> dict[str, tuple[Pod, ...]]:
        grouped: dict[str, list[Pod]] = defaultdict(list)
        for pod in ctx.snapshot.pending.values():
            if pod.nominated_node:
                grouped[pod.nominated_node].append(pod)
        return {node: tuple(pods) for node, pods in grouped.items()}

    nominated = ctx.snapshot.memo(("verify", "nominated by node"), by_node)
    return {
        node: [p for p in nominated.get(node, ()) if p.key not in ctx.pods] for node in ctx.new_on
    }
