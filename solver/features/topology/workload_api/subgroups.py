"""KAI-Scheduler sub-groups each in one domain of their own (`Gang.topology_sub_groups`),
inside their PodGroup unit's own domain, and each leaf's minMember.

As KAI's allocate action places a PodGroup (`actions/common/allocate.go`
`allocateSubGroupSet`; `plugins/topology/job_filtering.go` `subSetNodesFn`): the job's
domains are tried in order; inside one, each child sub-group set with a required level
tries the domains of that level inside its parent's, most packed first, and its own
children inside the one it takes; the first domain where everything below fits wins, and
a failure rolls back to the parent's next domain. Leaves without a level then fill what
their parent holds.

A sub-group's domain is named by the values of all its levels, top first (KAI's domain ids
`zone.rack`): nodes lacking one are not eligible for its pods. Its running pods fix its
domain (`getRelevantDomainsWithAllocatedPods`); running pods in several domains, or
outside the levels, keep its pending pods unplaced (KAI would take any domain holding one
of them, and the sub-group would then span domains).

CP-SAT (`build`), for every sub-group s of unit u with types T_s and domain row dom_s:

    # one[s, d] ∈ {0,1},  Σ_d one[s, d] ≤ 1
    # Σ_{c: dom_s(c) = d} Σ_k x[t, c, k] ≤ |t| · one[s, d]   for t ∈ T_s   (dom_s(c) = −1: x = 0)

with node classes split by every dom_s (`rows`), so a class lies in one domain of each;
and for every leaf sub-group m with a minMember (less its running pods: need_m):

    # Σ_{t ∈ T_m} Σ_{c, k} x[t, c, k] ≥ need_m · gang_on[g]
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from solver.model import Gang, Pod, TopologySubGroup
from solver.problem import IntArray, Minimum, Problem
from solver.sat import PlacementVars
from solver.snapshot import NodeTable, Snapshot, Workload

__all__ = [
    "SubDomain",
    "build_sub_domains",
    "build_sub_minimums",
    "compile_sub_domains",
    "domain_sub_group_key",
    "sub_domain_rows",
]


@dataclass(frozen=True, eq=False)
class SubDomain:
    """One sub-group of a unit: its pod types, and the domain its pods share."""

    name: str
    level: str  # its required level (the last of its levels), for reasons
    types: tuple[int, ...]
    domain: IntArray  # [N] domain id of each node; -1: not usable by its pods
    names: tuple[str, ...]  # name of each domain id (`zone1.rack2`)
    parent: int  # index of the innermost sub-group holding it; -1: the unit's own domain
    blocked: str | None = None  # why no node may take its pending pods (a node reason)
    required: bool = True  # False: no required level (`domain` is one domain of all nodes)
    preferred: tuple[tuple[IntArray, tuple[str, ...]], ...] = ()  # its preferred levels'
    #   domain rows and names, finest first, down to (not including) its required level

    def __post_init__(self) -> None:
        self.domain.flags.writeable = False


def domain_sub_group_key(snapshot: Snapshot, workload: Workload) -> Callable[[Pod], Hashable]:
    """Pods of different sub-groups are of different types."""
    gangs = workload.gangs

    def key(pod: Pod) -> Hashable:
        gang = gangs.get(pod.gang)
        if gang is None or not gang.topology_sub_groups:
            return None
        return tuple(s.holds(pod.labels) for s in gang.topology_sub_groups)

    return key


def level_domains(nodes: NodeTable, levels: tuple[str, ...]) -> tuple[IntArray, tuple[str, ...]]:
    """[N] the id of each node's domain named by its values of `levels` (-1: a label
    missing), and the names `v1.v2`; once per node generation."""

    def compute() -> tuple[IntArray, tuple[str, ...]]:
        paths = [
            tuple(n.labels[k] for k in levels) if all(k in n.labels for k in levels) else None
            for n in nodes.nodes
        ]
        known = sorted({p for p in paths if p is not None})  # by values, not joined names
        index = {p: i for i, p in enumerate(known)}
        row = np.array([index[p] if p is not None else -1 for p in paths], dtype=np.int64)
        row.flags.writeable = False
        return row, tuple(".".join(p) for p in known)

    return nodes.memo(("kai sub-group levels", levels), compute)


def compile_sub_domains(
    snapshot: Snapshot, gang: Gang, type_labels: Sequence[tuple[int, dict[str, str]]]
) -> tuple[tuple[SubDomain, ...], tuple[Minimum, ...]]:
    """The sub-groups of `gang` over its types (`(type, its pods' labels)`): those with
    levels, outer first, and those with a minimum."""
    ordered = sorted(
        (s for s in gang.topology_sub_groups if s.levels or s.preferred),
        key=lambda s: -len(s.values),
    )
    running = snapshot.running
    rows = [r for r in snapshot.rows_of_gang(gang.id).tolist() if running.node[r] >= 0]
    out: list[SubDomain] = []
    for sub in ordered:
        types = tuple(t for t, labels in type_labels if sub.holds(labels))
        row, names = level_domains(snapshot.nodes, sub.levels)
        held = [int(running.node[r]) for r in rows if sub.holds(running.labels(r))]
        blocked = None
        if held and sub.levels:
            values = set(row[held].tolist())
            if len(values) == 1 and (only := values.pop()) >= 0:
                row = np.where(row == only, row, -1)
            else:
                row = np.full_like(row, -1)
                blocked = (
                    f"node(s) cannot take sub-group {sub.name}: its running pods are in no "
                    f"one {sub.levels[-1]} domain"
                )
        out.append(
            SubDomain(
                name=sub.name,
                level=(sub.levels or sub.preferred)[-1],
                types=types,
                domain=np.array(row, dtype=np.int64),
                names=names,
                parent=_parent(sub, ordered[: len(out)]),
                blocked=blocked,
                required=bool(sub.levels),
                preferred=tuple(
                    level_domains(snapshot.nodes, sub.preferred[:depth])
                    for depth in range(len(sub.preferred), len(sub.levels), -1)
                ),
            )
        )
    minimums = tuple(
        Minimum(
            what=f"sub-group {sub.name}",
            types=tuple(t for t, labels in type_labels if sub.holds(labels)),
            need=sub.min_member - sum(1 for r in rows if sub.holds(running.labels(r))),
        )
        for sub in gang.topology_sub_groups
        if sub.min_member
    )
    return tuple(out), tuple(m for m in minimums if m.need > 0)


def _parent(sub: TopologySubGroup, outer: list[TopologySubGroup]) -> int:
    """The innermost of the `outer` sub-groups whose pods hold all of `sub`'s (-1: none)."""
    best, size = -1, 0
    for i, other in enumerate(outer):
        holds = other.label == sub.label and set(sub.values) <= set(other.values)
        if holds and (best < 0 or len(other.values) < size):
            best, size = i, len(other.values)
    return best


def sub_domain_rows(plans: Sequence[Sequence[SubDomain]]) -> list[IntArray]:
    """Rows node classes must not mix: every sub-group's domains, required and preferred."""
    return [row for subs in plans for s in subs for row in (s.domain, *(r for r, _ in s.preferred))]


def build_sub_domains(
    problem: Problem, model: cp_model.CpModel, v: PlacementVars, u: int, subs: Sequence[SubDomain]
) -> None:
    """The module docstring's constraints for unit u."""
    counts = [len(p) for p in problem.type_pods]
    keys_of: dict[int, list[tuple[int, int, int]]] = {}
    for key in v.x:
        keys_of.setdefault(key[0], []).append(key)
    for s, sub in enumerate(subs):
        if not sub.required:
            continue
        by_domain: dict[tuple[int, int], list[cp_model.IntVar]] = {}
        for t in sub.types:
            for key in keys_of.get(t, []):
                d = int(sub.domain[v.classes[key[1]].nodes[0]])
                if d < 0:
                    model.add(v.x[key] == 0)
                else:
                    by_domain.setdefault((t, d), []).append(v.x[key])
        one = {d: model.new_bool_var(f"sub_domain[{u},{s},{d}]") for _, d in by_domain}
        for (t, d), xs in by_domain.items():
            model.add(cp_model.LinearExpr.sum(xs) <= counts[t] * one[d])
        if len(one) > 1:
            model.add(cp_model.LinearExpr.sum(list(one.values())) <= 1)


def build_sub_minimums(
    problem: Problem, model: cp_model.CpModel, v: PlacementVars, g: int, mins: Sequence[Minimum]
) -> None:
    """Σ_{t ∈ T_m} Σ_{c, k} x[t, c, k] ≥ need_m · gang_on[g]  for every minimum m of gang g."""
    by_type: dict[int, list[cp_model.IntVar]] = {}
    for key, var in v.x.items():
        by_type.setdefault(key[0], []).append(var)
    for m in mins:
        placed = [x for t in m.types for x in by_type.get(t, [])]
        model.add(cp_model.LinearExpr.sum(placed) >= m.need * v.gang_on[g])
