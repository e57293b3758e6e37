"""Gangs all or nothing, re-derived from the PodGroups' match policies and running members."""

from __future__ import annotations

from collections import Counter, defaultdict

from solver.config import Plugin, SchedulerConf
from solver.model import Gang, MatchPolicy, task_role
from solver.verify._context import VerifyContext

__all__ = ["gang_groups", "gangs", "refused", "task_minimums"]


def gang_groups(ctx: VerifyContext) -> list[list[str]]:
    """GangGroups: gangs joined by `groups` (either direction; only with `gang`), by id."""
    linked: dict[str, set[str]] = defaultdict(set)
    known = ctx.workload.gangs
    if ctx.conf.enabled(Plugin.GANG):
        for gid, gang in known.items():
            for other in gang.groups:
                if other in known:
                    linked[gid].add(other)
                    linked[other].add(gid)
    seen: set[str] = set()
    out: list[list[str]] = []
    for gid in sorted(known):
        if gid in seen:
            continue
        group, stack = {gid}, [gid]
        while stack:
            for other in linked[stack.pop()]:
                if other not in group:
                    group.add(other)
                    stack.append(other)
        seen |= group
        out.append(sorted(group))
    return out


def _policy(conf: SchedulerConf, gang: Gang) -> MatchPolicy:
    if gang.match_policy is not None:
        return gang.match_policy
    text = conf.arguments(Plugin.GANG).get("defaultMatchPolicy", "once-satisfied")
    known = {p.value for p in MatchPolicy}
    return MatchPolicy(text) if text in known else MatchPolicy.ONCE_SATISFIED


def _required_new(ctx: VerifyContext, gang: Gang, group_running: bool) -> int:
    policy = _policy(ctx.conf, gang)
    if policy is MatchPolicy.WAITING_AND_RUNNING:
        return max(0, gang.min_member - ctx.snapshot.gang_running(gang.id))
    if policy is MatchPolicy.ONCE_SATISFIED and group_running:
        return 0
    return gang.min_member


def gangs(ctx: VerifyContext) -> list[str]:
    """With `gang`: a gang with pods placed reaches its minMember share (running members
    count as its match policy says), and so does every gang in its `groups` list."""
    problems = []
    known = ctx.workload.gangs
    for group in gang_groups(ctx):
        group_running = any(ctx.snapshot.gang_running(g) > 0 for g in group)
        for gid in group:
            if ctx.taken[gid] == 0:
                continue
            for member in known[gid].groups:
                other = known.get(member)
                if other is None:
                    problems.append(
                        f"gang {gid}: placed although group member {member} does not exist"
                    )
                    continue
                need = _required_new(ctx, other, group_running)
                if ctx.taken[member] < need:
                    problems.append(
                        f"gang {gid}: placed while gang {member} has {ctx.taken[member]} of {need} "
                        "required new pods"
                    )
    return problems


def task_minimums(ctx: VerifyContext) -> list[str]:
    """With `gang`: a Volcano gang with pods placed has, per task role of its
    `minTaskMember` (when minMember is at least their sum), at least that many pods of the
    role running or placed (`CheckTaskReady`), counted here from the pods themselves."""
    problems = []
    running = ctx.snapshot.running
    for gid, gang in ctx.workload.gangs.items():
        if ctx.taken[gid] == 0 or not gang.min_task_member:
            continue
        if gang.min_member < sum(gang.min_task_member.values()):
            continue
        count: Counter[str] = Counter()
        for r in ctx.snapshot.rows_of_gang(gid).tolist():
            count[task_role(running.labels(r), running.annotations(r))] += 1
        for pod in ctx.members(gid):
            if pod.key in ctx.target:
                count[task_role(pod.labels, pod.annotations)] += 1
        for role, least in sorted(gang.min_task_member.items()):
            if count[role] < least:
                problems.append(
                    f"gang {gid}: placed with {count[role]} pod(s) of task {role} running or "
                    f"placed, its minTaskMember is {least}"
                )
    return problems


def refused(ctx: VerifyContext) -> list[str]:
    """A PodGroup with a hard constraint gangplan does not enforce places nothing."""
    return [
        f"gang {gang.id}: pods placed although {gang.refused}"
        for gang in ctx.workload.gangs.values()
        if gang.refused and any(p.key in ctx.target for p in ctx.members(gang.id))
    ]
