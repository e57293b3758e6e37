"""Gangs and GangGroups (Koordinator semantics, reference/koordinator.md §2).

For every gang the policy works out `need`: how many of its pending pods must be placed
in this cycle for the gang to count as satisfied (0: it places pod by pod), from its
match policy (the PodGroup's annotation, else the gang plugin's `defaultMatchPolicy`):

* `once-satisfied` (default): `minMember`, or 0 once any member of the GangGroup is bound;
* `waiting-and-running`: `max(0, minMember - bound members)` (Volcano's rule too);
* `only-waiting`: `minMember`; bound members do not count.

A gang listing others in `gang.scheduling.koordinator.sh/groups` may be placed only if
every listed gang is satisfied too ("requires" edges); gangs joined by such edges form one
unit, placed together or not at all. Without the gang plugin every pod stands alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from solver.config import SchedulerConf
from solver.model import ClusterModel, MatchPolicy

__all__ = ["GangPlan", "plan_gangs"]


@dataclass(frozen=True)
class GangPlan:
    """Per gang (sorted by id): what must be placed, and what blocks it before any node is tried."""

    gang_ids: tuple[str, ...]
    need: tuple[int, ...]  # new placements required this cycle; 0 = no all-or-nothing
    pending: tuple[int, ...]  # pending member pods
    bound: tuple[int, ...]  # bound member pods
    requires: tuple[tuple[int, int], ...]  # (g, h): g may be placed only if h is satisfied
    unit: tuple[int, ...]  # index of the gang's unit (connected component of `requires`)
    unit_ids: tuple[str, ...]  # GangGroup id: the member gang ids joined by ","
    blocked: tuple[str | None, ...]  # why the gang can never be satisfied this cycle


def _default_policy(conf: SchedulerConf) -> MatchPolicy:
    text = str(conf.arguments("gang").get("defaultMatchPolicy", MatchPolicy.ONCE_SATISFIED))
    return (
        MatchPolicy(text) if text in {p.value for p in MatchPolicy} else MatchPolicy.ONCE_SATISFIED
    )


def plan_gangs(model: ClusterModel, conf: SchedulerConf) -> GangPlan:
    gang_ids = tuple(sorted(model.gangs))
    index = {gid: i for i, gid in enumerate(gang_ids)}
    pending = [0] * len(gang_ids)
    bound = [0] * len(gang_ids)
    for pod in model.pods:
        if pod.pending:
            pending[index[pod.gang]] += 1
        elif pod.bound:
            bound[index[pod.gang]] += 1

    gang_on = conf.enabled("gang")
    requires: list[tuple[int, int]] = []
    missing: dict[int, list[str]] = {}
    if gang_on:
        for g, gid in enumerate(gang_ids):
            for other in model.gangs[gid].groups:
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
    unit_bound = [0] * len(unit_ids)
    for g, u in enumerate(unit):
        unit_bound[u] += bound[g]

    need: list[int] = []
    blocked: list[str | None] = []
    default_policy = _default_policy(conf) if gang_on else MatchPolicy.ONCE_SATISFIED
    for g, gid in enumerate(gang_ids):
        gang = model.gangs[gid]
        if not gang_on:
            need.append(0)
            blocked.append(None)
            continue
        policy = default_policy if gang.match_policy is None else gang.match_policy
        if policy is MatchPolicy.ONCE_SATISFIED:
            n = 0 if unit_bound[unit[g]] > 0 else gang.min_member
        elif policy is MatchPolicy.WAITING_AND_RUNNING:
            n = max(0, gang.min_member - bound[g])
        else:
            n = gang.min_member
        need.append(n)
        reason = None
        if g in missing:
            reason = f"gang group member(s) {', '.join(sorted(missing[g]))} do not exist"
        elif pending[g] + bound[g] < gang.min_member:
            reason = (
                f"gang {gid}: only {pending[g] + bound[g]} member pod(s) exist, "
                f"minMember is {gang.min_member}"
            )
        elif n > pending[g]:
            reason = f"gang {gid}: needs {n} pending pod(s) placed, only {pending[g]} are pending"
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
        bound=tuple(bound),
        requires=tuple(requires),
        unit=tuple(unit),
        unit_ids=unit_ids,
        blocked=tuple(blocked),
    )


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
