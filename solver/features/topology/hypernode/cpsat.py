"""Volcano HyperNode's CP-SAT module: the domains each HyperNode job uses, tier by tier.

The hard rule (one HyperNode of tier <= limit) is the topology core's one-domain rule
(`topology/cpsat.py`, from `TopologyBlock.unit_domain`); this module adds the objective.
Node classes are split by the node's HyperNode at every tier (`class_split`), so a class
lies in one HyperNode of each tier:

    # used[u, k, h] ⇐ Σ_{t ∈ T_u, c ⊂ h} x[t, c, ·] ≥ 1      (h a HyperNode of tier k)
    # hypernodes:tier<k> = Σ_u Σ_h used[u, k, h]              (fewer is better, top tier first)
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from solver.features.topology.hypernode.block import HyperNodeBlock
from solver.features.topology.hypernode.subgroup import subgroup_constraints
from solver.problem import IntArray, Problem
from solver.sat import PlacementVars, Term

__all__ = ["build", "class_split"]


def class_split(problem: Problem) -> list[IntArray]:
    """Node classes must not mix HyperNodes of any tier."""
    block = problem.block(HyperNodeBlock)
    if block is None or not block.units():
        return []
    return list(block.at_tier)


def build(problem: Problem, model: cp_model.CpModel, v: PlacementVars) -> list[Term]:
    block = problem.block(HyperNodeBlock)
    if block is None or not block.units():
        return []
    for u in block.units():  # subGroupPolicy: each sub-group's gang and own HyperNode
        plan = block.plan(u)
        if plan is not None and plan.subgroups:
            g = problem.gang_ids.index(plan.gang)
            subgroup_constraints(problem, model, v, u, g, plan.subgroups, plan.min_sub_groups)
    if not block.tiers_listed:
        return []
    units = set(block.units())
    counts = [len(p) for p in problem.type_pods]
    keys_of: dict[int, list[tuple[int, int, int]]] = {}
    for key in v.x:
        u = problem.type_unit(key[0])
        if u in units:
            keys_of.setdefault(u, []).append(key)
    terms: list[Term] = []
    for k in reversed(range(len(block.tiers_listed))):
        row = block.at_tier[k]
        used_vars: list[cp_model.IntVar] = []
        for u, keys in sorted(keys_of.items()):
            pending = sum(counts[t] for t in {key[0] for key in keys})
            by_domain: dict[int, list[cp_model.IntVar]] = {}
            for key in keys:
                h = int(row[v.classes[key[1]].nodes[0]])
                if h >= 0:
                    by_domain.setdefault(h, []).append(v.x[key])
            for h, xs in sorted(by_domain.items()):
                used = model.new_bool_var(f"hypernode_used[{u},{k},{h}]")
                model.add(cp_model.LinearExpr.sum(xs) <= pending * used)
                used_vars.append(used)
        terms.append(
            Term(f"hypernodes:tier{block.tiers_listed[k]}", cp_model.LinearExpr.sum(used_vars))
        )
    return terms
