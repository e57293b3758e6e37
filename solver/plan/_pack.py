"""Packing primitives shared by the planner and the study: whether one pod fits an empty
node (`fit_failure`, with the kube-scheduler's reason when it does not), exact node-pattern
feasibility (GPU devices with milli capacity) and the greedy: a vectorised first-fit-
decreasing / best-fit packer, the planner's first incumbent.

A *pattern* is a multiset of shapes on one node: `{shape index: pods}`. It fits a node
type when every scalar resource fits and the GPU asks pack onto the node's devices: a pod
with `gpus = k, gpu_milli = d` needs `k` distinct devices with at least `d` milli free each.
Whole-GPU asks (`d = 1000`) take whole free devices; shared asks (`k = 1, d < 1000`) are
bin-packed into what is left (`packs`: best-fit decreasing first, then an exact search with
a node budget; a search that runs out of budget answers "does not fit", which is safe).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from solver.plan._model import (
    BUDGET_SLACK,
    DEFAULT_PODS_CAPACITY,
    GPU,
    MILLI,
    NodeType,
    PlanInput,
    Shape,
)

__all__ = [
    "Arrays",
    "GreedyPacker",
    "arrays_of",
    "fit_failure",
    "node_capacity",
    "packs",
    "pattern_fits",
    "pods_per_shape",
]

_SEARCH_BUDGET = 20_000


def node_capacity(t: NodeType, resource: str) -> int:
    """A node's allocatable; `pods` is Kubernetes' default when the type does not say."""
    if resource == "pods" and not any(n == "pods" for n, _ in t.allocatable):
        return DEFAULT_PODS_CAPACITY
    return t.capacity(resource)


def fit_failure(shape: Shape, t: NodeType) -> str | None:
    """Why one pod of `shape` cannot run on an empty node of type `t` (None: it can)."""
    for r, v in shape.requests:
        if v > node_capacity(t, r):
            return f"Insufficient {r}"
    if shape.gpus:
        if sum(1 for f in t.devices if f >= shape.gpu_milli) < shape.gpus:
            return f"Insufficient {GPU}"
        if shape.models is not None and t.gpu_model not in shape.models:
            return "GPU model not allowed"
    labels = dict(t.labels)
    for key, value in shape.selector:
        if labels.get(key) != value:
            return "node(s) didn't match Pod's node affinity/selector"
    return None


def pods_per_shape(inp: PlanInput, counts: Sequence[int] | np.ndarray) -> np.ndarray:
    """Pods of each shape in `counts[j]` jobs of each job class j."""
    pods = np.zeros(len(inp.shapes), dtype=np.int64)
    for job, k in zip(inp.jobs, counts, strict=True):
        for s, m in job.shapes:
            pods[s] += m * k
    return pods


@dataclass(frozen=True)
class Arrays:
    """The input as numpy arrays: S shapes x R resources, T types."""

    resources: tuple[str, ...]
    Q: np.ndarray  # [S, R] requests
    gpus: np.ndarray  # [S] devices per pod
    milli: np.ndarray  # [S] milli per device
    C: np.ndarray  # [T, R] capacity per node
    devices: tuple[tuple[int, ...], ...]  # [T] free milli per device of an empty node
    compat: np.ndarray  # [S, T] one pod of the shape fits an empty node of the type
    demand: np.ndarray  # [S] pods of the shape over all jobs


def arrays_of(inp: PlanInput) -> Arrays:
    """`inp` as the arrays the packers and the LPs read."""
    R = inp.resources
    S, T = len(inp.shapes), len(inp.types)
    Q = np.array([[s.request(r) for r in R] for s in inp.shapes], dtype=np.int64).reshape(S, len(R))
    C = np.array([[node_capacity(t, r) for r in R] for t in inp.types], dtype=np.int64).reshape(
        T, len(R)
    )
    compat = np.array(
        [[fit_failure(s, t) is None for t in inp.types] for s in inp.shapes], dtype=bool
    ).reshape(S, T)
    return Arrays(
        resources=R,
        Q=Q,
        gpus=np.array([s.gpus for s in inp.shapes], dtype=np.int64),
        milli=np.array([s.gpu_milli for s in inp.shapes], dtype=np.int64),
        C=C,
        devices=tuple(t.devices for t in inp.types),
        compat=compat,
        demand=pods_per_shape(inp, [job.count for job in inp.jobs]),
    )


def packs(devices: Sequence[int], whole: int, items: Sequence[int]) -> bool:
    """Can `whole` full devices plus shared items (milli each) go on these devices?"""
    full = sum(1 for f in devices if f >= MILLI)
    if whole > full:
        return False
    bins = sorted([f for f in devices if f < MILLI] + [MILLI] * (full - whole), reverse=True)
    todo = sorted(items, reverse=True)
    if not todo:
        return True
    if sum(todo) > sum(bins) or todo[0] > bins[0]:
        return False
    # best-fit decreasing answers almost every case
    loads = list(bins)
    ok = True
    for item in todo:
        best = -1
        for i, free in enumerate(loads):
            if free >= item and (best < 0 or free < loads[best]):
                best = i
        if best < 0:
            ok = False
            break
        loads[best] -= item
    if ok:
        return True
    budget = [_SEARCH_BUDGET]
    seen: set[tuple[int, tuple[int, ...]]] = set()

    def search(i: int, free: tuple[int, ...]) -> bool:
        if i == len(todo):
            return True
        budget[0] -= 1
        if budget[0] < 0 or (i, free) in seen:
            return False
        seen.add((i, free))
        tried: set[int] = set()
        for b, f in enumerate(free):
            if f >= todo[i] and f not in tried:
                tried.add(f)
                nxt = tuple(sorted((*free[:b], f - todo[i], *free[b + 1 :]), reverse=True))
                if search(i + 1, nxt):
                    return True
        return False

    return search(0, tuple(bins))


def pattern_fits(
    t: NodeType, shapes: Sequence[Shape], pattern: Mapping[int, int], arrays: Arrays, ti: int
) -> bool:
    """Exact: does this multiset of pods fit one node of type `t` (index `ti`)?"""
    used = np.zeros(len(arrays.resources), dtype=np.int64)
    whole = 0
    items: list[int] = []
    for s, n in pattern.items():
        if n <= 0:
            continue
        if not arrays.compat[s, ti]:
            return False
        used += arrays.Q[s] * n
        shape = shapes[s]
        if shape.gpus:
            if shape.gpu_milli >= MILLI:
                whole += shape.gpus * n
            else:
                items.extend([shape.gpu_milli] * n)
    if (used > arrays.C[ti]).any():
        return False
    return packs(t.devices, whole, items)


class GreedyPacker:
    """Nodes opened one at a time: best fit among open nodes, else the cheapest new node.

    Order (first-fit decreasing): jobs by (1) their largest pod's dominant share of the
    smallest compatible type, descending, (2) pods per job, descending, (3) job-class
    index. Each pod goes to the open node that leaves the least normalised free capacity
    (best fit; ties: lowest node index); when none fits, a node of the compatible type
    with the lowest cost x dominant share (ties: catalogue order) is opened, within the
    limits (maxCount, card quota, budget). A job whose pods cannot all be placed is rolled
    back (gang all-or-nothing).
    """

    def __init__(self, inp: PlanInput, arrays: Arrays, opened: np.ndarray | None = None) -> None:
        self.inp = inp
        self.a = arrays
        T = len(inp.types)
        cap = max(16, int(arrays.demand.sum()) + 1)
        R = len(arrays.resources)
        self.gmax = max([len(d) for d in arrays.devices] + [1])
        self.free = np.zeros((cap, R), dtype=np.int64)
        self.dev = np.full((cap, self.gmax), -1, dtype=np.int64)
        self.type_of = np.zeros(cap, dtype=np.int64)
        self.n = 0
        self.opened = np.zeros(T, dtype=np.int64) if opened is None else opened.copy()
        self.load: list[dict[int, int]] = []
        # initial=1: with no node type to pack into (nothing to buy, no nodes) the scale is 1
        self.scale = arrays.C.max(axis=0, initial=1).astype(np.float64)
        self.costs = np.array([t.cost for t in inp.types], dtype=np.float64)
        self.limit = np.array(
            [t.max_count if t.max_count is not None else 1 << 40 for t in inp.types],
            dtype=np.int64,
        )
        self.model_of = [t.gpu_model for t in inp.types]
        self.quota = dict(inp.card_quota)
        # nodes already used (`opened`) count against maxCount, the budget and card quotas
        self.added_gpus: dict[str, int] = {}
        self.spent = 0.0
        for t in range(T):
            if self.opened[t]:
                self._charge(t, int(self.opened[t]))
        # dominant share of one pod of shape s on type t (inf when incompatible)
        gpu_share = np.where(
            np.array([len(d) for d in arrays.devices])[None, :] > 0,
            (arrays.gpus * arrays.milli)[:, None]
            / np.maximum(np.array([sum(d) for d in arrays.devices]), 1)[None, :],
            np.where(arrays.gpus[:, None] > 0, np.inf, 0.0),
        )
        share = arrays.Q[:, None, :] / np.maximum(arrays.C[None, :, :], 1)
        dom = np.maximum(share.max(axis=2) if share.shape[2] else 0.0, gpu_share)
        self.dominant = np.where(arrays.compat, dom, np.inf)

    # -- state -----------------------------------------------------------------------

    def _charge(self, t: int, nodes: int) -> None:
        """`nodes` more (negative: fewer) of type t against the budget and card quotas."""
        tt = self.inp.types[t]
        if tt.existing:
            return
        self.spent += nodes * tt.cost
        if tt.gpu_model:
            self.added_gpus[tt.gpu_model] = self.added_gpus.get(tt.gpu_model, 0) + nodes * tt.gpus

    def _open(self, t: int) -> int:
        i = self.n
        self.n += 1
        self.free[i] = self.a.C[t]
        d = self.a.devices[t]
        self.dev[i, :] = -1
        self.dev[i, : len(d)] = d
        self.type_of[i] = t
        self.opened[t] += 1
        self._charge(t, 1)
        self.load.append({})
        return i

    def _close_last(self) -> None:
        self.n -= 1
        t = int(self.type_of[self.n])
        self.opened[t] -= 1
        self._charge(t, -1)
        self.load.pop()

    def _can_open(self, t: int) -> bool:
        tt = self.inp.types[t]
        if self.opened[t] >= self.limit[t]:
            return False
        if tt.existing:
            return True
        if self.inp.budget is not None and self.spent + tt.cost > self.inp.budget + BUDGET_SLACK:
            return False
        if tt.gpu_model in self.quota and tt.gpus:
            return self.added_gpus.get(tt.gpu_model, 0) + tt.gpus <= self.quota[tt.gpu_model]
        return True

    def _gpu_ok(self, s: int, rows: slice | np.ndarray) -> np.ndarray:
        g, d = int(self.a.gpus[s]), int(self.a.milli[s])
        dev = self.dev[rows]
        if g == 0:
            return np.ones(dev.shape[0], dtype=bool)
        return np.asarray((dev >= d).sum(axis=1) >= g)

    def _take(self, i: int, s: int) -> tuple[int, list[int]]:
        self.free[i] -= self.a.Q[s]
        g, d = int(self.a.gpus[s]), int(self.a.milli[s])
        taken: list[int] = []
        if g:
            row = self.dev[i]
            # best fit per device: the devices with the least milli left that still fit
            order = np.argsort(np.where(row >= d, row, 1 << 30), kind="stable")[:g]
            for k in order:
                row[k] -= d
                taken.append(int(k))
        self.load[i][s] = self.load[i].get(s, 0) + 1
        return i, taken

    def _untake(self, i: int, s: int, taken: list[int]) -> None:
        self.free[i] += self.a.Q[s]
        for k in taken:
            self.dev[i, k] += int(self.a.milli[s])
        self.load[i][s] -= 1
        if not self.load[i][s]:
            del self.load[i][s]

    def place_pod(self, s: int) -> tuple[int, list[int]] | None:
        n = self.n
        if n:
            ok = self.a.compat[s, self.type_of[:n]] & (self.free[:n] >= self.a.Q[s]).all(axis=1)
            ok &= self._gpu_ok(s, slice(0, n))
            idx = np.flatnonzero(ok)
            if idx.size:
                left = ((self.free[idx] - self.a.Q[s]) / self.scale).sum(axis=1)
                gleft = np.where(self.dev[idx] > 0, self.dev[idx], 0).sum(axis=1) / MILLI
                best = int(idx[np.argmin(left + gleft)])
                return self._take(best, s)
        compat = self.a.compat[s]
        price = np.where(compat, self.costs * np.where(compat, self.dominant[s], 0.0), np.inf)
        for t in np.argsort(price, kind="stable"):
            if not np.isfinite(price[t]):
                break
            if self._can_open(int(t)):
                i = self._open(int(t))
                return self._take(i, s)
        return None

    def place_job(self, shapes: Sequence[tuple[int, int]]) -> bool:
        """All pods of one job, or none (rolled back)."""
        mark = self.n
        done: list[tuple[int, int, list[int]]] = []
        order = sorted(shapes, key=lambda sm: -float(np.min(self.dominant[sm[0]])))
        for s, m in order:
            for _ in range(m):
                got = self.place_pod(s)
                if got is None:
                    for i, s2, taken in reversed(done):
                        self._untake(i, s2, taken)
                    while self.n > mark:
                        self._close_last()
                    return False
                done.append((got[0], s, got[1]))
        return True

    def run(
        self, counts: Sequence[int] | None = None
    ) -> tuple[list[int], list[tuple[int, dict[int, int]]]]:
        """Place every job class (`counts[j]` jobs of class j, default all); returns
        (placed jobs per class, [(type, pattern)] of the nodes it opened)."""
        jobs = self.inp.jobs
        todo = [job.count for job in jobs] if counts is None else list(counts)
        key = []
        for j, job in enumerate(jobs):
            big = max(float(np.min(self.dominant[s])) for s, _ in job.shapes)
            key.append((-big, -job.pods, j))
        placed = [0] * len(jobs)
        for _, _, j in sorted(key):
            job = jobs[j]
            for _ in range(todo[j]):
                if self.place_job(job.shapes):
                    placed[j] += 1
        nodes = [(int(self.type_of[i]), dict(self.load[i])) for i in range(self.n)]
        return placed, nodes
