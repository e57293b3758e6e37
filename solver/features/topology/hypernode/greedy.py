"""Volcano's allocate for a job with a HyperNode topology, for the greedy engine.

As `allocate.go` `allocateForJob` / `allocateResourcesForTasks` and the plugin's
`hyperNodeGradientFn` run it (HEAD `ed72c7c8`):

1. **Gradients**: breadth-first from the search root (the virtual root; with running pods,
   the ancestor of their HyperNode at the highest tier <= limit), the HyperNodes of tier <=
   limit, grouped by tier ascending. Before the job has an allocated HyperNode a candidate
   is kept only if its idle resources (at the start of the cycle, as the plugin's cache
   holds them) cover the PodGroup's `minResources`.
2. **Dry run** in every HyperNode of the lowest gradient: the pending pods in rank order,
   each on the best node of the HyperNode where it fits (Σ of the node scores, plus the
   plugin's LCA score: 0 until the dry run has an allocated HyperNode, then
   (maxTier − tier(LCA(node's HyperNode, allocated))) / (maxTier − minTier), ties at the top
   + the job's pods already in the node's HyperNode / its pods; × 100 × weight), until the
   job is ready (its minMember share). The first gradient with a successful dry run wins.
3. **Best HyperNode** among them: the plugin's score (weighted bin-packing
   (used + the job's requests) / allocatable, 0 on overflow; ties at the top + the job's
   pods inside / its pods). Upstream picks at random among equal scores (a Go map and
   `rand.Intn`); gangplan takes the first by name, and the lowest node index among equal
   nodes.
4. **Later members** (pods beyond minMember) are placed one per round as upstream pushes
   the job back: the same search, from the allocated HyperNode's allowed ancestor, without
   the pre-filter.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solver.features.topology.hypernode.block import HyperNodeBlock, HyperNodePlan
from solver.features.topology.hypernode.tree import HyperNodeTree
from solver.features.topology.koordinator.gather import unit_sequence
from solver.problem import BoolArray, FloatArray, GreedyState, IntArray, Problem, slots_of

__all__ = [
    "HyperNodeSearch",
    "allowed_root",
    "commit_placements",
    "dry_run",
    "gradients",
    "hypernode_scores",
    "place_hypernode_unit",
    "search_of",
    "search_start",
]


@dataclass
class HyperNodeSearch:
    """One job's search state across rounds."""

    problem: Problem
    block: HyperNodeBlock
    tree: HyperNodeTree
    plan: HyperNodePlan
    state: GreedyState
    request: IntArray  # [R] the job's pending requests (the HyperNode score's "request")
    node_tasks: IntArray  # [N] the job's pods per node (running + committed)


def gradients(
    tree: HyperNodeTree, root: int, limit: int, keep: BoolArray | None
) -> list[list[int]]:
    """`hyperNodeGradientFn`: BFS from `root` (children by name), tier <= limit and `keep`,
    grouped by tier ascending."""
    queue, seen = [root], {root}
    by_tier: dict[int, list[int]] = {}
    while queue:
        h = queue.pop(0)
        if tree.tier[h] <= limit and (keep is None or keep[h]):
            by_tier.setdefault(int(tree.tier[h]), []).append(h)
        for c in tree.children(h):
            if c not in seen:
                seen.add(c)
                queue.append(c)
    return [by_tier[t] for t in sorted(by_tier)]


def allowed_root(tree: HyperNodeTree, allocated: int, limit: int) -> int:
    """`getHighestAllowedHyperNode`: the highest ancestor (or itself) of tier <= limit."""
    best = -1
    for a in tree.ancestors(allocated):
        if tree.tier[a] > limit:
            break
        best = a
    return best


def search_start(search: HyperNodeSearch, allocated: int) -> tuple[int, BoolArray | None]:
    """Where a round's search starts, and the minResources pre-filter before allocation."""
    plan, tree = search.plan, search.tree
    if allocated >= 0:
        return allowed_root(tree, allocated, plan.limit), None
    idle = tree.covers.astype(np.int64) @ np.maximum(search.problem.free, 0)
    keep = np.asarray((idle >= plan.min_resources).all(axis=1) & (not plan.min_unknown))
    return plan.search_root, keep


def search_of(
    problem: Problem,
    block: HyperNodeBlock,
    plan: HyperNodePlan,
    state: GreedyState,
    seq_t: IntArray,
) -> HyperNodeSearch:
    """A job's search over its pending pods `seq_t` (rank order)."""
    assert block.tree is not None
    node_tasks = np.zeros(problem.num_nodes, dtype=np.int64)
    np.add.at(node_tasks, plan.running_nodes, 1)
    request = problem.type_demand[seq_t].sum(axis=0)
    return HyperNodeSearch(problem, block, block.tree, plan, state, request, node_tasks)


def hypernode_scores(search: HyperNodeSearch, candidates: list[int]) -> FloatArray:
    """`HyperNodeOrderFn` over `candidates` (unscaled: × 100 × weight keeps the order)."""
    block, tree, problem = search.block, search.tree, search.problem
    if not block.args.enabled:
        return np.zeros(len(candidates))
    weights = np.array(block.args.binpack, dtype=np.float64) * (search.request > 0)
    cover = tree.covers[candidates].astype(np.float64)
    alloc = cover @ problem.capacity.astype(np.float64)
    used = cover @ (problem.capacity - search.state.free).astype(np.float64) + search.request
    over = ((used > alloc) & (weights > 0)).any(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(alloc > 0, used / alloc, 0.0)
    total = weights.sum()
    score = np.where(over | (total <= 0), 0.0, (ratio * weights).sum(axis=1) / max(total, 1))
    top = score >= score.max()
    if top.sum() > 1 and search.plan.task_count:
        inside = np.array([_tasks_in(search, h) for h in candidates], dtype=np.float64)
        score = score + np.where(top, inside / search.plan.task_count, 0.0)
    out: FloatArray = score * 100 * block.args.weight
    return out


def _tasks_in(search: HyperNodeSearch, h: int) -> int:
    """`FindJobTaskNumOfHyperNode`: the job's pods on nodes of HyperNode h."""
    nodes = search.tree.covers[h]
    return int(search.node_tasks[nodes].sum())


def _lca_scores(search: HyperNodeSearch, allocated: int) -> FloatArray:
    """[H+1] `networkTopologyAwareScore` of a node whose lowest-tier HyperNode is h."""
    tree = search.tree
    out = np.zeros(len(tree.names))
    if allocated < 0:
        return out
    low, high = tree.min_tier, tree.max_tier
    for h in range(len(tree.names)):
        if h == allocated:
            out[h] = 1.0
            continue
        tier = int(tree.tier[tree.lca(h, allocated)])
        if low == high:
            out[h] = 1.0
        elif low <= tier <= high:
            out[h] = (high - tier) / (high - low)
    return out


def dry_run(
    search: HyperNodeSearch, h: int, seq_t: IntArray, count: int, allocated: int
) -> tuple[list[tuple[int, int]], int] | None:
    """`allocateResourcesForTasks` in HyperNode h: (pod index, node) for the first `count`
    pods, and the dry run's allocated HyperNode; None when a pod finds no node."""
    problem, tree, state = search.problem, search.tree, search.state
    pool = np.flatnonzero(tree.covers[h])
    types = np.unique(seq_t[:count])
    for t in types.tolist():  # a quick bound: fewer slots than pods means the run fails
        if int(slots_of(problem, t, state.free, pool).sum()) < int((seq_t[:count] == t).sum()):
            return None
    free = state.free[pool].copy()
    leaf = tree.leaf[pool]
    leaf_tasks = np.bincount(
        leaf[leaf >= 0], weights=search.node_tasks[pool][leaf >= 0], minlength=len(tree.names)
    )
    scored = search.block.args.enabled
    scale = 100.0 * search.block.args.weight
    saved = state.tracker.checkpoint()
    chosen: list[tuple[int, int]] = []
    lca_row = _lca_scores(search, allocated) if scored else None
    # per type, over the pool: fits now, and the engine's node score (moves only where a
    # pod lands, as in `fill`)
    used = problem.capacity[pool] - free
    base = {t: problem.node_scores(t, used, pool) for t in types.tolist()}
    fits = {
        t: problem.eligible[t, pool] & (free >= problem.type_demand[t]).all(axis=1)
        for t in types.tolist()
    }
    for i in range(count):
        t = int(seq_t[i])
        allowed = fits[t]
        if state.tracker.involved(t):
            allowed = allowed & (state.tracker.verdict(t)[pool] == 0)
        within = np.flatnonzero(allowed)
        if within.size == 0:
            state.tracker.restore(saved)
            return None
        score = base[t][within]
        if scored and lca_row is not None and allocated >= 0:
            hn = leaf[within]
            extra = np.where(hn >= 0, lca_row[np.maximum(hn, 0)], 0.0)
            top = extra >= extra.max()
            if top.sum() > 1 and search.plan.task_count:
                inside = np.where(hn >= 0, leaf_tasks[np.maximum(hn, 0)], 0.0)
                extra = extra + np.where(top, inside / search.plan.task_count, 0.0)
            score = score + extra * scale
        best = int(within[int(np.argmax(score))])  # the first best: lowest node index
        node = int(pool[best])
        free[best] -= problem.type_demand[t]
        if leaf[best] >= 0:
            leaf_tasks[leaf[best]] += 1
        if state.tracker.involved(t):
            state.tracker.place(t, node)
        chosen.append((i, node))
        row = problem.capacity[node : node + 1] - free[best : best + 1]
        for u in base:
            fits[u][best] = bool(
                problem.eligible[u, node] and (free[best] >= problem.type_demand[u]).all()
            )
            base[u][best] = problem.node_scores(u, row, pool[best : best + 1])[0]
        if leaf[best] >= 0:
            moved = tree.lca(allocated, int(leaf[best]))
            if moved != allocated:
                allocated = moved
                lca_row = _lca_scores(search, allocated) if scored else None
    state.tracker.restore(saved)
    return chosen, allocated


def _round(
    search: HyperNodeSearch, seq_t: IntArray, count: int, allocated: int
) -> tuple[list[tuple[int, int]], int, int] | str:
    """One `allocateForJob`: (placements, best HyperNode, new allocated) or why none."""
    tree, plan = search.tree, search.plan
    root, keep = search_start(search, allocated)
    if root < 0:
        return f"no HyperNode of tier <= {plan.limit} holds the job's running pods"
    tried = 0
    for group in gradients(tree, root, plan.limit, keep):
        found: dict[int, tuple[list[tuple[int, int]], int]] = {}
        for h in group:
            tried += 1
            run = dry_run(search, h, seq_t, count, allocated)
            if run is not None:
                found[h] = run
        if not found:
            continue
        names = sorted(found, key=lambda h: tree.names[h])
        scores = hypernode_scores(search, names)
        best = names[int(np.argmax(scores))]  # the first by name among equal scores
        placed, _ = found[best]
        return placed, best, tree.lca(allocated, best)
    return (
        f"no HyperNode of tier <= {plan.limit} can hold {count} pod(s) of the job "
        f"({tried} HyperNode(s) tried"
        + (", minResources pre-filter applied" if keep is not None else "")
        + ")"
    )


def place_hypernode_unit(problem: Problem, u: int, gangs: list[int], state: GreedyState) -> bool:
    """Place unit u by Volcano's HyperNode search if it has a plan (True), else False."""
    block = problem.block(HyperNodeBlock)
    plan = block.plan(u) if block is not None else None
    if block is None or plan is None or block.tree is None or not gangs:
        return False
    seq_t, seq_j = unit_sequence(problem, gangs)
    if seq_t.size == 0:
        return True
    search = search_of(problem, block, plan, state, seq_t)
    need = max(int(sum(int(problem.gang_need[g]) for g in gangs)), 1)
    allocated = plan.allocated
    start = 0
    while start < seq_t.size:
        count = min(need if start == 0 else 1, int(seq_t.size) - start)
        outcome = _round(search, seq_t[start:], count, allocated)
        if isinstance(outcome, str):
            if start == 0:
                for g in gangs:
                    state.gang_reason[g] = f"gang {problem.gang_ids[g]}: {outcome}"
            else:
                for g in gangs:
                    state.gang_reason.setdefault(g, f"later member(s): {outcome}")
            return True
        placed, _, allocated = outcome
        refused = commit_placements(search, seq_t, seq_j, [(start + i, n) for i, n in placed])
        if refused:
            for g in gangs:
                if start == 0:
                    state.gang_reason[g] = f"gang {problem.gang_ids[g]}: {refused}"
                else:
                    state.gang_reason.setdefault(g, refused)
            return True
        start += count
    return True


def commit_placements(
    search: HyperNodeSearch, seq_t: IntArray, seq_j: IntArray, placed: list[tuple[int, int]]
) -> str | None:
    """Charge (sequence index, node) placements to the state; why not when the ledger
    (quotas) refuses them."""
    state, problem = search.state, search.problem
    batch: dict[int, list[tuple[int, int]]] = {}
    for k, node in placed:
        batch.setdefault(int(seq_t[k]), []).append((int(seq_j[k]), node))
    plan_nodes = {t: np.array([n for _, n in items]) for t, items in batch.items()}
    refused = state.ledger.admits(plan_nodes)
    if refused:
        return refused
    state.ledger.charge_plan(plan_nodes)
    for t, items in batch.items():
        for j, node in items:
            state.pod_node[t][j] = node
            state.free[node] -= problem.type_demand[t]
            search.node_tasks[node] += 1
            if state.tracker.involved(t):
                state.tracker.place(t, node)
    return None
