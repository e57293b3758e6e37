"""A unit's hard domain rules, dialect-neutral: which of its pod types must share one domain.

Every topology dialect states its hard rule as "these pods, inside one value of this node
array":

    Koordinator MustGather, Godel / Workload API required topology, HyperNode tiers
        every pending pod of the unit, one value of `TopologyBlock.unit_domain`
    Kueue `podset-required-topology: L`
        every pod of the pod set (and its group's leader), one domain of level L of the
        pod set's flavor tree
    KAI sub-group with a required level
        its pending pods, one domain of its level; it lies inside its PodGroup's rule or
        another sub-group's, so rules may hold the same pods (`overlapping`)

A consumer that places a unit outside the placement engines (preemption's dry run, which
plans rule after rule, and nested ones one outer domain at a time; defragmentation's model,
which takes them together) reads these rules instead of the dialects (Koordinator's gather, which also counts offer slots
and podCountMultiple, keeps its own planner there). A Kueue pod set with slices
(`podset-slice-required-topology` + `podset-slice-size`) adds them to its rule: in every
domain of the slice level, a multiple of the slice size of its pods; with multi-layer
slices (`podset-slice-required-topology-constraints`), the same on every layer's level with
its size, outermost first. What a rule cannot say is refused in words: slices beside a
leader or without a required level, and a HyperNode `subGroupPolicy` whose job needs fewer pods than it has pending
(sub-groups of `subGroupSize` placed whole or not at all); when it needs them all, each
sub-group with a tier of its own is a rule inside the job's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solver.features.topology.block import TopologyBlock
from solver.features.topology.godel.block import godel_plan_of
from solver.features.topology.hypernode.block import HyperNodeBlock
from solver.features.topology.kueue.block import kueue_pod_sets
from solver.problem import IntArray, Problem

__all__ = ["DomainRule", "domain_rules", "overlapping"]


@dataclass(frozen=True, eq=False)
class DomainRule:
    """Every new pod of `types` on nodes sharing one value >= 0 of `domain`."""

    types: tuple[int, ...]
    domain: IntArray  # [N] the node's domain; -1 = not usable under the rule
    names: tuple[str, ...]  # [D] each domain's name
    rule: str  # the rule in its dialect's words, e.g. "one HyperNode within its tier"
    whole: bool = False  # every pod of `types` (a Kueue pod set is admitted whole)
    slices: tuple[tuple[IntArray, int], ...] = ()  # per layer, outermost first: ([N] the
    #   node's slice domain, slice size): in every slice domain, a multiple of the size of
    #   the rule's pods (Kueue slices; each size divides the one before it)


def domain_rules(problem: Problem, u: int) -> list[DomainRule] | str:
    """Unit u's hard domain rules (empty: none), or why they cannot be stated as such."""
    block = problem.block(TopologyBlock)
    if block is None:
        return []
    hypernode = problem.block(HyperNodeBlock)
    plan = hypernode.plan(u) if hypernode is not None else None
    gangs = np.flatnonzero(problem.gang_unit == u)
    policy = plan is not None and any(s.policy >= 0 for s in plan.subgroups)
    if policy and (problem.gang_need[gangs] < problem.gang_pending[gangs]).any():
        return (
            "a HyperNode subGroupPolicy whose job needs fewer pods than it has pending "
            "(sub-groups placed whole, in their own HyperNodes)"
        )
    rules: list[DomainRule] = []
    domain = block.domain_of(u)
    if domain is not None:
        types = tuple(t for t in range(problem.num_types) if problem.type_unit(t) == u)
        names = tuple(n.rstrip(";") for n in block.unit_domain_names[u])
        rules.append(DomainRule(types, domain, names, block.unit_domain_rule[u] or "one domain"))
    tree = hypernode.tree if hypernode is not None else None
    for sg in plan.subgroups if plan is not None else ():
        if sg.domain is not None and sg.types and tree is not None:
            rule = f"one HyperNode of tier <= {sg.limit} (sub-group {sg.name})"
            rules.append(DomainRule(sg.types, sg.domain, tree.names, rule))
    godel = godel_plan_of(problem, u)
    for sub in godel.sub_domains if godel is not None else ():
        if sub.types and sub.required:
            rule = f"one {sub.level} domain (sub-group {sub.name})"
            rules.append(DomainRule(sub.types, sub.domain, sub.names, rule))
    for ps in kueue_pod_sets(problem, u) or ():
        req = ps.request
        sliced = req.slice_size != 1
        if sliced and (ps.leader is not None or len(ps.types) != 1):
            return f"Kueue pod set {ps.name}: slices beside a leader"
        if sliced and not req.required:
            return f"Kueue pod set {ps.name}: topology slices without a required level"
        if not req.required:
            continue
        layers = req.layers or ((req.slice_level, req.slice_size),)
        slices = tuple((ps.tree.node_domain(lv), k) for lv, k in layers) if sliced else ()
        names = tuple("/".join(path) for path in ps.tree.paths[req.level])
        level = ps.tree.levels[req.level]
        rules.append(
            DomainRule(
                ps.all_types,
                ps.tree.node_domain(req.level),
                names,
                f"one {level} domain (Kueue pod set {ps.name})",
                whole=True,
                slices=slices,
            )
        )
    return rules


def overlapping(rules: list[DomainRule]) -> bool:
    """Two rules hold pods of one type (a KAI sub-group inside its PodGroup's domain or
    inside another sub-group): together they constrain those pods, which a consumer placing
    rule after rule cannot state."""
    seen: set[int] = set()
    for rule in rules:
        if seen & set(rule.types):
            return True
        seen |= set(rule.types)
    return False
