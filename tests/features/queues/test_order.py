"""Volcano's queue order taken again after every job (`order.resorted_order`), against the
plain reading of upstream's allocate action: a priority queue of the queues with jobs,
popped by the plugin's queue order, the popped queue's next job taken and its ask counted
in the queue and its ancestors, the queue pushed back."""

from __future__ import annotations

import functools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from solver import SchedulerConf
from solver.features.queues.order import capacity_cmp, resorted_order
from tests.builders import model, node, queue, queue_tree

GPU = "nvidia.com/gpu"


def flat_order(tree: Any, unit_queue: list[str], asks: list[dict[str, int]]) -> list[int]:
    work = tree.fork()
    left = list(range(len(unit_queue)))
    out = []

    def key(u: int) -> tuple[int, bool, float, str, str]:
        return (0, False, 0.0, "", f"u{u:04d}")

    while left:
        heads = {}
        for u in sorted(left, key=key):
            heads.setdefault(unit_queue[u], u)

        def cmp(a: int, b: int) -> int:
            qa, qb = unit_queue[a], unit_queue[b]
            c = capacity_cmp(work, qa, qb) if qa != qb else 0
            return c or ((key(a) > key(b)) - (key(a) < key(b)))

        u = min(heads.values(), key=functools.cmp_to_key(cmp))
        out.append(u)
        left.remove(u)
        work.bump(unit_queue[u], "allocated", asks[u])
    return out


@st.composite
def worlds(draw: st.DrawFn) -> tuple[Any, list[str], list[dict[str, int]]]:
    objects: list[dict[str, Any]] = [node("n0").cpu("64").gpu(8).obj()]
    names = [f"q{i}" for i in range(draw(st.integers(2, 6)))]
    parents: dict[str, str | None] = {}
    for i, name in enumerate(names):
        parents[name] = draw(st.sampled_from([None, *names[:i]]))
        deserved = draw(st.sampled_from([None, 1, 2, 4, 8]))
        objects.append(
            queue(
                name,
                parents[name],
                deserved={GPU: deserved} if deserved else None,
                priority=draw(st.sampled_from([None, None, 1])),
            )
        )
    leaves = [n for n in names if n not in parents.values()]
    tree = queue_tree(model(*objects), SchedulerConf.default())
    units = draw(st.lists(st.sampled_from(leaves), min_size=1, max_size=12))
    asks = [{GPU: draw(st.integers(0, 3))} for _ in units]
    return tree, units, asks


@settings(max_examples=150, deadline=None)
@given(worlds())
def test_the_tree_walk_is_the_priority_queue_of_the_allocate_action(
    world: tuple[Any, list[str], list[dict[str, int]]],
) -> None:
    tree, units, asks = world
    assert tree is not None

    def key(u: int) -> tuple[int, bool, float, str, str]:
        return (0, False, 0.0, "", f"u{u:04d}")

    got = resorted_order(tree, units, key, capacity_cmp, asks)
    assert got == flat_order(tree, units, asks)
    assert all(not tree.queues[q].allocated for q in units)  # the call's tree is untouched
