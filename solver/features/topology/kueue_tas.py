"""Kueue's `findTopologyAssignment` (kubernetes-sigs/kueue `pkg/cache/scheduler/
tas_flavor_snapshot.go` at ff69552e79ad, `reference/godel_kueue.md` §2.5), step for step, on
arrays: the greedy engine's Kueue placer and the reference the table tests check.

Feature gates as in that Kueue version's defaults: `TASProfileMixed` on (BestFit for
required and preferred, LeastFreeCapacity for unconstrained), `TASBalancedPlacement` and
`TASRespectNodeAffinityPreferred` off. Leader/worker pod-set groups and multi-layer slices
are not modelled (the compile step refuses them with a reason).

A tree level l has domains 0..D_l-1 numbered in the order of their full level-value path
(`KueueTree`), so Kueue's last tie-break, `compareDomainLevelValues`, is the domain id.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solver.problem import IntArray

__all__ = ["KueueTree", "TasRequest", "find_topology_assignment"]


@dataclass(frozen=True, eq=False)
class KueueTree:
    """A Kueue Topology over one flavor's node pool."""

    name: str  # the Topology's name (Kueue's messages quote it)
    levels: tuple[str, ...]  # node labels, coarsest first
    paths: tuple[tuple[tuple[str, ...], ...], ...]  # [L][D_l] level values from the top
    parent: tuple[IntArray, ...]  # [L][D_l] parent's id on level l-1 (level 0: -1)
    node_leaf: IntArray  # [N] leaf (lowest-level domain) of each node; -1: not in the pool

    @property
    def lowest(self) -> int:
        return len(self.levels) - 1

    def children(self, level: int) -> list[list[int]]:
        """Per domain of `level`, its children on level + 1, in id order."""
        out: list[list[int]] = [[] for _ in self.paths[level]]
        for child, p in enumerate(self.parent[level + 1].tolist()):
            out[p].append(child)
        return out

    def node_domain(self, level: int) -> IntArray:
        """[N] domain of each node on `level` (-1 outside the pool)."""
        row = self.node_leaf.copy()
        for lv in range(self.lowest, level, -1):
            row = np.where(row >= 0, self.parent[lv][np.maximum(row, 0)], -1)
        return row


@dataclass(frozen=True)
class TasRequest:
    count: int  # pods of the pod set
    level: int  # the requested level (required / preferred; top for slice-only)
    slice_level: int  # lowest level unless slices are requested
    slice_size: int  # 1 unless slices are requested
    required: bool
    unconstrained: bool  # LeastFreeCapacity (TASProfileMixed), no level climbing


class _State:
    """Per-level `podCount` and `sliceCount` (Kueue's `domainState`), and the request."""

    def __init__(self, tree: KueueTree, leaf_pods: IntArray, req: TasRequest) -> None:
        self.tree, self.req = tree, req
        self.kids = [tree.children(lv) for lv in range(tree.lowest)]
        n = tree.lowest + 1
        self.pods: list[IntArray] = [np.zeros(0, dtype=np.int64)] * n
        self.slices: list[IntArray] = [np.zeros(0, dtype=np.int64)] * n
        self.pods[-1] = leaf_pods.astype(np.int64).copy()
        for lv in range(tree.lowest - 1, -1, -1):  # fillInCounts: parents sum children
            self.pods[lv] = np.bincount(
                tree.parent[lv + 1], weights=self.pods[lv + 1], minlength=len(tree.paths[lv])
            ).astype(np.int64)
        s = req.slice_level
        for lv in range(n):
            self.slices[lv] = np.zeros_like(self.pods[lv])
        self.slices[s] = self.pods[s] // req.slice_size
        for lv in range(s - 1, -1, -1):
            self.slices[lv] = np.bincount(
                tree.parent[lv + 1], weights=self.slices[lv + 1], minlength=len(tree.paths[lv])
            ).astype(np.int64)

    def sorted(self, level: int, domains: list[int]) -> list[int]:
        """`sortedDomains`: BestFit slices desc, LeastFreeCapacity slices asc; then pods
        asc; then level values (= id)."""
        sign = 1 if self.req.unconstrained else -1
        sl, pods = self.slices[level], self.pods[level]
        return sorted(domains, key=lambda d: (sign * int(sl[d]), int(pods[d]), d))

    def best_fit(self, counts: IntArray, domains: list[int], needed: int) -> int:
        """`findBestFitDomainBy`: the first domain with the smallest count >= needed, else
        the first domain."""
        best, best_count = domains[0], None
        for d in domains:
            c = int(counts[d])
            if c >= needed and (best_count is None or c < best_count):
                best, best_count = d, c
        return best

    def update_counts(
        self, level: int, domains: list[int], count: int, size: int, slices: bool
    ) -> list[int] | None:
        """`updateCountsToMinimumGeneric` without leaders: fill in order, the tightest
        fitting domain for the remainder; sets the chosen domains' pod counts."""
        best_fit = not self.req.unconstrained
        pods, sl = self.pods[level], self.slices[level]
        remaining = count // size if slices else count
        out: list[int] = []
        for i, d in enumerate(domains):
            have = sl if slices else pods
            if best_fit and have[d] >= remaining:
                d = self.best_fit(have, domains[i:], remaining)
            if have[d] >= remaining:
                if slices:
                    pods[d], sl[d] = remaining * size, remaining
                else:
                    pods[d] = remaining
                out.append(d)
                return out
            if slices:
                pods[d] = sl[d] * size
            remaining -= int(have[d])
            out.append(d)
        return None

    def not_fit(self, fit: int, total: int) -> str:
        unit = "slice" if self.req.slice_size > 1 else "pod"
        if fit <= 0:
            return f"topology {self.tree.name!r} doesn't allow to fit any of {total} {unit}(s)"
        return f"topology {self.tree.name!r} allows to fit only {fit} out of {total} {unit}(s)"

    def fit_level(self, level: int) -> tuple[int, list[int]] | str:
        """`findLevelWithFitDomains`: the level and the domains that hold the pod set."""
        req = self.req
        domains = self.sorted(level, list(range(len(self.tree.paths[level]))))
        if not domains:
            return f"no topology domains at level: {self.tree.levels[level]}"
        sl = self.slices[level]
        needed = req.count // req.slice_size
        top = domains[0]
        if not req.unconstrained and sl[top] >= needed:
            top = self.best_fit(sl, domains, needed)  # optimize the potentially last domain
        if req.unconstrained:  # LeastFreeCapacity: the first domain that fits
            for d in domains:
                if sl[d] >= needed:
                    return level, [d]
        if sl[top] >= needed:
            return level, [top]
        if req.required:
            return self.not_fit(int(sl[top]), needed)
        if level > 0 and not req.unconstrained:
            return self.fit_level(level - 1)
        chosen: list[int] = []
        remaining = needed
        for i, d in enumerate(domains):
            if remaining <= 0:
                break
            if not req.unconstrained and sl[d] >= remaining:
                d = self.best_fit(sl, domains[i:], remaining)  # optimize the last domain
            chosen.append(d)
            remaining -= int(sl[d])
        if remaining > 0:
            return self.not_fit(needed - remaining, needed)
        return level, chosen


def find_topology_assignment(
    tree: KueueTree, leaf_pods: IntArray, req: TasRequest
) -> dict[int, int] | str:
    """Pods per leaf domain for the pod set (Kueue's TopologyAssignment), or why it does not
    fit (Kueue's message). `leaf_pods`: [D_lowest] pods of the set each leaf holds now."""
    if req.count <= 0:
        return {}
    state = _State(tree, leaf_pods, req)
    found = state.fit_level(req.level)
    if isinstance(found, str):
        return found
    level, chosen = found
    current = state.update_counts(level, chosen, req.count, req.slice_size, True)
    while current is not None and level < min(tree.lowest, req.slice_level):
        # above the slice level: the children of every chosen domain pooled and re-sorted
        pooled = [c for d in current for c in state.kids[level][d]]
        level += 1
        current = state.update_counts(
            level, state.sorted(level, pooled), req.count, req.slice_size, True
        )
    while current is not None and level < tree.lowest:
        # at and below the slice level: each domain spreads its own pods over its children
        spread: list[int] = []
        for d in current:
            kids = state.sorted(level + 1, state.kids[level][d])
            got = state.update_counts(level + 1, kids, int(state.pods[level][d]), 1, False)
            if got is None:
                current = None
                break
            spread.extend(got)
        else:
            current = spread
        level += 1
    if current is None:
        return state.not_fit(0, req.count // req.slice_size)
    leaf = state.pods[tree.lowest]
    return {d: int(leaf[d]) for d in sorted(current) if leaf[d] > 0}
