"""The per-node table: shared by models over the same Node objects, never across others.

n0 (gpu 8)   n1 (gpu 8, tainted dedicated=infer)   n2 (gpu 8, cordoned)
"""

from __future__ import annotations

import threading

import numpy as np

from solver.compile import compile_problem
from solver.config import load_conf
from solver.model import ClusterModel
from solver.node_table import node_table
from solver.problem import Problem
from tests.builders import model, node, pod

CONF = load_conf(None)


def _cluster(*pods: dict[str, object]) -> ClusterModel:
    return model(
        node("n0").gpu(8).obj(),
        node("n1").gpu(8).taint("dedicated", "infer").obj(),
        node("n2").gpu(8).cordon().obj(),
        *pods,
    )


def _same_nodes(base: ClusterModel, *pods: dict[str, object]) -> ClusterModel:
    """A new model (as a front end builds per call) over `base`'s Node objects."""
    other = _cluster(*pods)
    return ClusterModel(nodes=base.nodes, pods=other.pods, gangs=other.gangs)


def test_models_over_the_same_node_objects_share_one_table() -> None:
    first = _cluster(pod("a").requests(gpu=1).obj())
    second = _same_nodes(first, pod("b").requests(gpu=2).obj())
    assert second.nodes is not first.nodes  # pydantic rebuilt the tuple
    assert second.node_table is first.node_table


def test_equal_but_new_node_objects_get_a_new_table() -> None:
    first = _cluster(pod("a").requests(gpu=1).obj())
    rebuilt = _cluster(pod("a").requests(gpu=1).obj())
    assert rebuilt.nodes == first.nodes
    assert rebuilt.node_table is not first.node_table


def test_cached_arrays_are_read_only() -> None:
    table = _cluster().node_table
    capacity = table.capacity(("cpu", "nvidia.com/gpu"))
    assert capacity.tolist() == [[8000, 8]] * 3  # builder default: 8 cores
    assert not capacity.flags.writeable
    assert table.capacity(("cpu", "nvidia.com/gpu")) is capacity


def test_a_shared_table_keeps_each_problems_reasons_its_own() -> None:
    # The first call meets the taint and the cordon; the second tolerates the taint, so
    # its counted reasons must not mention it although the table's texts do.
    first = _cluster(pod("a").requests(gpu=1).obj())
    tolerant = pod("b").requests(gpu=1).tolerate("dedicated", "infer").obj()
    second = _same_nodes(first, tolerant)
    p1 = compile_problem(first, CONF)
    p2 = compile_problem(second, CONF)
    assert second.node_table is first.node_table

    def counted(problem: Problem) -> dict[str, int]:
        codes = problem.ineligible_reason[0]
        found, counts = np.unique(codes[codes > 0], return_counts=True)
        return {problem.reason_texts[c]: n for c, n in zip(found, counts.tolist(), strict=True)}

    assert counted(p1) == {
        "node(s) had untolerated taint {dedicated: infer}": 1,
        "node(s) were unschedulable": 1,
    }
    assert counted(p2) == {"node(s) were unschedulable": 1}
    fresh = compile_problem(_cluster(tolerant), CONF)
    assert p2.eligible.tolist() == fresh.eligible.tolist()


def test_threads_filling_one_table_agree_on_codes() -> None:
    base = _cluster()
    pods = [pod(f"p{i}").requests(gpu=1).selector(zone=f"z{i % 4}").obj() for i in range(16)]
    models = [_same_nodes(base, p) for p in pods]
    rows: list[list[int]] = [[] for _ in models]

    def work(i: int) -> None:
        problem = compile_problem(models[i], CONF)
        rows[i] = [problem.reason_texts[c] for c in problem.ineligible_reason[0].tolist()]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(models))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    affinity = "node(s) didn't match Pod's node affinity/selector"
    cordoned = "node(s) were unschedulable"
    for row in rows:
        assert row == [affinity, "node(s) had untolerated taint {dedicated: infer}", cordoned]


def test_the_cache_is_bounded() -> None:
    tables = [node_table(_cluster().nodes) for _ in range(20)]
    first_nodes = tables[0].nodes
    assert node_table(first_nodes) is not tables[0]  # evicted long ago
    assert node_table(tables[-1].nodes) is tables[-1]


def test_a_model_copy_does_not_carry_cached_derived_values() -> None:
    first = _cluster(pod("a").requests(gpu=1).obj())
    assert len(first.pending_pods) == 1 and "default/a" in first.pod_by_key
    first.memo["seen"] = True
    emptied = first.model_copy(update={"pods": ()})
    assert emptied.pending_pods == () and emptied.pod_by_key == {}
    assert emptied.memo == {}
    assert emptied.node_table is first.node_table  # same Node objects: shared again
