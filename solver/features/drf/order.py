"""Hierarchical DRF's queue order in Volcano's allocate loop (`features.queues.loop`).

With `enableHierarchy`, `drf`'s `QueueOrderFn` decides before any later plugin's: two
queues compare level by level down their hDRF paths (`hdrf.py`: a saturated node last,
then the lower share / weight first); the loop breaks what it leaves equal. The jobs'
leaves move with every step the loop takes. The running pods of jobs outside the call count
in their queues' nodes as saturated leaves (a job whose pods all run has allocated =
request), summed per queue: the same shares as one leaf per job.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from solver.features._base import CompileContext
from solver.features.drf.hdrf import HIERARCHY, MAX_HIERARCHY_DEPTH, HdrfTree, hierarchy_path
from solver.features.queues import LoopBlock, VolcanoLoop, columns, loop_block, picked
from solver.problem import Block, FloatArray, Problem

__all__ = ["HdrfBlock", "HdrfRanker", "hdrf_block", "hdrf_loop"]


@dataclass(frozen=True, eq=False)
class HdrfBlock(Block):
    """The hDRF tree's queues for one call: every queue the call's jobs or the running pods
    name (Q), over the call's resources (R)."""

    queue_names: tuple[str, ...]  # [Q]
    queue_parts: tuple[tuple[str, ...], ...]  # [Q] the queue's path below the root
    queue_weights: tuple[tuple[float, ...], ...]  # [Q] the weight of each part
    queue_others: FloatArray  # [Q, R] what running pods of jobs outside the call hold


def hdrf_block(ctx: CompileContext) -> HdrfBlock:
    """The block of a call whose conf turns on `drf`'s `enableHierarchy` (and the loop's)."""
    loop = loop_block(ctx)
    snapshot, resources = ctx.snapshot, ctx.resources
    running = snapshot.running
    held = snapshot.usage.queue_requests
    queues = range(min(len(running.queue_names), held.shape[0]))
    busy = {running.queue_names.value(q) for q in queues if held[q].any()}
    names = sorted({q for q in loop.unit_queue if q} | busy)
    index = {q: i for i, q in enumerate(names)}
    pick = columns(running.resources, resources)
    others = np.zeros((len(names), len(resources)))
    for q in queues:
        if (charged := running.queue_names.value(q)) in index:
            others[index[charged]] += np.where(loop.counted, picked(held[q], pick), 0)
    for u, own in enumerate(loop.unit_queue):
        if own:
            others[index[own]] -= loop.unit_allocated[u]
    parts, weights = [], []
    for name in names:
        spec = snapshot.queues.get(name)
        annotations = dict(spec.annotations) if spec is not None else {}
        p, w = hierarchy_path(annotations)
        if annotations.get(HIERARCHY, "").count("/") > MAX_HIERARCHY_DEPTH:
            ctx.notes.append(
                f"queue {name}: {HIERARCHY}: only the first {MAX_HIERARCHY_DEPTH} levels "
                "below the root are read"
            )
        parts.append(p)
        weights.append(w)
    return HdrfBlock(
        queue_names=tuple(names),
        queue_parts=tuple(parts),
        queue_weights=tuple(weights),
        queue_others=np.maximum(others, 0.0),
    )


class HdrfRanker:
    """`Ranker` of hierarchical DRF: the tree, each unit a leaf under its queue."""

    def __init__(self, problem: Problem, loop: LoopBlock, block: HdrfBlock) -> None:
        tree = self.tree = HdrfTree(loop.total)
        paths = {
            name: tree.path(p, w)
            for name, p, w in zip(
                block.queue_names, block.queue_parts, block.queue_weights, strict=True
            )
        }
        for name, held in zip(block.queue_names, block.queue_others, strict=True):
            if held.any():
                tree.job(paths[name][-1], held, held)
        self.paths = paths
        self.leaf = [
            tree.job(paths[q][-1] if q else 0, loop.unit_allocated[u], loop.unit_request[u])
            for u, q in enumerate(loop.unit_queue)
        ]
        tree.refresh()

    def compare(self, a: str | None, b: str | None) -> float:
        return self.tree.compare(self.paths.get(a or "", (0,)), self.paths.get(b or "", (0,)))

    def charge(self, unit: int, placed: Mapping[int, int], amounts: FloatArray) -> None:
        self.tree.allocate(self.leaf[unit], amounts)


def hdrf_loop(problem: Problem) -> VolcanoLoop | None:
    """The loop under hDRF's queue order (None when `enableHierarchy` is off)."""
    block, loop = problem.block(HdrfBlock), problem.block(LoopBlock)
    if block is None or loop is None:
        return None
    return VolcanoLoop(problem, loop, HdrfRanker(problem, loop, block))
