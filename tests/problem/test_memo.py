"""`FillMemo` keeps each pod shape's slots and scores between a greedy run's fills; a fill
through it chooses exactly the nodes a fresh fill chooses, whatever happened to `free`
in between (fills of other shapes, rollbacks, a feature's own placements)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from solver import SchedulerConf, compile_problem, snapshot_of
from solver.model import ClusterModel
from solver.problem import FillMemo, fill
from solver.problem._memo import MAX_SHAPES
from tests.builders import model, node, pod, podgroup
from tests.test_properties import CONFS, clusters

STEPS = st.lists(
    st.tuples(st.integers(0, 10**6), st.integers(1, 6), st.sampled_from(["fill", "undo", "poke"])),
    min_size=1,
    max_size=24,
)


@given(clusters(), st.sampled_from(CONFS), STEPS)
def test_a_memoised_fill_chooses_what_a_fresh_fill_chooses(
    cluster: ClusterModel, conf: SchedulerConf, steps: list[tuple[int, int, str]]
) -> None:
    problem = compile_problem(snapshot_of(cluster), conf)
    if problem.num_types == 0:
        return
    fresh, kept = problem.free.copy(), problem.free.copy()
    memo = FillMemo(problem, kept)
    done: list[tuple[int, np.ndarray]] = []
    for pick, count, action in steps:
        t = pick % problem.num_types
        if action == "fill":
            want = fill(problem, t, count, fresh)
            got = fill(problem, t, count, kept, memo=memo)
            assert got.tolist() == want.tolist()
            done.append((t, got))
        elif action == "undo" and done:  # the greedy's rollback of a unit
            u, nodes = done.pop(pick % len(done))
            for free in (fresh, kept):
                np.add.at(free, nodes, problem.type_demand[u])
        elif action == "poke":  # a feature's own step takes room on one node
            n = pick % problem.num_nodes
            for free in (fresh, kept):
                free[n] -= np.minimum(np.maximum(free[n], 0), count)
        assert np.array_equal(fresh, kept)


def test_gangs_of_one_shape_share_one_memo_entry() -> None:
    objects = [node(f"n{i}").cpu("8").gpu(8).obj() for i in range(6)]
    for g in range(12):
        objects.append(podgroup(f"g{g}", 2))
        objects += [
            pod(f"g{g}-{k}").requests(cpu="1", gpu=1).group(f"g{g}").obj() for k in range(2)
        ]
    problem = compile_problem(snapshot_of(model(*objects)), SchedulerConf.default())
    free = problem.free.copy()
    memo = FillMemo(problem, free)
    nodes = [fill(problem, t, 2, free, memo=memo).tolist() for t in range(problem.num_types)]
    assert len(memo._shapes) == 1 and memo._shapes.popitem()[1] is not None
    # binpack: each gang goes to the fullest node with room, so the nodes fill in order
    assert nodes == [[0, 0]] * 4 + [[1, 1]] * 4 + [[2, 2]] * 4


def test_the_memo_keeps_at_most_max_shapes_and_fills_the_rest_afresh() -> None:
    """Memory stays bounded: a call of many distinct shapes (each filled twice) keeps
    `MAX_SHAPES` of them; the fills of the others are the fresh ones, and all agree."""
    objects = [node(f"n{i}").cpu("64").obj() for i in range(4)]
    for g in range(MAX_SHAPES + 4):
        objects.append(podgroup(f"g{g}", 1))
        objects.append(pod(f"g{g}-0").requests(cpu=f"{100 + g}m").group(f"g{g}").obj())
    problem = compile_problem(snapshot_of(model(*objects)), SchedulerConf.default())
    fresh, kept = problem.free.copy(), problem.free.copy()
    memo = FillMemo(problem, kept)
    for _ in range(2):
        for t in range(problem.num_types):
            assert (
                fill(problem, t, 1, kept, memo=memo).tolist() == fill(problem, t, 1, fresh).tolist()
            )
    assert sum(e is not None for e in memo._shapes.values()) == MAX_SHAPES
    assert len(memo._shapes) == problem.num_types
