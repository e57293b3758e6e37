"""The candidate pool (`solver/features/preemption/pool.py`) kept by deltas equals one
built afresh from the candidates left, whatever the plans removed.

    n1..n4 [8 GPU]   running: 3 jobs of priority 0..2, pods of 1-2 GPUs spread over them
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.compile import compile_problem
from solver.config import SchedulerConf
from solver.features.preemption.pool import CandidatePool
from solver.features.preemption.victims import compile_preemption
from solver.schedule import snapshot_of
from solver.snapshot import Workload
from tests.builders import model, node, pod

JOB = "scheduling.koordinator.sh/questioned-object-key"


def _input() -> tuple[object, int]:
    objs = [node(f"n{i}").cpu("64").gpu(8).obj() for i in range(1, 5)]
    for k in range(12):
        objs.append(
            pod(f"r{k}")
            .requests(cpu="1", gpu=1 + k % 2)
            .priority(k % 3)
            .label(JOB, f"job{k % 3}")
            .on(f"n{1 + k % 4}")
            .obj()
        )
    objs.append(pod("hi").requests(cpu="1", gpu=8).priority(100).obj())
    snapshot = snapshot_of(model(*objs))
    workload = Workload.everything(snapshot)
    problem = compile_problem(snapshot, SchedulerConf.default(), workload)
    return compile_preemption(snapshot, workload, problem), problem.num_nodes


@settings(max_examples=30, deadline=None)
@given(st.lists(st.lists(st.integers(0, 11), max_size=4), max_size=4))
def test_removing_victims_keeps_the_pool_equal_to_a_fresh_one(plans: list[list[int]]) -> None:
    pre, num_nodes = _input()
    everyone = np.arange(len(pre.rows))  # type: ignore[attr-defined]
    pool = CandidatePool.build(pre, num_nodes, everyone)  # type: ignore[arg-type]
    gone: set[int] = set()
    for victims in plans:
        pool.remove(victims)
        gone.update(victims)
        left = np.array(sorted(set(everyone.tolist()) - gone), dtype=np.int64)
        fresh = CandidatePool.build(pre, num_nodes, left)  # type: ignore[arg-type]
        assert pool.size == fresh.size
        assert np.array_equal(pool.room, fresh.room)
        assert np.array_equal(pool.node_cost, fresh.node_cost)
        assert np.array_equal(pool.candidates(), fresh.candidates())
        for n in range(num_nodes):
            assert sorted(pool.on_nodes([n]).tolist()) == sorted(fresh.on_nodes([n]).tolist())
