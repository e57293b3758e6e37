"""Volcano `subGroupPolicy`: sub-groups of a HyperNode job, each with its own gang and tier.

As upstream HEAD `ed72c7c8` builds them (`job_info.go` `getOrCreateSubJob`,
`sub_job_info.go` `getSubJobMatchValues`, `session.go` `adjustNetworkTopologySpec`):

* **membership** — a pod joins the first policy whose `labelSelector` (if any) matches and
  whose `matchLabelKeys` it all carries non-empty (a policy without `matchLabelKeys` takes
  no pod); one sub-group per distinct value tuple. Other pods form the job's default
  sub-group (only the job-level rule).
* **size** — a sub-group is placed only with at least `subGroupSize` (default 1) of its
  pods (`SubJobReady`); **minSubGroups** — the job is placed only with at least that many
  placed sub-groups of each policy (`MinSubJobs`), besides its `minMember`.
* **tier** — a sub-group's `networkTopology` hard with `highestTierAllowed` (or a
  `highestTierName` some HyperNode carries) puts all its pods inside ONE HyperNode of tier
  <= that limit; with running members, the one that holds them (`recoverAllocatedHyperNode`
  per sub-job: its new pods join them there, or are not placed). `soft` becomes hard at
  the job's limit (`convertSoftToHardTopology`): no rule beyond the job's, as a sub-group
  without `networkTopology`.

Pods of different sub-groups never share a pod type (`subgroup_type_key`), so a sub-group
is a set of types. CP-SAT (`build`):

    # one[s, h] ∈ {0,1}, Σ_h one[s, h] ≤ 1, x[t, c] ≤ n_t · one[s, dom_s(c)]  (t ∈ s; dom -1: x = 0)
    # size_s · ready[s] ≤ Σ_{t∈s} x[t, ·] ≤ n_s · ready[s]
    # Σ_{s ∈ policy p} ready[s] ≥ minSubGroups_p · gang_on[g]
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from solver.features._base import CompileContext
from solver.features.topology.hypernode.tree import HyperNodeTree
from solver.model import Gang, Pod
from solver.problem import IntArray, Problem
from solver.sat import PlacementVars
from solver.snapshot import Snapshot, Workload

__all__ = ["SubGroupPlan", "compile_subgroups", "subgroup_constraints", "subgroup_of"]

SubGroupKey = tuple[int, tuple[str, ...]]  # (policy index, matchLabelKeys values)


@dataclass(frozen=True)
class SubGroupPlan:
    """One sub-group of a job: its pod types, its gang size and its own tier domain."""

    name: str  # `<policy>-<values joined by ->` (upstream's subJob id without the job)
    policy: int  # index in the gang's subGroupPolicy; -1: the default sub-group
    types: tuple[int, ...]
    size: int  # pods placed together (subGroupSize), or none of them
    limit: int | None  # own hard tier limit below the job's; None: the job's rule only
    domain: IntArray | None  # [N] node -> its HyperNode of tier <= limit (-1: none)


def subgroup_of(gang: Gang, labels: Mapping[str, str]) -> SubGroupKey | None:
    """The sub-group of a pod with these labels (None: the default sub-group)."""
    for i, policy in enumerate(gang.sub_group_policy):
        if policy.label_selector is not None and not policy.label_selector.matches(labels):
            continue
        values = tuple(labels.get(k, "") for k in policy.match_label_keys)
        if values and all(values):
            return i, values
    return None


def subgroup_type_key(snapshot: Snapshot, workload: Workload) -> Callable[[Pod], Hashable]:
    """Pods of different sub-groups are of different types."""
    gangs = workload.gangs

    def key(pod: Pod) -> Hashable:
        gang = gangs.get(pod.gang)
        if gang is None or not gang.sub_group_policy:
            return None
        return subgroup_of(gang, pod.labels)

    return key


def _own_limit(
    gang: Gang, policy: int, tree: HyperNodeTree, job_limit: int, notes: list[str]
) -> int | None:
    if policy < 0:
        return None
    spec = gang.sub_group_policy[policy].network_topology
    if spec is None or spec.mode == "soft":
        return None  # soft is made hard at the job's limit: nothing beyond the job's rule
    limit = spec.highest_tier_allowed
    if limit is None and spec.highest_tier_name:
        limit = tree.tier_of_name(spec.highest_tier_name)
        if limit is None:
            notes.append(
                f"PodGroup {gang.id}: subGroupPolicy {gang.sub_group_policy[policy].name} "
                f"highestTierName {spec.highest_tier_name!r} is the tierName of no HyperNode; "
                "the sub-group has only the job's rule, as in Volcano"
            )
    if limit is None or limit >= job_limit:
        return None
    return limit


def compile_subgroups(
    ctx: CompileContext, tree: HyperNodeTree, gang: Gang, types: list[int], job_limit: int
) -> tuple[SubGroupPlan, ...]:
    """The sub-groups of a job with `subGroupPolicy` (() without one)."""
    if not gang.sub_group_policy:
        return ()
    by_key: dict[SubGroupKey | None, list[int]] = {}
    for t in types:
        by_key.setdefault(subgroup_of(gang, ctx.first_pod(t).labels), []).append(t)
    running = _running_nodes(ctx.snapshot, gang)
    out: list[SubGroupPlan] = []
    for key, members in sorted(by_key.items(), key=lambda kv: (kv[0] is None, kv[0] or (0, ()))):
        policy = -1 if key is None else key[0]
        spec = gang.sub_group_policy[policy] if policy >= 0 else None
        limit = _own_limit(gang, policy, tree, job_limit, ctx.notes)
        name = "(default)" if spec is None or key is None else f"{spec.name}-{'-'.join(key[1])}"
        domain = None if limit is None else tree.top_within(limit)
        if domain is not None and key in running:
            domain = _recovered(domain, running[key], gang, name, ctx.notes)
        out.append(
            SubGroupPlan(
                name=name,
                policy=policy,
                types=tuple(members),
                size=1 if spec is None or spec.sub_group_size is None else spec.sub_group_size,
                limit=limit,
                domain=domain,
            )
        )
    return tuple(out)


def _running_nodes(snapshot: Snapshot, gang: Gang) -> dict[SubGroupKey | None, list[int]]:
    """The nodes of the job's running pods, by sub-group."""
    out: dict[SubGroupKey | None, list[int]] = {}
    running = snapshot.running
    for row in snapshot.rows_of_gang(gang.id).tolist():
        node = int(running.node[row])
        if node >= 0:
            out.setdefault(subgroup_of(gang, running.labels(row)), []).append(node)
    return out


def _recovered(
    domain: IntArray, nodes: list[int], gang: Gang, name: str, notes: list[str]
) -> IntArray:
    """`recoverAllocatedHyperNode` for a sub-group: its new pods stay in the HyperNode of
    tier <= its limit that holds its running pods; none holds them all: nowhere (upstream:
    "allocated hyperNode tier is greater than highest allowed tier")."""
    held = set(domain[nodes].tolist())
    if len(held) == 1 and (h := held.pop()) >= 0:
        return np.where(domain == h, domain, -1)
    notes.append(
        f"PodGroup {gang.id}: sub-group {name}'s running pods are in no one HyperNode within "
        "its tier limit: its pending pods are not placed"
    )
    return np.full_like(domain, -1)


def subgroup_constraints(
    problem: Problem,
    model: cp_model.CpModel,
    v: PlacementVars,
    u: int,
    g: int,
    subgroups: tuple[SubGroupPlan, ...],
    min_sub_groups: tuple[int, ...],
) -> None:
    """The module docstring's three constraint blocks for unit u, whose job is gang g."""
    counts = [len(p) for p in problem.type_pods]
    keys_of: dict[int, list[tuple[int, int, int]]] = {}
    for key in v.x:
        keys_of.setdefault(key[0], []).append(key)
    ready_by_policy: dict[int, list[cp_model.IntVar]] = {}
    for s, sub in enumerate(subgroups):
        keys = [k for t in sub.types for k in keys_of.get(t, [])]
        n_s = sum(counts[t] for t in sub.types)
        # size_s · ready[s] ≤ Σ_{t∈s} x[t, ·] ≤ n_s · ready[s]
        ready = model.new_bool_var(f"subgroup_ready[{u},{s}]")
        placed = cp_model.LinearExpr.sum([v.x[k] for k in keys])
        model.add(placed >= sub.size * ready)
        model.add(placed <= n_s * ready)
        ready_by_policy.setdefault(sub.policy, []).append(ready)
        if sub.domain is None:
            continue
        # Σ_h one[s, h] ≤ 1, x[t, c] ≤ n_t · one[s, dom_s(c)]
        one: dict[int, cp_model.IntVar] = {}
        for k in keys:
            h = int(sub.domain[v.classes[k[1]].nodes[0]])
            if h < 0:
                model.add(v.x[k] == 0)
                continue
            if h not in one:
                one[h] = model.new_bool_var(f"subgroup_in[{u},{s},{h}]")
            model.add(v.x[k] <= counts[k[0]] * one[h])
        if one:
            model.add(cp_model.LinearExpr.sum(list(one.values())) <= 1)
    # Σ_{s ∈ policy p} ready[s] ≥ minSubGroups_p · gang_on[g]  (gang_on: any pod of g placed)
    for p, minimum in enumerate(min_sub_groups):
        if minimum <= 0:
            continue
        readies = ready_by_policy.get(p, [])
        model.add(cp_model.LinearExpr.sum(readies) >= minimum * v.gang_on[g])
