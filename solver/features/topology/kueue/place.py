"""Kueue TAS pod sets on both engines, their objective tiers and their TopologyAssignment.

Greedy: each pod set of a unit, in order, gets Kueue's assignment (`kueue_tas.py`) against
the room left by the pod sets before it (Kueue's assumed usage); its pods then go to the
nodes of each assigned leaf (one node per leaf with hostname leaves); a group's leader goes
first, to its leaf. The unit is placed whole or not at all.

CP-SAT, for a pod set p (a group: its workers and leader as one p) with types T_p on node classes c (each class inside one domain of
every Kueue level, `class_rows`):

    # whole:     Σ_{t ∈ T_p} x[t, c, k] = |p| · on[u]
    # required:  y[p, d] ∈ {0, 1}, Σ_d y[p, d] ≤ 1, x[t, c, k] ≤ |t| · y[p, dom_L(c)]
    # slices:    Σ_{t ∈ T_p, c ⊂ d} x[t, c, k] = s · z[p, d]   for every domain d of level S
    #            (multi-layer: the same with s_l on every level l of `size_at`)
    # used:      Σ_{t ∈ T_p, c ⊂ d} x[t, c, k] ≤ |p| · used[p, l, d]

Tiers (fewer is better, after `placed_pods`): `kueue_domains:<level>` = Σ_p Σ_d used[p, l,
d] for every level above hostname, top first — Kueue's "one domain at the lowest level that
holds the set" as an objective; below the requested level it rewards Kueue's BestFit aims
(fewest domains), and CP-SAT may find fewer than the greedy's choice.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from ortools.sat.python import cp_model

from solver.decision import KueueTopologyAssignment
from solver.features.topology.kueue.podsets import KueuePodSet, leader_leaves, leaf_pods
from solver.features.topology.kueue.tas import LeaderLeaves, find_topology_assignment
from solver.problem import (
    GreedyState,
    IntArray,
    Problem,
    TierSpec,
    fill,
    fit_report,
    format_fit_error,
)
from solver.sat import PlacementVars, Term

__all__ = [
    "assignments",
    "build_kueue",
    "class_rows",
    "kueue_tier_specs",
    "kueue_tier_values",
    "place_kueue",
]

Plans = Sequence[tuple[KueuePodSet, ...] | None]


def place_kueue(
    problem: Problem, pod_sets: tuple[KueuePodSet, ...], gangs: list[int], state: GreedyState
) -> None:
    trial = state.free.copy()
    base = state.tracker.checkpoint()
    chosen: dict[int, list[int]] = {}
    for ps in pod_sets:
        t0 = ps.types[0]
        demand = problem.type_demand[t0]
        leaves = leaf_pods(ps, trial, demand, problem.eligible[t0])
        leader: LeaderLeaves | None = None
        if ps.leader is not None:
            lt = ps.leader.types[0]
            both = problem.eligible[t0] & problem.eligible[lt]
            leader = leader_leaves(ps, trial, demand, problem.type_demand[lt], both)
        found = find_topology_assignment(ps.tree, leaves, ps.request, leader)
        why = found
        if not isinstance(found, str):
            why = _fill_leader(problem, ps, found.leader, trial, chosen, state)
            why = why or _fill_leaves(problem, ps, found.workers, trial, chosen, state)
        if why:
            state.tracker.restore(base)
            for g in gangs:
                state.gang_reason[g] = f"gang {problem.gang_ids[g]}: pod set {ps.name}: {why}"
            return
    if why := _fill_rest(problem, pod_sets, gangs, trial, chosen, state):
        state.tracker.restore(base)
        for g in gangs:
            state.gang_reason[g] = f"gang {problem.gang_ids[g]}: {why}"
        return
    plan = {t: np.array(nodes, dtype=np.int64) for t, nodes in chosen.items()}
    over = state.ledger.admits(plan)
    if over:
        state.tracker.restore(base)
        for g in gangs:
            state.gang_reason[g] = f"gang {problem.gang_ids[g]}: {over}"
        return
    state.free[:] = trial
    state.ledger.charge_plan(plan)
    for t, nodes in chosen.items():
        state.pod_node[t][: len(nodes)] = nodes


def _fill_rest(
    problem: Problem,
    pod_sets: tuple[KueuePodSet, ...],
    gangs: list[int],
    trial: IntArray,
    chosen: dict[int, list[int]],
    state: GreedyState,
) -> str:
    """The gangs' pods outside every topology-aware pod set (a pod set without a topology
    request beside one with it), anywhere they fit, after those: Kueue admits a workload
    whole, so all of them or the unit waits."""
    covered = {t for ps in pod_sets for t in ps.all_types}
    for g in gangs:
        for t in problem.gang_types(g):
            if t in covered:
                continue
            got = fill(problem, t, len(problem.type_pods[t]), trial, tracker=state.tracker)
            chosen.setdefault(t, []).extend(got.tolist())
            if got.size < len(problem.type_pods[t]):
                _, counts = fit_report(problem, t, trial, state.tracker)
                return (
                    f"{got.size} of {len(problem.type_pods[t])} pod(s) without a topology "
                    f"request fit beside its topology-aware pod sets: "
                    f"{format_fit_error(problem.num_nodes, counts)}"
                )
    return ""


def _fill_leader(
    problem: Problem,
    ps: KueuePodSet,
    leaf: int,
    trial: IntArray,
    chosen: dict[int, list[int]],
    state: GreedyState,
) -> str:
    """The group's leader on a node of its leaf, before the workers (Kueue counts the
    workers beside it)."""
    if ps.leader is None:
        return ""
    nodes = np.flatnonzero(ps.tree.node_leaf == leaf) if leaf >= 0 else np.zeros(0, np.int64)
    for t in ps.leader.types:
        got = fill(problem, t, len(problem.type_pods[t]), trial, nodes, state.tracker)
        chosen.setdefault(t, []).extend(got.tolist())
        if got.size < len(problem.type_pods[t]):
            return f"leader pod set {ps.leader.name}: no node of its assigned domain takes it"
    return ""


def _fill_leaves(
    problem: Problem,
    ps: KueuePodSet,
    counts: dict[int, int],
    trial: IntArray,
    chosen: dict[int, list[int]],
    state: GreedyState,
) -> str:
    """The set's pods on the nodes of each assigned leaf, types in order; why not."""
    remaining = {t: len(problem.type_pods[t]) for t in ps.types}
    for leaf, want in counts.items():
        nodes = np.flatnonzero(ps.tree.node_leaf == leaf)
        for t in ps.types:
            take = min(want, remaining[t])
            if take <= 0:
                continue
            got = fill(problem, t, take, trial, nodes, state.tracker)
            chosen.setdefault(t, []).extend(got.tolist())
            remaining[t] -= int(got.size)
            want -= int(got.size)
        if want > 0:
            where = "/".join(ps.tree.paths[-1][leaf])
            return (
                f"Kueue assigned {counts[leaf]} pod(s) to {where}, whose nodes take fewer "
                "(a leaf above hostname sums its nodes' room)"
            )
    return ""


# ----------------------------------------------------------------------------- CP-SAT


def class_rows(plans: Plans) -> list[IntArray]:
    """Rows node classes must not mix: every Kueue level above hostname, per tree; hostname
    too (one class per node) when a pod set cuts slices per node or requires one node."""
    rows: dict[int, IntArray] = {}
    for sets in plans:
        for ps in sets or ():
            req, lowest = ps.request, ps.tree.lowest
            # a class must sit on one host when slices or a required domain are hosts
            per_node = (
                (req.slice_size > 1 and req.slice_level == lowest)
                or (req.required and req.level == lowest)
                or any(lv == lowest and k > 1 for lv, k in req.size_at)
            )
            for lv in range(ps.tree.lowest + (0 if ps.hostname_leaves and not per_node else 1)):
                rows.setdefault(id(ps.tree) * 32 + lv, ps.tree.node_domain(lv))
    return list(rows.values())


def _scored_levels(plans: Plans) -> list[str]:
    out: list[str] = []
    for sets in plans:
        for ps in sets or ():
            for lv in range(ps.tree.lowest + (0 if ps.hostname_leaves else 1)):
                if ps.tree.levels[lv] not in out:
                    out.append(ps.tree.levels[lv])
    return out


def kueue_tier_specs(plans: Plans) -> list[TierSpec]:
    specs = []
    for label in _scored_levels(plans):
        upper = sum(
            min(ps.total, len(ps.tree.paths[ps.tree.levels.index(label)]))
            for sets in plans
            for ps in sets or ()
            if label in ps.tree.levels
        )
        specs.append(TierSpec(f"kueue_domains:{label}", 0, upper, maximize=False))
    return specs


def kueue_tier_values(problem: Problem, plans: Plans, pod_node: list[IntArray]) -> dict[str, int]:
    values = dict.fromkeys((f"kueue_domains:{x}" for x in _scored_levels(plans)), 0)
    for sets in plans:
        for ps in sets or ():
            placed = np.concatenate([pod_node[t][pod_node[t] >= 0] for t in ps.all_types])
            for label in _scored_levels([(ps,)]):
                row = ps.tree.node_domain(ps.tree.levels.index(label))[placed]
                values[f"kueue_domains:{label}"] += len(set(row[row >= 0].tolist()))
    return values


def build_kueue(
    problem: Problem, plans: Plans, model: cp_model.CpModel, v: PlacementVars
) -> list[Term]:
    keys_of: dict[int, list[tuple[int, int, int]]] = {}
    for key in v.x:
        keys_of.setdefault(key[0], []).append(key)
    used_by_label: dict[str, list[cp_model.IntVar]] = {}
    for u, sets in enumerate(plans):
        for p, ps in enumerate(sets or ()):
            keys = [key for t in ps.all_types for key in keys_of.get(t, [])]
            if not keys:
                continue
            xs = [v.x[key] for key in keys]
            # whole: Σ x = |p| · on[u]   (a group: its leader and workers together)
            model.add(cp_model.LinearExpr.sum(xs) == ps.total * v.unit_on[u])
            req = ps.request
            node_of = [v.classes[key[1]].nodes[0] for key in keys]
            if req.required:
                dom = ps.tree.node_domain(req.level)
                values = sorted({int(dom[n]) for n in node_of} - {-1})
                y = {d: model.new_bool_var(f"kueue_domain[{u},{p},{d}]") for d in values}
                # required: Σ_d y ≤ 1, x ≤ |t| · y[dom(c)]
                model.add(cp_model.LinearExpr.sum(list(y.values())) <= 1)
                for key, n in zip(keys, node_of, strict=True):
                    d = int(dom[n])
                    size = len(problem.type_pods[key[0]])
                    if d < 0:
                        model.add(v.x[key] == 0)
                    else:
                        model.add(v.x[key] <= size * y[d])
            by_level: dict[int, dict[int, list[cp_model.IntVar]]] = {}
            levels = set(range(ps.tree.lowest + (0 if ps.hostname_leaves else 1)))
            multiples = [(req.slice_level, req.slice_size), *req.size_at]
            levels |= {lv for lv, k in multiples if k > 1}
            for lv in sorted(levels):
                dom = ps.tree.node_domain(lv)
                for key, n in zip(keys, node_of, strict=True):
                    if dom[n] >= 0:
                        by_level.setdefault(lv, {}).setdefault(int(dom[n]), []).append(v.x[key])
            for lv, k in multiples:
                if k <= 1:
                    continue
                # slices: Σ_{c ⊂ d} x = s · z[p, d] (each multi-layer level with its size)
                for d, group in sorted(by_level.get(lv, {}).items()):
                    z = model.new_int_var(0, req.count // k, f"kueue_slices[{u},{p},{lv},{d}]")
                    model.add(cp_model.LinearExpr.sum(group) == k * z)
            for lv in sorted(levels):
                if lv == ps.tree.lowest and ps.hostname_leaves:
                    continue
                for d, group in sorted(by_level.get(lv, {}).items()):
                    used = model.new_bool_var(f"kueue_used[{u},{p},{lv},{d}]")
                    model.add(cp_model.LinearExpr.sum(group) <= ps.total * used)
                    used_by_label.setdefault(ps.tree.levels[lv], []).append(used)
    return [
        Term(f"kueue_domains:{label}", cp_model.LinearExpr.sum(used_by_label.get(label, [])))
        for label in _scored_levels(plans)
    ]


# ----------------------------------------------------------------------------- output


def assignments(
    problem: Problem, plans: Plans, pod_node: list[IntArray]
) -> list[KueueTopologyAssignment]:
    """Kueue's TopologyAssignment of every placed pod set: hostname values alone when the
    lowest level is hostname, else every level's values of the leaves (`buildAssignment`)."""
    out: list[KueueTopologyAssignment] = []
    for sets in plans:
        for ps in sets or ():
            members = [(ps.name, ps.types)]
            if ps.leader is not None:  # Kueue's order: the leader's assignment, then workers'
                members.insert(0, (ps.leader.name, ps.leader.types))
            for name, types in members:
                placed = np.concatenate([pod_node[t][pod_node[t] >= 0] for t in types])
                if placed.size:
                    out.append(_assignment(problem, ps, name, placed))
    return out


def _assignment(
    problem: Problem, ps: KueuePodSet, name: str, placed: IntArray
) -> KueueTopologyAssignment:
    leaves = np.bincount(ps.tree.node_leaf[placed], minlength=len(ps.tree.paths[-1]))
    first = ps.tree.lowest if ps.hostname_leaves else 0
    domains = tuple(
        (ps.tree.paths[-1][d][first:], int(c)) for d, c in enumerate(leaves.tolist()) if c
    )
    return KueueTopologyAssignment(
        podgroup=problem.gang_ids[ps.gang],
        pod_set=name,
        levels=ps.tree.levels[first:],
        domains=domains,  # leaf ids are in level-value order
    )
