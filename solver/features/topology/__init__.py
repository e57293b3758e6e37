"""Network topology: Koordinator's gather (`network-topology` plugin), Godel's job-level
affinity (`job-affinity` plugin), the Kubernetes Workload API's PodGroup topology
constraint and Kueue TAS (both always on: kube-scheduler's own, Kueue's admission) and
Volcano's HyperNode `networkTopology` (always on; scored by `network-topology-aware`), on
one "one domain" rule.

The shared core (this folder), then one sub-package per dialect, each with its own block:

    tree.py         the ClusterNetworkTopology tree every dialect's domains live on
                    (memoised per node generation)
    block.py        `TopologyBlock`: the engine-neutral one-domain rule every dialect writes
    rules.py        that rule, and each dialect's hard rules, for planners outside the engines
    bound.py        the one-domain bound (`why`'s certificate)
    greedy.py       the greedy's unit placer: Koordinator's gather, Godel's NodeGroups, Kueue
    cpsat.py        the CP-SAT module: domain choice, gather, podCountMultiple, domain tiers
    koordinator/    block.py (`GatherBlock`: the tree, MustGather layers, podCountMultiple,
                    peers; the `domains:*` and `gather_slack` tiers), spec.py (the gather
                    spec of a gang group, pod order, existing peers), gather.py (offer
                    slots), selector.py (network-topology-selector scores)
    godel/          block.py (`GodelBlock`: each unit's plan, Godel's node metrics; the
                    `preferred_domains` tiers), affinity.py (PodGroup affinity as node
                    arrays), nodegroups.py (the greedy's order), objective.py (that order as
                    CP-SAT tiers)
    workload_api/   the Workload API's and KAI's PodGroup topology read as Godel's plan
                    (affinity.py), KAI sub-groups (subgroups.py, nested.py)
    kueue/          block.py (`KueueBlock`: each unit's pod sets; the `kueue_domains:*`
                    tiers), podsets.py (pod sets, flavors, their trees), tas.py (Kueue's
                    findTopologyAssignment), place.py (both engines and the output)
    hypernode/      Volcano HyperNodes: tree, compile, block (`HyperNodeBlock`), greedy,
                    CP-SAT, sub-groups

Compile (this module): for every unit, the gather requirements of its first gang
(Koordinator) or its Godel plan; nodes outside the tree, outside a Godel nodeSelector or
lacking its required keys are filtered with their own counted reasons; pods with a
`network-topology-selector` scheduled pod by pod get Koordinator's selector score.

**Late members stay in their gang's domain** (an improvement on Koordinator, whose PR #3181
to do so was closed): when a gathered gang group with a MustGather layer already has bound
members (a member recreated, or pods beyond the first batch, after the group was once
satisfied), its pending pods may only use nodes of the MustGather domain those members run
in; if they run in several domains of that layer, or outside the tree, the domain cannot be
told and the group is not placed (as the PR rejects them). Upstream places them as a new
job, anywhere. Both engines read it as eligibility; `verify` checks it on its own.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import replace
from typing import Any

import numpy as np

from solver.config import Plugin
from solver.features._base import CompileContext, Feature
from solver.features._steps import CpsatSteps, DecideSteps, ExplainSteps, GreedySteps
from solver.features.topology import cpsat
from solver.features.topology.block import TopologyBlock
from solver.features.topology.bound import one_domain_bound
from solver.features.topology.godel.affinity import (
    GodelPlan,
    godel_node_metrics,
    godel_plan,
    job_affinity,
)
from solver.features.topology.godel.block import GodelBlock
from solver.features.topology.greedy import place_topology_unit
from solver.features.topology.hypernode import cpsat as hypernode_cpsat
from solver.features.topology.hypernode.compile import HyperNodeUnits, compile_hypernode
from solver.features.topology.hypernode.greedy import place_hypernode_unit
from solver.features.topology.hypernode.subgroup import subgroup_type_key
from solver.features.topology.hypernode.subgroup_greedy import place_subgroup_unit
from solver.features.topology.koordinator.block import GatherBlock
from solver.features.topology.koordinator.selector import compile_selector_scores, selector_of
from solver.features.topology.koordinator.spec import (
    ANNOTATION_SPEC,
    SELECTOR_FACT,
    UnitGather,
    gather_rank_key,
    peer_counts,
    unit_gather,
)
from solver.features.topology.kueue.block import KueueBlock
from solver.features.topology.kueue.place import assignments
from solver.features.topology.kueue.podsets import KueuePodSet, compile_kueue, pod_set_key
from solver.features.topology.tree import TopologyTree, tree_of
from solver.features.topology.workload_api.affinity import is_topology_unit
from solver.features.topology.workload_api.subgroups import (
    compile_sub_domains,
    domain_sub_group_key,
)
from solver.model import Gang, Pod
from solver.problem import IntArray, Problem
from solver.snapshot import Snapshot, Workload

__all__ = ["DIALECT_GODEL", "FEATURE", "GatherBlock", "GodelBlock", "KueueBlock", "TopologyBlock"]

DIALECT_GODEL = "scheduling.godel.kubewharf.io"
REASON_OUT_OF_TREE = "node(s) are not in the network topology tree"
REASON_NODE_SELECTOR = "node(s) didn't match PodGroup affinity nodeSelector"
REASON_PINNED = "node(s) are outside the required topology domain of the PodGroup's running pods"
REASON_SUB_GROUPS_ALONE = (
    "its sub-groups' topology levels apply to a PodGroup placed alone, not in a gang group, "
    "a Koordinator gather or Kueue's topology-aware scheduling"
)
REASON_BOUND_DOMAIN = "node(s) are outside the {layer} domain of the gang group's bound members"


def _compile(ctx: CompileContext) -> None:
    gather: dict[int, UnitGather] = {}
    tree: TopologyTree | None = None
    if ctx.conf.enabled(Plugin.NETWORK_TOPOLOGY):
        tree = _compile_gather(ctx, gather)
        _compile_selectors(ctx, set(gather))
    godel: dict[int, GodelPlan] = {}
    _compile_godel(ctx, gather, godel)
    kueue = compile_kueue(ctx)  # Kueue TAS: always, like the Workload API's topology
    for u in kueue.keys() & {u for u, p in godel.items() if p.sub_domains or p.sub_minimums}:
        for g in ctx.gangs.unit_gangs()[u]:
            ctx.block_gang(g, f"gang {ctx.gangs.gang_ids[g]}: {REASON_SUB_GROUPS_ALONE}")
    hypernode = compile_hypernode(ctx, taken=set(gather) | set(godel) | set(kueue))
    if not gather and not godel and not kueue and not hypernode:
        return
    _add_blocks(ctx, tree, gather, godel, kueue, hypernode)


def _pending_of(ctx: CompileContext, gids: list[str]) -> dict[str, list[Pod]]:
    return {gid: ctx.workload.members(gid) for gid in gids}


def _compile_gather(ctx: CompileContext, gather: dict[int, UnitGather]) -> TopologyTree | None:
    plan = ctx.gangs
    if not any(ctx.workload.gangs[gid].annotations.get(ANNOTATION_SPEC) for gid in plan.gang_ids):
        return None
    found = tree_of(ctx.nodes, ctx.snapshot.topology)
    tree, tree_error = (found, None) if isinstance(found, TopologyTree) else (None, found)
    unit_gangs = plan.unit_gangs()
    for u, gangs in enumerate(unit_gangs):
        ids = [plan.gang_ids[g] for g in gangs]
        unit, notes = unit_gather(ctx.workload.gangs, _pending_of(ctx, ids), ids, tree, tree_error)
        ctx.notes.extend(notes)
        if unit is None:
            continue
        gather[u] = unit
        ctx.unit_sort_key[u] = gather_rank_key
        if unit.blocked:
            for g in gangs:
                ctx.block_gang(g, unit.blocked)
    if not gather:
        return tree
    if tree is None:
        ctx.notes.append(
            f"topology-aware gang groups cannot be placed: no cluster network topology ({tree_error})"
        )
        return None
    if not tree.in_tree.all():
        for u in gather:
            for g in unit_gangs[u]:
                ctx.restrict(ctx.types_of(g), tree.in_tree, REASON_OUT_OF_TREE)
    for u, unit in gather.items():
        _pin_to_bound_members(ctx, tree, unit, unit_gangs[u])
    return tree


def _pin_to_bound_members(
    ctx: CompileContext, tree: TopologyTree, unit: UnitGather, gangs: list[int]
) -> None:
    """Pending pods of a gathered group with bound members: only in those members' MustGather
    domain, or not at all when it cannot be told (module docstring)."""
    layer = tree.layer_index(unit.must_layer)
    if layer < 0 or unit.blocked:
        return
    running = ctx.snapshot.running
    rows = [ctx.snapshot.rows_of_gang(ctx.gangs.gang_ids[g]) for g in gangs]
    nodes = running.node[np.concatenate(rows)] if rows else np.zeros(0, dtype=np.int64)
    nodes = nodes[nodes >= 0]
    if nodes.size == 0:
        return
    domains = np.unique(tree.node_domain[layer][nodes])
    if domains.size == 1 and domains[0] >= 0:
        allowed = tree.node_domain[layer] == domains[0]
        reason = REASON_BOUND_DOMAIN.format(layer=f"MustGather {unit.must_layer}")
        for g in gangs:
            ctx.restrict(ctx.types_of(g), allowed, reason)
        return
    names = sorted(tree.domains[layer][d] if d >= 0 else "(outside the tree)" for d in domains)
    why = (
        f"bound members of the gang group run in {unit.must_layer} domains {names}: the "
        "MustGather domain of its pending pods cannot be determined"
    )
    for g in gangs:
        ctx.block_gang(g, why)


def _compile_selectors(ctx: CompileContext, gathered: set[int]) -> None:
    """Koordinator's `network-topology-selector` score for pods placed one by one."""
    if not any(selector_of(ctx.first_pod(t)) for t in range(ctx.num_types)):
        return
    found = tree_of(ctx.nodes, ctx.snapshot.topology)
    if isinstance(found, TopologyTree):
        compile_selector_scores(ctx, found, gathered)


def _compile_godel(
    ctx: CompileContext, gather: dict[int, UnitGather], godel: dict[int, GodelPlan]
) -> None:
    plan = ctx.gangs
    gangs = ctx.workload.gangs
    godel_on = ctx.conf.enabled(Plugin.JOB_AFFINITY)

    def is_unit(gid: str) -> bool:
        """Godel PodGroups when `job-affinity` is on; Workload API topology always (it is
        kube-scheduler's own, not a plugin a conf turns off)."""
        gang = gangs[gid]
        return (godel_on and gang.dialect == DIALECT_GODEL) or is_topology_unit(gang)

    if not any(is_unit(gid) for gid in plan.gang_ids):
        return
    for u, members in enumerate(plan.unit_gangs()):
        own = [g for g in members if is_unit(plan.gang_ids[g])]
        if not own:
            continue
        gid = plan.gang_ids[own[0]]
        if len(members) > 1 or u in gather:
            if gangs[gid].topology_sub_groups:
                ctx.block_gang(own[0], f"gang {gid}: {REASON_SUB_GROUPS_ALONE}")
            elif gangs[gid].affinity or gangs[gid].topology_key or gangs[gid].preferred_keys:
                ctx.notes.append(
                    f"PodGroup {gid}: job-level affinity and the Workload API topology apply "
                    "to a single PodGroup without a Koordinator network-topology-spec; "
                    "ignored here"
                )
            continue
        unit_plan = godel_plan(ctx.snapshot, gangs[gid], ctx.workload.members(gid))
        if unit_plan is None:
            continue
        types = ctx.types_of(own[0])
        ctx.restrict(types, unit_plan.candidate, REASON_NODE_SELECTOR)
        if unit_plan.required is not None:
            usable = (unit_plan.required >= 0) | ~unit_plan.candidate
            if unit_plan.required_pinned:
                reason = REASON_PINNED
            else:
                keys = ", ".join(sorted(set(job_affinity(gangs[gid]).required)))
                reason = f"node(s) lack the PodGroup's required topology key(s) {keys}"
            ctx.restrict(types, usable, reason)
        if unit_plan.blocked:
            ctx.block_gang(own[0], f"gang {gid}: {unit_plan.blocked}")
        if gangs[gid].topology_sub_groups:
            unit_plan = _with_sub_groups(ctx, own[0], gangs[gid], unit_plan)
        godel[u] = unit_plan


def _with_sub_groups(ctx: CompileContext, g: int, gang: Gang, plan: GodelPlan) -> GodelPlan:
    """A KAI PodGroup's sub-groups: their own domains and minimums; nodes outside a
    sub-group's domains are not eligible for its pods, with a counted reason."""
    types = ctx.types_of(g)
    subs, minimums = compile_sub_domains(
        ctx.snapshot, gang, [(t, ctx.first_pod(t).labels) for t in types]
    )
    for sub in subs:
        why = (
            sub.blocked
            or f"node(s) are outside every {sub.level} domain sub-group {sub.name} may use"
        )
        ctx.restrict(list(sub.types), sub.domain >= 0, why)
    for m in minimums:
        pods = sum(len(ctx.type_pods[t]) for t in m.types)
        if pods < m.need:
            ctx.block_gang(g, f"gang {gang.id}: {m.what} has {pods} pending pod(s), needs {m.need}")
    return replace(plan, sub_domains=subs, sub_minimums=minimums)


def _call_type_key(snapshot: Snapshot, workload: Workload) -> Callable[[Pod], Hashable]:
    """Pods of different sub-groups (Volcano's policies, KAI's levels) are of different types."""
    volcano = subgroup_type_key(snapshot, workload)
    kai = domain_sub_group_key(snapshot, workload)
    return lambda pod: (volcano(pod), kai(pod))


def _add_blocks(
    ctx: CompileContext,
    tree: TopologyTree | None,
    gather: dict[int, UnitGather],
    godel: dict[int, GodelPlan],
    kueue: dict[int, tuple[KueuePodSet, ...]],
    hypernode: HyperNodeUnits,
) -> None:
    """The shared one-domain rule, then each dialect's own block (in this order: it is the
    order of their objective tiers)."""
    num_units = len(ctx.gangs.unit_ids)
    gather_block = _gather_block(ctx, tree, gather) if gather else None
    domain: list[IntArray | None] = [None] * num_units
    domain_names: list[tuple[str, ...]] = [()] * num_units
    rule = [""] * num_units
    if gather_block is not None:
        for u in gather:
            layer = int(gather_block.unit_gather_layer[u])
            if layer >= 0:
                domain[u] = gather_block.node_domain[layer]
                domain_names[u] = gather_block.domains[layer]
                rule[u] = f"one {gather_block.layers[layer]} domain (MustGather)"
    for u, unit_plan in godel.items():
        domain[u] = unit_plan.required
        domain_names[u] = unit_plan.required_names if unit_plan.required is not None else ()
        rule[u] = unit_plan.rule
    for u, (hypernode_domain, hypernode_names) in hypernode.items():
        domain[u], domain_names[u] = hypernode_domain, hypernode_names
        rule[u] = "one HyperNode within its highestTierAllowed"
    ctx.add_block(
        TopologyBlock(
            unit_domain=tuple(domain),
            unit_domain_names=tuple(domain_names),
            unit_domain_rule=tuple(rule),
        )
    )
    if gather_block is not None:
        ctx.add_block(gather_block)
    if godel:
        alloc, requested = godel_node_metrics(ctx.snapshot)
        ctx.add_block(
            GodelBlock(
                unit_godel=tuple(godel.get(u) for u in range(num_units)),
                godel_allocatable=np.asarray(alloc, dtype=np.int64),
                godel_requested=np.asarray(requested, dtype=np.int64),
            )
        )
    if kueue:
        ctx.add_block(KueueBlock(unit_kueue=tuple(kueue.get(u) for u in range(num_units))))


def _gather_block(
    ctx: CompileContext, tree: TopologyTree | None, gather: dict[int, UnitGather]
) -> GatherBlock:
    num_units = len(ctx.gangs.unit_ids)
    layers = tree.layers if tree is not None else ()
    gather_layer = np.full(num_units, -1, dtype=np.int64)
    multiples = np.ones((num_units, len(layers)), dtype=np.int64)
    texts = [""] * num_units
    peers: list[IntArray] = [np.zeros(0, dtype=np.int64)] * num_units
    for u, unit in gather.items():
        if unit.must_layer in layers:
            gather_layer[u] = layers.index(unit.must_layer)
        for layer, m in unit.multiples.items():
            if layer in layers:
                multiples[u, layers.index(layer)] = m
        if unit.multiples:
            parts = sorted(f"{layer}={m}" for layer, m in unit.multiples.items())
            texts[u] = f"; podCountMultiple constraints: {', '.join(parts)}"
        if unit.selector:
            peers[u] = peer_counts(ctx.snapshot, unit.selector)
    flags = np.zeros(num_units, dtype=bool)
    flags[list(gather)] = True
    return GatherBlock(
        layers=layers,
        domains=tree.domains if tree is not None else (),
        parent=tree.parent if tree is not None else (),
        node_domain=tree.node_domain if tree is not None else np.zeros((0, 0), dtype=np.int64),
        unit_gather=flags,
        unit_gather_layer=gather_layer,
        unit_pod_multiple=multiples,
        unit_peers=tuple(peers),
        gather_multiple_text=tuple(texts),
    )


def decision_fields(problem: Problem, pod_node: list[IntArray]) -> dict[str, Any]:
    """The Decision's `topology_assignments` (Kueue's, when a KueueBlock is in play)."""
    block = problem.block(KueueBlock)
    if block is None:
        return {}
    return {"topology_assignments": tuple(assignments(problem, block.unit_kueue, pod_node))}


FEATURE = Feature(
    name="topology",
    plugins=(Plugin.NETWORK_TOPOLOGY, Plugin.JOB_AFFINITY, Plugin.NETWORK_TOPOLOGY_AWARE),
    always=True,  # Kueue TAS, the Workload API's topology and HyperNodes: always (verify too)
    compile=_compile,
    facts=(SELECTOR_FACT,),
    type_key=lambda pod: (selector_of(pod), pod_set_key(pod)),
    call_type_key=_call_type_key,
    greedy=GreedySteps(
        unit_placers=(place_subgroup_unit, place_hypernode_unit, place_topology_unit)
    ),
    cpsat=CpsatSteps(
        modules=(cpsat.build, hypernode_cpsat.build),
        class_splits=(cpsat.class_split, hypernode_cpsat.class_split),
        unsupported=(cpsat.unsupported,),
        postprocess=(cpsat.layout_ranks,),
    ),
    explain=ExplainSteps(bounds=(one_domain_bound,)),
    decide=DecideSteps(decision=decision_fields),
)
