"""Kueue's `findTopologyAssignment` (kubernetes-sigs/kueue `pkg/cache/scheduler/
tas_flavor_snapshot.go` at ff69552e79ad, `reference/godel_kueue.md` §2.5), step for step, on
arrays: the greedy engine's Kueue placer and the reference the table tests check.

Feature gates as in that Kueue version's defaults: `TASProfileMixed` on (BestFit for
required and preferred, LeastFreeCapacity for unconstrained), `TASBalancedPlacement` and
`TASRespectNodeAffinityPreferred` off; multi-layer slices as with the alpha
`TASMultiLayerTopology` gate on (`TasRequest.size_at`: a child counts only whole inner slices
in its parent, `fillInCountsHelper`; below the first layer each level distributes slices of
its own size; `multiLayerNotFitMessage` when nothing fits).

A leader/worker pod-set group (`podset-group-name`) is one call with a leader of one pod
(`LeaderLeaves`): every domain also carries `leaderCount` (0/1: the leader fits) and
`podCountWithLeader` (workers beside the leader), and the search follows Kueue's leader
rules (`sortedDomainsWithLeader`, `prioritizeLeaderDomain`, `consumeWithLeadersGeneric`).
Without a leader those columns equal the plain ones and the search is the plain one.

A tree level l has domains 0..D_l-1 numbered in the order of their full level-value path
(`KueueTree`), so Kueue's last tie-break, `compareDomainLevelValues`, is the domain id.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solver.problem import IntArray

__all__ = ["KueueTree", "LeaderLeaves", "TasRequest", "TasResult", "find_topology_assignment"]


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
    size_at: tuple[tuple[int, int], ...] = ()  # multi-layer slices: (level, inner slice
    #   size) for the levels below the first layer (`buildSliceSizeAtLevel`)
    layers: tuple[tuple[int, int], ...] = ()  # multi-layer: every layer (level, size)


@dataclass(frozen=True)
class LeaderLeaves:
    """A group's leader over the lowest level: [D_lowest] 1 where the leader fits, and the
    workers each leaf holds beside it (`fillLeafCounts`)."""

    fits: IntArray
    workers_with_leader: IntArray


@dataclass(frozen=True)
class TasResult:
    workers: dict[int, int]  # leaf -> pods of the (worker) pod set
    leader: int = -1  # the leader's leaf; -1 without a leader


def _roll_up(tree: KueueTree, lv: int, child: IntArray, how: str) -> IntArray:
    """Children of level lv + 1 folded into their parents on level lv."""
    size = len(tree.paths[lv])
    if how == "sum":
        return np.bincount(tree.parent[lv + 1], weights=child, minlength=size).astype(np.int64)
    out = np.full(size, np.iinfo(np.int64).max if how == "min" else 0, dtype=np.int64)
    (np.minimum if how == "min" else np.maximum).at(out, tree.parent[lv + 1], child)
    return out


class _State:
    """Per-level `podCount`, `sliceCount`, `leaderCount`, `podCountWithLeader` and
    `sliceCountWithLeader` (Kueue's `domainState`), and the request."""

    def __init__(
        self, tree: KueueTree, leaf_pods: IntArray, req: TasRequest, leader: LeaderLeaves | None
    ) -> None:
        self.tree, self.req = tree, req
        self.leader_count = 1 if leader is not None else 0
        self.kids = [tree.children(lv) for lv in range(tree.lowest)]
        n, s = tree.lowest + 1, req.slice_level
        zero = np.zeros(0, dtype=np.int64)
        self.pods, self.slices = [zero] * n, [zero] * n
        self.leader, self.pods_wl, self.slices_wl = [zero] * n, [zero] * n, [zero] * n
        self.pods[-1] = leaf_pods.astype(np.int64).copy()
        self.leader[-1] = np.zeros_like(self.pods[-1])
        self.pods_wl[-1] = self.pods[-1].copy()
        if leader is not None:
            self.leader[-1] = leader.fits.astype(np.int64).copy()
            self.pods_wl[-1] = leader.workers_with_leader.astype(np.int64).copy()
        self.slices[-1] = np.zeros_like(self.pods[-1])
        self.slices_wl[-1] = np.zeros_like(self.pods[-1])
        if s == tree.lowest:
            self.slices[-1] = self.pods[-1] // req.slice_size
            self.slices_wl[-1] = self.pods_wl[-1] // req.slice_size
        for lv in range(tree.lowest - 1, -1, -1):  # fillInCountsHelper
            self._fill_parent(lv)

    def _fill_parent(self, lv: int) -> None:
        """A parent: pods summed; with a leader, the smallest penalty of the children that
        could host the leader (every child without a leader) subtracted."""
        tree, c = self.tree, lv + 1
        pods_c, pods_wl_c = self.pods[c], self.pods_wl[c]
        inner = dict(self.req.size_at).get(c)
        if inner:  # children count only whole inner slices (multi-layer)
            pods_c, pods_wl_c = pods_c // inner * inner, pods_wl_c // inner * inner
        self.pods[lv] = _roll_up(tree, lv, pods_c, "sum")
        slice_capacity = _roll_up(tree, lv, self.slices[c], "sum")
        hosts = self.leader[c] > 0 if self.leader_count else np.ones(len(pods_c), bool)
        big = np.iinfo(np.int64).max
        pod_gap = np.where(hosts, pods_c - pods_wl_c, big)
        slice_gap = np.where(hosts, self.slices[c] - self.slices_wl[c], big)
        any_host = _roll_up(tree, lv, hosts.astype(np.int64), "sum") > 0
        self.pods_wl[lv] = np.where(any_host, self.pods[lv] - _roll_up(tree, lv, pod_gap, "min"), 0)
        slices_wl = np.where(any_host, slice_capacity - _roll_up(tree, lv, slice_gap, "min"), 0)
        self.leader[lv] = _roll_up(tree, lv, self.leader[c], "max")
        if lv == self.req.slice_level:
            slice_capacity = self.pods[lv] // self.req.slice_size
            slices_wl = self.pods_wl[lv] // self.req.slice_size
        self.slices[lv], self.slices_wl[lv] = slice_capacity, slices_wl

    def sorted(self, level: int, domains: list[int]) -> list[int]:
        """`sortedDomains`: BestFit slices desc, LeastFreeCapacity slices asc; then pods
        asc; then level values (= id)."""
        sign = 1 if self.req.unconstrained else -1
        sl, pods = self.slices[level], self.pods[level]
        return sorted(domains, key=lambda d: (sign * int(sl[d]), int(pods[d]), d))

    def sorted_with_leader(self, level: int, domains: list[int]) -> list[int]:
        """`sortedDomainsWithLeader`: leader slots desc first, then as `sorted` on the
        with-leader counts."""
        sign = 1 if self.req.unconstrained else -1
        lead, sl, pods = self.leader[level], self.slices_wl[level], self.pods_wl[level]
        return sorted(domains, key=lambda d: (-int(lead[d]), sign * int(sl[d]), int(pods[d]), d))

    def best_fit(
        self, counts: IntArray, domains: list[int], needed: int, level: int = 0, leaders: int = 0
    ) -> int:
        """`findBestFitDomainBy`: the first domain with the smallest count >= needed (among
        those with room for the leaders), else the first domain."""
        best, best_count = domains[0], None
        for d in domains:
            if leaders and self.leader[level][d] < leaders:
                continue
            c = int(counts[d])
            if c >= needed and (best_count is None or c < best_count):
                best, best_count = d, c
        return best

    def prioritize(
        self, level: int, domains: list[int], count: int, size: int, slices: bool
    ) -> list[int]:
        """`prioritizeLeaderDomain`: the first domain that can host the leader without
        leaving less than the workers need moves to the front."""
        if not self.leader_count or len(domains) < 2:
            return domains
        have, with_leader = (
            (self.slices[level], self.slices_wl[level])
            if slices
            else (self.pods[level], self.pods_wl[level])
        )
        needed = count // size if slices else count
        available = sum(int(have[d]) for d in domains)
        for i, d in enumerate(domains):
            if self.leader[level][d] < self.leader_count:
                continue
            if available - int(have[d] - with_leader[d]) < needed:
                continue
            return domains if i == 0 else [d, *domains[:i], *domains[i + 1 :]]
        return domains

    def update_counts(
        self, level: int, domains: list[int], count: int, leaders: int, size: int, slices: bool
    ) -> list[int] | None:
        """`updateCountsToMinimumGeneric`: the leader first (`consumeWithLeadersGeneric`),
        then fill in order, the tightest fitting domain for the remainder; sets the chosen
        domains' pod and leader counts."""
        best_fit = not self.req.unconstrained
        pods, sl, lead = self.pods[level], self.slices[level], self.leader[level]
        have, with_leader = (sl, self.slices_wl[level]) if slices else (pods, self.pods_wl[level])
        unit = size if slices else 1
        domains = self.prioritize(level, domains, count, size, slices) if leaders else domains
        remaining = count // size if slices else count
        out: list[int] = []
        for i, d in enumerate(domains):
            if leaders > 0:
                if best_fit and with_leader[d] >= remaining and lead[d] >= leaders:
                    d = self.best_fit(with_leader, domains[i:], remaining, level, leaders)
                if with_leader[d] >= remaining and lead[d] >= leaders:
                    have[d], lead[d], pods[d] = remaining, leaders, remaining * unit
                    out.append(d)
                    return out
                took = min(int(with_leader[d]), remaining)
                with_leader[d] = took
                lead[d] = min(int(lead[d]), leaders)
                have[d], pods[d] = took, took * unit
                leaders -= int(lead[d])
                remaining -= took
                out.append(d)
                continue
            if best_fit and have[d] >= remaining:
                d = self.best_fit(have, domains[i:], remaining)
            lead[d] = 0
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

    def not_fit_layers(self, level: int) -> str:
        """`multiLayerNotFitMessage`: per layer, the slices the best domain of `level` (the
        most slices, then the lowest id) holds against those needed."""
        tree, sl = self.tree, self.slices[level]
        out = f"topology {tree.name!r} doesn't allow to fit"
        if not len(sl):
            return out
        best = min(range(len(sl)), key=lambda d: (-int(sl[d]), d))
        for target, size in self.req.layers:
            ids = np.arange(len(tree.paths[target]))
            for lv in range(target, level, -1):  # each target domain's ancestor on `level`
                ids = tree.parent[lv][ids]
            fit = int((self.pods[target][ids == best] // size).sum())
            out += f"; {fit}/{self.req.count // size} slice(s) fit on level {tree.levels[target]}"
        return out

    def not_fit(self, fit: int, total: int, level: int = 0) -> str:
        if self.req.layers:
            return self.not_fit_layers(level)
        unit = "slice" if self.req.slice_size > 1 else "pod"
        if fit <= 0:
            return f"topology {self.tree.name!r} doesn't allow to fit any of {total} {unit}(s)"
        return f"topology {self.tree.name!r} allows to fit only {fit} out of {total} {unit}(s)"

    def fit_level(self, level: int) -> tuple[int, list[int]] | str:
        """`findLevelWithFitDomains`: the level and the domains that hold the pod set (and
        its leader)."""
        req, leaders = self.req, self.leader_count
        domains = self.sorted_with_leader(level, list(range(len(self.tree.paths[level]))))
        if not domains:
            return f"no topology domains at level: {self.tree.levels[level]}"
        sl, sl_wl, lead = self.slices[level], self.slices_wl[level], self.leader[level]
        needed = req.count // req.slice_size
        top = domains[0]
        if not req.unconstrained and sl_wl[top] >= needed and lead[top] >= leaders:
            top = self.best_fit(sl_wl, domains, needed, level, leaders)  # the last domain
        if req.unconstrained:  # LeastFreeCapacity: the first domain that fits
            for d in domains:
                if lead[d] >= leaders and (sl_wl[d] if leaders else sl[d]) >= needed:
                    return level, [d]
        if sl_wl[top] >= needed and lead[top] >= leaders:
            return level, [top]
        if req.required:
            return self.not_fit(int(sl[top]), needed, level)
        if level > 0 and not req.unconstrained:
            return self.fit_level(level - 1)
        return self._split(level, domains, needed)

    def _split(self, level: int, domains: list[int], needed: int) -> tuple[int, list[int]] | str:
        """The top level, nothing fits one domain: the leader's domain first, then the
        workers' in capacity order."""
        req, best_fit = self.req, not self.req.unconstrained
        sl, sl_wl, lead = self.slices[level], self.slices_wl[level], self.leader[level]
        domains = self.prioritize(level, domains, req.count, req.slice_size, True)
        chosen: list[int] = []
        remaining, leaders, idx = needed, self.leader_count, 0
        while leaders > 0 and idx < len(domains) and lead[domains[idx]] > 0:
            d = domains[idx]
            if best_fit and sl_wl[d] >= remaining:
                d = self.best_fit(sl_wl, domains[idx:], remaining, level, leaders)
            chosen.append(d)
            leaders -= int(lead[d])
            remaining -= int(sl_wl[d])
            idx += 1
        if leaders > 0:
            return self.not_fit(self.leader_count - leaders, needed, level)
        rest = self.sorted(level, domains[idx:])
        for i, d in enumerate(rest):
            if remaining <= 0:
                break
            if best_fit and sl[d] >= remaining:
                d = self.best_fit(sl, rest[i:], remaining)  # optimize the last domain
            chosen.append(d)
            remaining -= int(sl[d])
        if remaining > 0:
            return self.not_fit(needed - remaining, needed, level)
        return level, chosen


def find_topology_assignment(
    tree: KueueTree, leaf_pods: IntArray, req: TasRequest, leader: LeaderLeaves | None = None
) -> TasResult | str:
    """Pods per leaf domain for the pod set (Kueue's TopologyAssignment) and its leader's
    leaf, or why it does not fit (Kueue's message). `leaf_pods`: [D_lowest] pods of the set
    each leaf holds now."""
    if req.count <= 0 and leader is None:
        return TasResult({})
    state = _State(tree, leaf_pods, req, leader)
    found = state.fit_level(req.level)
    if isinstance(found, str):
        return found
    level, chosen = found
    leaders = state.leader_count
    current = state.update_counts(level, chosen, req.count, leaders, req.slice_size, True)
    while current is not None and level < min(tree.lowest, req.slice_level):
        # above the slice level: the children of every chosen domain pooled and re-sorted
        pooled = [c for d in current for c in state.kids[level][d]]
        level += 1
        current = state.update_counts(
            level, state.sorted(level, pooled), req.count, leaders, req.slice_size, True
        )
    while current is not None and level < tree.lowest:
        # at and below the slice level: each domain spreads its own pods over its children
        spread: list[int] = []
        size = dict(req.size_at).get(level + 1, 1) if level >= req.slice_level else req.slice_size
        for d in current:
            kids = state.sorted(level + 1, state.kids[level][d])
            if size > 1:  # an inner layer: slices of its size on these children
                state.slices[level + 1][kids] = state.pods[level + 1][kids] // size
                state.slices_wl[level + 1][kids] = state.pods_wl[level + 1][kids] // size
            pods, lead = int(state.pods[level][d]), int(state.leader[level][d])
            got = state.update_counts(level + 1, kids, pods, lead, size, size > 1)
            if got is None:
                current = None
                break
            spread.extend(got)
        else:
            current = spread
        level += 1
    if current is None:
        return state.not_fit(0, req.count // req.slice_size)
    leaf_pods_now, leaf_leaders = state.pods[tree.lowest], state.leader[tree.lowest]
    leader_leaf = next((d for d in current if leaf_leaders[d] > 0), -1) if leaders else -1
    workers = {d: int(leaf_pods_now[d]) for d in sorted(set(current)) if leaf_pods_now[d] > 0}
    return TasResult(workers, leader_leaf)
