"""Volcano network-topology-aware scheduling on HyperNode trees (`reference/volcano.md` §4).

A job (PodGroup, or Volcano Job through its PodGroup) with `spec.networkTopology`:

* **limit** — `highestTierAllowed`, else the tier of the HyperNodes whose `tierName` is
  `highestTierName`. As Volcano's session does (`adjustNetworkTopologySpec`): `soft`
  becomes `hard` with the limit = the virtual root's tier (never blocks, still searches the
  lowest tier first); a hard spec with no limit, or a name no HyperNode carries, leaves the
  job unconstrained (a note says so).
* **hard rule** — every new pod inside one HyperNode of tier <= limit: the topology core's
  one-domain rule with `top_within(limit)` as node domains; nodes in no such HyperNode are
  not eligible (their own counted reason).
* **running pods** — `recoverAllocatedHyperNode`: the lowest HyperNode holding the job's
  running pods; the search root is its ancestor at the highest tier <= limit
  (`getHighestAllowedHyperNode`) and the job's new pods stay inside it. When even that
  HyperNode's tier is above the limit, the job is not placed (upstream: `allocated hyperNode
  tier is greater than highest allowed tier`).
* **scores** (`network-topology-aware` listed in the conf): arguments `weight`,
  `hypernode.binpack.cpu|memory|resources|resources.<name>`,
  `hypernode.binpack.normal-pod.enable|fading`; pods of jobs without a network topology get
  the tier-faded HyperNode bin-packing node score here; the HyperNode and LCA node scores
  act inside the greedy search (`hypernode_greedy.py`).

Upstream enforces the hard rule only through the plugin's gradient callbacks (without the
plugin listed a hard job is placed anywhere); gangplan always enforces it: it is the job's
own API, not a plugin preference.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solver.config import Plugin
from solver.features._base import CompileContext
from solver.features.topology.hypernode.block import HyperNodeBlock, HyperNodePlan, NodeScoreArgs
from solver.features.topology.hypernode.subgroup import compile_subgroups
from solver.features.topology.hypernode.tree import HyperNodeTree, hypernode_tree_of
from solver.model import Gang
from solver.problem import FloatArray, IntArray

__all__ = ["PLUGIN", "HyperNodeUnits", "compile_hypernode", "hypernode_args"]

PLUGIN = Plugin.NETWORK_TOPOLOGY_AWARE
REASON_TIER = "node(s) are in no HyperNode of tier <= {limit}"
REASON_CONFLICT = (
    "PodGroup {gang} has a Volcano networkTopology and another topology dialect (a Koordinator "
    "network-topology-spec or Godel job affinity): the two rules conflict; keep one"
)
REASON_ALLOCATED = "node(s) are outside HyperNode {name}, which holds the job's running pods"

HyperNodeUnits = dict[int, tuple[IntArray, tuple[str, ...]]]
"""unit -> (node domain [N], domain names): the one-domain rule for the topology core."""


def _get_int(args: dict[str, Any], key: str, default: int) -> int:
    """`Arguments.GetInt`: a non-integer value is ignored; a negative one means the default."""
    value = args.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        return default
    return default if value < 0 else value


def hypernode_args(
    args: dict[str, Any], resources: tuple[str, ...], enabled: bool
) -> NodeScoreArgs:
    """The plugin's arguments over the Problem's resource axis (`getPriorityWeight`)."""
    listed = {r.strip() for r in str(args.get("hypernode.binpack.resources") or "").split(",")}
    binpack = []
    for r in resources:
        if r == "cpu":
            binpack.append(_get_int(args, "hypernode.binpack.cpu", 1))
        elif r == "memory":
            binpack.append(_get_int(args, "hypernode.binpack.memory", 1))
        elif r in listed and r:
            binpack.append(_get_int(args, f"hypernode.binpack.resources.{r}", 1))
        else:
            binpack.append(0)
    normal = args.get("hypernode.binpack.normal-pod.enable", True)
    fading = args.get("hypernode.binpack.normal-pod.fading", 0.8)
    fading = (
        float(fading) if isinstance(fading, int | float) and not isinstance(fading, bool) else 0.8
    )
    return NodeScoreArgs(
        enabled=enabled,
        weight=_get_int(args, "weight", 1),
        binpack=tuple(binpack),
        normal_pod=normal if isinstance(normal, bool) else True,
        fading=0.8 if fading < 0 else fading,
    )


def _limit(gang: Gang, tree: HyperNodeTree, notes: list[str]) -> int | None:
    spec = gang.network_topology
    if spec is None or spec.mode == "soft":  # (None: a subGroupPolicy job, searched as soft)
        return tree.max_tier
    if spec.highest_tier_allowed is not None:
        return spec.highest_tier_allowed
    if spec.highest_tier_name:
        tier = tree.tier_of_name(spec.highest_tier_name)
        if tier is None:
            notes.append(
                f"PodGroup {gang.id}: networkTopology highestTierName {spec.highest_tier_name!r} "
                "is the tierName of no HyperNode; the job is unconstrained, as in Volcano"
            )
        return tier if tier is not None or not gang.sub_group_policy else tree.max_tier
    if gang.sub_group_policy:
        return tree.max_tier
    notes.append(
        f"PodGroup {gang.id}: networkTopology mode hard without highestTierAllowed or "
        "highestTierName; the job is unconstrained, as in Volcano"
    )
    return None


def _min_resources(gang: Gang, resources: tuple[str, ...]) -> tuple[IntArray, bool]:
    out = np.zeros(len(resources), dtype=np.int64)
    unknown = False
    for name, value in gang.min_resources.items():
        if name in resources:
            out[resources.index(name)] = value
        elif value > 0 and name != "pods":
            unknown = True
    return out, unknown


def _plan(
    ctx: CompileContext, tree: HyperNodeTree, gang: Gang, limit: int, types: list[int]
) -> tuple[HyperNodePlan, IntArray]:
    rows = ctx.snapshot.rows_of_gang(gang.id)
    nodes = ctx.snapshot.running.node[rows] if rows.size else np.zeros(0, dtype=np.int64)
    nodes = nodes[nodes >= 0]
    allocated = -1
    for h in np.unique(tree.lowest[nodes]).tolist():
        allocated = tree.lca(allocated, int(h))
    domain = tree.top_within(limit)
    ctx.restrict(types, domain >= 0, REASON_TIER.format(limit=limit))
    root = tree.root
    if allocated >= 0:
        allowed = [h for h in _until_above(tree, allocated, limit)]
        root = allowed[-1] if allowed else -1
        if root < 0:
            for g in {ctx.type_gang[t] for t in types}:
                ctx.block_gang(
                    g,
                    f"gang {gang.id}: its running pods are in HyperNode {tree.names[allocated]} "
                    f"of tier {int(tree.tier[allocated])}, above highest allowed tier {limit}",
                )
        else:
            name = tree.names[root]
            ctx.restrict(types, tree.covers[root], REASON_ALLOCATED.format(name=name))
    minimum, unknown = _min_resources(gang, ctx.resources)
    pending = sum(len(ctx.type_pods[t]) for t in types)
    plan = HyperNodePlan(
        gang=gang.id,
        limit=limit,
        soft=gang.network_topology is None or gang.network_topology.mode == "soft",
        allocated=allocated,
        search_root=root,
        min_resources=minimum,
        min_unknown=unknown,
        task_count=pending + int(nodes.size),
        running_nodes=nodes.astype(np.int64),
        subgroups=compile_subgroups(ctx, tree, gang, types, limit),
        min_sub_groups=tuple(p.min_sub_groups for p in gang.sub_group_policy),
    )
    return plan, domain


def _until_above(tree: HyperNodeTree, h: int, limit: int) -> list[int]:
    """h and its ancestors up to (not past) the first of tier > limit."""
    out = []
    for a in tree.ancestors(h):
        if tree.tier[a] > limit:
            break
        out.append(a)
    return out


def _usage(ctx: CompileContext, tree: HyperNodeTree) -> tuple[FloatArray, FloatArray]:
    """[H+1, R] allocatable and used (running pods) of every HyperNode, once per call."""
    cover = tree.covers.astype(np.float64)
    capacity = ctx.nodes.capacity(ctx.resources).astype(np.float64)
    used = ctx.snapshot.used(ctx.resources).astype(np.float64)
    return cover @ capacity, cover @ used


def _normal_pod_row(
    tree: HyperNodeTree, args: NodeScoreArgs, ctx: CompileContext, t: int
) -> FloatArray:
    """`batchNodeOrderFnForNormalPods`: Σ_tier fading^(tier−1)·binpack(node's HyperNode at that
    tier; 1 without one) / Σ fading^(tier−1), × 100 × weight."""
    demand = ctx.type_demand[t]
    weights = np.array(args.binpack, dtype=np.float64) * (demand > 0)
    n = len(ctx.nodes)
    if weights.sum() <= 0:
        return np.zeros(n)
    alloc_h, used_h = ctx.memo(("hypernode usage",), lambda: _usage(ctx, tree))
    over = ((used_h + demand > alloc_h) & (weights > 0)).any(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(alloc_h > 0, (used_h + demand) / alloc_h, 0.0)
    score_h = np.where(over, 0.0, (ratio * weights).sum(axis=1) / weights.sum())
    total = np.zeros(n)
    weight_sum = 0.0
    for tier in range(tree.min_tier, tree.max_tier + 1):
        w = args.fading ** (tier - 1) if tier >= 1 or args.fading else 1.0
        weight_sum += w
        holders = np.flatnonzero(tree.tier == tier)
        row = np.ones(n)
        for h in holders[::-1].tolist():  # the first by name wins (upstream: any)
            row = np.where(tree.covers[h], score_h[h], row)
        total += w * row
    if weight_sum <= 0:
        return np.zeros(n)
    out: FloatArray = total / weight_sum * 100 * args.weight
    return out


def compile_hypernode(ctx: CompileContext, taken: set[int] | None = None) -> HyperNodeUnits:
    """Plans for the jobs with a network topology; the one-domain rules for the core.
    A unit another dialect already governs (`taken`: a Koordinator gather, a Godel plan)
    and that also has a networkTopology is not placed: the two rules conflict."""
    topology = ctx.snapshot.topology
    hypernodes = topology.hypernodes if topology is not None else ()
    gangs = ctx.workload.gangs
    plan = ctx.gangs
    with_topology = [
        g
        for g, gid in enumerate(plan.gang_ids)
        if gangs[gid].network_topology or gangs[gid].sub_group_policy
    ]
    scored = ctx.conf.enabled(PLUGIN)
    if not with_topology and not (scored and hypernodes):
        return {}
    tree = hypernode_tree_of(ctx.nodes, hypernodes)
    ctx.notes.extend(tree.notes)
    args = hypernode_args(ctx.conf.arguments(PLUGIN), ctx.resources, scored)
    out: HyperNodeUnits = {}
    plans: list[HyperNodePlan | None] = [None] * len(plan.unit_ids)
    unit_gangs = plan.unit_gangs()
    for u, members in enumerate(unit_gangs):
        own = [g for g in members if g in with_topology]
        if not own:
            continue
        gang = gangs[plan.gang_ids[own[0]]]
        if taken and u in taken:
            for g in members:
                ctx.block_gang(g, REASON_CONFLICT.format(gang=gang.id))
            continue
        limit = _limit(gang, tree, ctx.notes)
        if limit is None:
            continue
        types = [t for g in members for t in ctx.types_of(g)]
        plans[u], domain = _plan(ctx, tree, gang, limit, types)
        out[u] = (domain, tree.names)
    if scored and args.normal_pod and hypernodes:
        planned = {g for u in out for g in unit_gangs[u]}
        for t in range(ctx.num_types):
            gid = plan.gang_ids[ctx.type_gang[t]]
            if (
                ctx.type_gang[t] in planned
                or gangs[gid].network_topology
                or gangs[gid].sub_group_policy
            ):
                continue
            row = _normal_pod_row(tree, args, ctx, t)
            ctx.score([t], row, PLUGIN)
    if out or scored:
        ctx.add_block(
            HyperNodeBlock(
                tree=tree,
                unit_plan=tuple(plans),
                args=args,
                at_tier=tree.at_tier,
                tiers_listed=tree.tier_list,
            )
        )
    return out
