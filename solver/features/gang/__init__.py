"""Gangs and GangGroups (Koordinator semantics, reference/koordinator.md §2).

For every gang the policy works out `need`: how many of its pending pods must be placed
in this cycle for the gang to count as satisfied (0: it places pod by pod), from its
match policy (the PodGroup's annotation, else the gang plugin's `defaultMatchPolicy`):

* `once-satisfied` (default): `minMember`, or 0 once any member of the GangGroup runs;
* `waiting-and-running`: `max(0, minMember - running members)` (Volcano's rule too);
* `only-waiting`: `minMember`; running members do not count.

A Volcano PodGroup's `minTaskMember` (`Gang.role_minimums`: acted on when minMember is at
least their sum) adds per task role (`task_role`: a pod's `volcano.sh/task-spec`): the gang
is placed only with `max(0, min_r - running_r)` more pods of role r (`CheckTaskReady`), and
`need` is at least their sum; a role with fewer pending and running pods than its minimum
blocks the gang (`CheckTaskValid`). Pods of different roles are of different types, so the
engines count each role's pods (`Problem.gang_minimums`, built by `compile`).

A gang listing others in `gang.scheduling.koordinator.sh/groups` may be placed only if
every listed gang is satisfied too ("requires" edges); gangs joined by such edges form one
unit, placed together or not at all. Without the gang plugin every pod stands alone.

Only the gangs of the call's workload are planned (their running members counted from the
snapshot), so a call costs its own gangs, not every running pod's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable

from solver.config import Plugin, SchedulerConf
from solver.features._base import CompileContext, Feature, GangPlan
from solver.features._steps import CpsatSteps
from solver.features.gang import cpsat
from solver.model import Gang, MatchPolicy, Pod, task_role
from solver.snapshot import Snapshot, Workload

__all__ = ["FEATURE", "GangPlan", "default_match_policy", "plan_gangs"]


def default_match_policy(conf: SchedulerConf) -> MatchPolicy:
    text = str(conf.arguments(Plugin.GANG).get("defaultMatchPolicy", MatchPolicy.ONCE_SATISFIED))
    known = {p.value for p in MatchPolicy}
    return MatchPolicy(text) if text in known else MatchPolicy.ONCE_SATISFIED


def plan_gangs(snapshot: Snapshot, workload: Workload, conf: SchedulerConf) -> GangPlan:
    gang_ids = tuple(workload.gangs)  # sorted by id
    index = {gid: i for i, gid in enumerate(gang_ids)}
    pending = [len(workload.gangs[gid].members) for gid in gang_ids]
    running = [snapshot.gang_running(gid) for gid in gang_ids]

    gang_on = conf.enabled(Plugin.GANG)
    requires: list[tuple[int, int]] = []
    missing: dict[int, list[str]] = {}
    if gang_on:
        for g, gid in enumerate(gang_ids):
            for other in workload.gangs[gid].groups:
                if other == gid:
                    continue
                if other in index:
                    requires.append((g, index[other]))
                else:
                    missing.setdefault(g, []).append(other)

    unit = _components(len(gang_ids), requires)
    members: dict[int, list[str]] = {}
    for g, u in enumerate(unit):
        members.setdefault(u, []).append(gang_ids[g])
    unit_ids = tuple(",".join(sorted(members[u])) for u in range(len(members)))
    unit_running = [0] * len(unit_ids)
    for g, u in enumerate(unit):
        unit_running[u] += running[g]

    need: list[int] = []
    blocked: list[str | None] = []
    roles: list[tuple[tuple[str, int], ...]] = []
    default_policy = default_match_policy(conf) if gang_on else MatchPolicy.ONCE_SATISFIED
    for g, gid in enumerate(gang_ids):
        gang = workload.gangs[gid]
        if not gang_on:
            need.append(0)
            roles.append(())
            blocked.append(f"gang {gid}: {gang.refused}" if gang.refused else None)
            continue
        policy = default_policy if gang.match_policy is None else gang.match_policy
        if policy is MatchPolicy.ONCE_SATISFIED:
            n = 0 if unit_running[unit[g]] > 0 else gang.min_member
        elif policy is MatchPolicy.WAITING_AND_RUNNING:
            n = max(0, gang.min_member - running[g])
        else:
            n = gang.min_member
        minimums = gang.role_minimums()
        role_needs, invalid = _role_needs(snapshot, workload, gang, minimums, running[g] > 0)
        roles.append(role_needs)
        need.append(max(n, sum(k for _, k in role_needs)))
        reason = None
        if gang.refused:
            reason = f"gang {gid}: {gang.refused}"
        elif invalid:
            reason = f"gang {gid}: {invalid}"
        elif g in missing:
            reason = f"gang group member(s) {', '.join(sorted(missing[g]))} do not exist"
        elif pending[g] + running[g] < gang.min_member:
            reason = (
                f"gang {gid}: only {pending[g] + running[g]} member pod(s) exist, "
                f"minMember is {gang.min_member}"
            )
        elif need[g] > pending[g]:
            reason = (
                f"gang {gid}: needs {need[g]} pending pod(s) placed, only {pending[g]} are pending"
            )
        blocked.append(reason)

    # A gang requiring a blocked gang is blocked too (to a fixed point).
    changed = True
    while changed:
        changed = False
        for g, h in requires:
            if blocked[g] is None and blocked[h] is not None:
                blocked[g] = f"gang group member {gang_ids[h]} cannot be placed: {blocked[h]}"
                changed = True

    return GangPlan(
        gang_ids=gang_ids,
        need=tuple(need),
        pending=tuple(pending),
        running=tuple(running),
        requires=tuple(requires),
        unit=tuple(unit),
        unit_ids=unit_ids,
        blocked=tuple(blocked),
        roles=tuple(roles) if any(roles) else (),
    )


def _role_counts(snapshot: Snapshot, gang_id: str) -> Counter[str]:
    """The gang's running pods per task role (`task_role`)."""
    running = snapshot.running
    rows = snapshot.rows_of_gang(gang_id).tolist()
    return Counter(task_role(running.labels(r), running.annotations(r)) for r in rows)


def _role_needs(
    snapshot: Snapshot,
    workload: Workload,
    gang: Gang,
    minimums: dict[str, int],
    has_running: bool,
) -> tuple[tuple[tuple[str, int], ...], str]:
    """(role, more pods it needs) for each role short of its minimum, and why the gang is not
    valid (a role with fewer pending and running pods than its minimum; "" when it is)."""
    if not minimums:
        return (), ""
    running = _role_counts(snapshot, gang.id) if has_running else Counter[str]()
    pending = Counter(task_role(p.labels, p.annotations) for p in workload.members(gang.id))
    for role, least in minimums.items():
        if pending[role] + running[role] < least:
            return (), (
                f"task {role} has {pending[role] + running[role]} pod(s), its minTaskMember "
                f"is {least} (not enough valid pods of each task for gang-scheduling)"
            )
    needs = ((role, least - running[role]) for role, least in minimums.items())
    return tuple((role, k) for role, k in needs if k > 0), ""


def role_type_key(snapshot: Snapshot, workload: Workload) -> Callable[[Pod], Hashable]:
    """Pods of a gang with task-role minimums are of one type per role."""
    gangs = workload.gangs

    def key(pod: Pod) -> Hashable:
        gang = gangs.get(pod.gang)
        if gang is None or not gang.min_task_member:
            return None
        return task_role(pod.labels, pod.annotations)

    return key


def _components(n: int, edges: list[tuple[int, int]]) -> list[int]:
    """Connected components numbered in order of their smallest member."""
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    labels: dict[int, int] = {}
    return [labels.setdefault(find(i), len(labels)) for i in range(n)]


def _compile(ctx: CompileContext) -> None:
    """Nothing per type: the plan (`plan_gangs`) is the core of every Problem, made before
    any feature compiles."""


FEATURE = Feature(
    name="gang",
    plugins=(Plugin.GANG,),
    compile=_compile,
    call_type_key=role_type_key,
    cpsat=CpsatSteps(modules=(cpsat.build,)),
)
