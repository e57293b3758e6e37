"""Volcano's allocate for a job with `subGroupPolicy`, for the greedy engine.

As `allocate.go` `allocateForJob` / `allocateForSubJob` run it (HEAD `ed72c7c8`):

1. the job's HyperNode gradients as for any HyperNode job (`hypernode_greedy`), from the
   search root, tier <= the job's limit, the minResources pre-filter before allocation;
2. in every HyperNode h of a gradient, the sub-groups one after another (upstream: the
   ones `minSubGroups` requires first, then `SubJobOrderFn`; gangplan: by policy and
   label values, the default sub-group last), each by its own search inside h: gradients
   from h at tier <= the sub-group's limit (h itself without one), a dry run of its pending
   pods in every HyperNode of the lowest gradient (else of its first `subGroupSize` pods),
   the best by the HyperNode score; a placed sub-group's pods hold their room for the next
   sub-group's search. The job is ready with `minMember` pods and `minSubGroups` placed
   sub-groups per policy; upstream then places the other sub-groups in later rounds, inside
   the job's HyperNode: gangplan places them in the same pass;
3. the first gradient where some h makes the job ready wins, among them the highest sum of
   the sub-groups' HyperNode scores (`selectBestHyperNodeForJob`; first by name on ties);
4. sub-groups left out of it follow, each by its own search inside the ancestor
   of the job's HyperNode at the job's highest allowed tier (upstream's later rounds).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solver.features.topology.hypernode.block import HyperNodeBlock
from solver.features.topology.hypernode.greedy import (
    HyperNodeSearch,
    allowed_root,
    commit_placements,
    dry_run,
    gradients,
    hypernode_scores,
    search_of,
    search_start,
)
from solver.features.topology.hypernode.subgroup import SubGroupPlan
from solver.features.topology.koordinator.gather import unit_sequence
from solver.problem import GreedyState, IntArray, Problem

__all__ = ["place_subgroup_unit"]


@dataclass(frozen=True)
class _Trial:
    placed: list[tuple[int, int]]  # (sequence index, node)
    score: float


def _place_subgroup(
    search: HyperNodeSearch, h: int, sub: SubGroupPlan, seq_t: IntArray, idx: IntArray
) -> tuple[list[tuple[int, int]], float] | None:
    """`allocateForSubJob` inside job HyperNode h: (sequence index, node) and its score."""
    tree = search.tree
    counts = [idx.size] + ([sub.size] if sub.size < idx.size else [])
    groups = [[h]] if sub.limit is None else gradients(tree, h, sub.limit, None)
    sub_t = seq_t[idx]
    for group in groups:
        if sub.domain is not None:  # inside the HyperNode holding its running members
            group = [h2 for h2 in group if bool(np.all(sub.domain[tree.covers[h2]] >= 0))]
        for count in counts:
            found: dict[int, list[tuple[int, int]]] = {}
            for h2 in group:
                run = dry_run(search, h2, sub_t, count, -1)
                if run is not None:
                    found[h2] = [(int(idx[i]), node) for i, node in run[0]]
            if found:
                names = sorted(found, key=lambda x: tree.names[x])
                scores = hypernode_scores(search, names)
                best = int(np.argmax(scores))
                return found[names[best]], float(scores[best])
    return None


def _try_job_in(
    search: HyperNodeSearch,
    h: int,
    seq_t: IntArray,
    members: list[IntArray],
    need: int,
) -> _Trial | None:
    """The job's sub-groups one by one inside h; None unless the job gets ready."""
    plan = search.plan
    state, problem = search.state, search.problem
    saved_free = state.free.copy()
    saved = state.tracker.checkpoint()
    placed: list[tuple[int, int]] = []
    ready = [0] * len(plan.min_sub_groups)
    score = 0.0

    def job_ready() -> bool:
        return len(placed) >= need and all(
            r >= m for r, m in zip(ready, plan.min_sub_groups, strict=True)
        )

    for sub, idx in zip(plan.subgroups, members, strict=True):
        if sub.size > idx.size:
            continue  # never ready (SubJobReady): upstream allocates none of it
        outcome = _place_subgroup(search, h, sub, seq_t, idx)
        if outcome is None:
            continue
        runs, sub_score = outcome
        for k, node in runs:
            t = int(seq_t[k])
            state.free[node] -= problem.type_demand[t]
            if state.tracker.involved(t):
                state.tracker.place(t, node)
        placed.extend(runs)
        score += sub_score
        if sub.policy >= 0:
            ready[sub.policy] += 1
    state.free[:] = saved_free
    state.tracker.restore(saved)
    return _Trial(placed, score) if job_ready() else None


def _later_subgroups(
    search: HyperNodeSearch, root: int, seq_t: IntArray, seq_j: IntArray, members: list[IntArray]
) -> None:
    """Sub-groups left out of the job's HyperNode: as upstream's later rounds, each by its own
    search inside the allocated HyperNode's ancestor at the job's highest allowed tier."""
    placed = search.state.pod_node
    for sub, idx in zip(search.plan.subgroups, members, strict=True):
        if idx.size == 0 or sub.size > idx.size or root < 0:
            continue
        if any(placed[int(seq_t[k])][int(seq_j[k])] >= 0 for k in idx.tolist()):
            continue  # placed already (its own HyperNode holds it)
        outcome = _place_subgroup(search, root, sub, seq_t, idx)
        if outcome is not None:
            commit_placements(search, seq_t, seq_j, outcome[0])


def place_subgroup_unit(problem: Problem, u: int, gangs: list[int], state: GreedyState) -> bool:
    """Place unit u by the sub-group search if its job has a subGroupPolicy (True), else False."""
    block = problem.block(HyperNodeBlock)
    plan = block.plan(u) if block is not None else None
    if block is None or plan is None or block.tree is None or not plan.subgroups or not gangs:
        return False
    seq_t, seq_j = unit_sequence(problem, gangs)
    if seq_t.size == 0:
        return True
    search = search_of(problem, block, plan, state, seq_t)
    tree = block.tree
    need = max(int(sum(int(problem.gang_need[g]) for g in gangs)), 1)
    members = [np.flatnonzero(np.isin(seq_t, sub.types)) for sub in plan.subgroups]
    root, keep = search_start(search, plan.allocated)
    why = f"no HyperNode of tier <= {plan.limit} holds the job's running pods"
    if root >= 0:
        why = (
            f"no HyperNode of tier <= {plan.limit} holds {need} pod(s) of the job with "
            f"minSubGroups {list(plan.min_sub_groups)} ready sub-group(s)"
        )
        for group in gradients(tree, root, plan.limit, keep):
            trials = {h: t for h in group if (t := _try_job_in(search, h, seq_t, members, need))}
            if not trials:
                continue
            best = max(sorted(trials, key=lambda h: tree.names[h]), key=lambda h: trials[h].score)
            refused = commit_placements(search, seq_t, seq_j, trials[best].placed)
            if refused is None:
                _later_subgroups(
                    search, allowed_root(tree, best, plan.limit), seq_t, seq_j, members
                )
                return True
            why = refused
            break
    for g in gangs:
        state.gang_reason[g] = f"gang {problem.gang_ids[g]}: {why}"
    return True
