"""What every rule reads: the question (snapshot, workload, conf) and the Decision, indexed.

The verifier checks a Decision against the *inputs* — nodes, running pods (the snapshot's
columns and derived usage), pending pods, gangs, queues — and re-derives everything else
itself. It imports nothing from `solver.features` or `solver.engines`: a bug in a policy
or an engine cannot hide from it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from solver.config import SchedulerConf
from solver.decision import Decision
from solver.model import Gang, Node, Pod
from solver.snapshot import Snapshot, Workload

__all__ = ["VerifyContext"]


@dataclass
class VerifyContext:
    snapshot: Snapshot
    workload: Workload
    conf: SchedulerConf
    decision: Decision
    pods: dict[str, Pod] = field(default_factory=dict)  # the workload's pending pods
    new_on: dict[str, list[Pod]] = field(default_factory=lambda: defaultdict(list))  # node ->
    #   pods placed or nominated there this cycle
    target: dict[str, str] = field(default_factory=dict)  # pod -> its node (placed or nominated)
    placed: dict[str, int] = field(default_factory=lambda: defaultdict(int))  # gang -> pods
    #   placed this cycle (bound, not nominated)
    taken: dict[str, int] = field(default_factory=lambda: defaultdict(int))  # gang -> pods
    #   placed or nominated
    evicted: set[str] = field(default_factory=set)  # victims' pod keys
    by_gang: dict[str, list[Pod]] = field(default_factory=dict)  # gang -> its pending pods
    job_queue: dict[str, str | None] = field(default_factory=dict)  # gang -> queue, as read
    problems: list[str] = field(default_factory=list)

    @classmethod
    def of(
        cls, snapshot: Snapshot, workload: Workload, conf: SchedulerConf, decision: Decision
    ) -> VerifyContext:
        ctx = cls(snapshot, workload, conf, decision)
        ctx.pods = {p.key: p for p in workload.pods}
        for pod in workload.pods:
            ctx.by_gang.setdefault(pod.gang, []).append(pod)
        nodes = snapshot.nodes.by_name
        for key, placement in decision.placements.items():
            placed = ctx.pods.get(key)
            if placed is None:
                ctx.problems.append(f"{key}: not a pending pod of the input")
                continue
            where = placement.node or placement.nominated
            if where is None:
                continue
            if placement.node and placement.nominated:
                ctx.problems.append(f"{key}: both placed and nominated")
            if where not in nodes:
                ctx.problems.append(f"{key}: placed on unknown node {where}")
                continue
            ctx.new_on[where].append(placed)
            ctx.target[key] = where
            ctx.taken[placed.gang] += 1
            if placement.node:
                ctx.placed[placed.gang] += 1
        ctx.evicted = {v.pod for v in decision.victims}
        return ctx

    @property
    def gangs(self) -> dict[str, Gang]:
        return dict(self.workload.gangs)

    def node(self, name: str) -> Node:
        return self.snapshot.nodes.by_name[name]

    def members(self, gang_id: str) -> list[Pod]:
        """The gang's pending pods (by key)."""
        return self.by_gang.get(gang_id, [])
