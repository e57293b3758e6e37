"""No cliffs: CP-SAT's model for k single-pod gangs (a Deployment's replicas, a
LeaderWorkerSet's pods) or k mixed gangs does not jump in size at some k.

The pattern table of a node class has one row per way a node can hold the pod types that
use it: k one-pod types have 2^k − 1 rows. While that table was bounded by its row count
(4,096), 12 replicas slipped through with 4,095 rows × 12 types and took CP-SAT 10 s (10
pods 0.3 s, 13 pods 0.03 s). The bound is now the table's cells, which is what the model
pays for; these tests check the sizes, which are exact, and a wall-clock ceiling far above
any healthy call and far below the time limit, so noise cannot fail them.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from solver import SchedulerConf, compile_problem, snapshot_of, solve
from solver.sat import MAX_PATTERN_CELLS, node_classes
from tests.builders import model, node, pod, podgroup

CEILING = 2.0  # seconds: every k below answers in ~0.01–0.1 s; the old 12-pod cliff took 10 s


def replicas(k: int) -> list[dict[str, Any]]:
    """k one-pod gangs of one shape (a 12-replica Deployment is the old cliff) on 8 nodes."""
    nodes = [node(f"n{i}").cpu("32").memory("128Gi").gpu(8).obj() for i in range(8)]
    pods = [pod(f"web-{i}").requests(cpu="3", memory="8Gi", gpu=1).obj() for i in range(k)]
    return nodes + pods


def mixed(k: int) -> list[dict[str, Any]]:
    """k gangs of 1–3 pods in three shapes, on enough nodes for all (8 + k/3: which gangs
    to leave out is a knapsack, hard by nature, not a cliff)."""
    objects = [node(f"n{i}").cpu("32").memory("128Gi").gpu(8).obj() for i in range(8 + k // 3)]
    shapes = [{"cpu": "3", "gpu": 1}, {"cpu": "1"}, {"cpu": "6", "gpu": 2}]
    for g in range(k):
        size = 1 + g % 3
        objects.append(podgroup(f"g{g}", size))
        for i in range(size):
            objects.append(pod(f"g{g}-{i}").group(f"g{g}").requests(**shapes[(g + i) % 3]).obj())
    return objects


FAMILIES = {"replicas": replicas, "mixed": mixed}
# Every count where a table could tip over (2^k − 1 rows near the budget), then samples.
COUNTS = [*range(1, 17), 20, 24, 32, 48, 64]


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_pattern_tables_stay_within_their_cell_budget(family: str) -> None:
    for k in range(1, 65):
        snapshot = snapshot_of(model(*FAMILIES[family](k)))
        problem = compile_problem(snapshot, SchedulerConf.default())
        for klass in node_classes(problem):
            if klass.mode == "patterns":
                cells = klass.patterns.size
                assert 0 < cells <= MAX_PATTERN_CELLS, (family, k, cells)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_no_gang_count_falls_off_a_cliff(family: str) -> None:
    """Every call proves its answer, and none takes more than CEILING seconds."""
    slow = []
    for k in COUNTS:
        objects = FAMILIES[family](k)
        started = time.perf_counter()
        decision = solve(model(*objects), engine="auto", time_limit=10, workers=1, seed=0)
        seconds = time.perf_counter() - started
        if seconds > CEILING or decision.status != "OPTIMAL":
            slow.append((k, round(seconds, 2), decision.status))
    assert slow == []
