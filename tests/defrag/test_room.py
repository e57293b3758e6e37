"""Room for a pending gang (`--gang`): the fewest running pods moved so that the scheduler
places it — KAI-Scheduler's consolidation, planned offline — keeping the gang's own rules.

Four 8-GPU nodes in two racks; the numbers are the 1-GPU pods running on each:

          rack r1            rack r2
      a [2]   c [4]      b [2]   d [4]

A gang of two 8-GPU pods needs two empty nodes: moving a's and b's pods (4) onto c and d
makes them. Required in one rack (Workload API topology), it needs a and c: 6 moves.
"""

from __future__ import annotations

from typing import Any

import pytest

from solver.defrag import DefragGoal, GoalError, defragment
from solver.snapshot import Snapshot
from tests.builders import model, node, pod, workload_podgroup
from tests.defrag.test_defrag import assert_valid

RACK = "cloud.com/topology-rack"
LOAD = {"a": 2, "b": 2, "c": 4, "d": 4}
RACKS = {"a": "r1", "c": "r1", "b": "r2", "d": "r2"}


def cluster(topology: str | None = None) -> Snapshot:
    objects: list[dict[str, Any]] = [
        node(n).gpu(8).label(RACK, RACKS[n]).label("kubernetes.io/hostname", n).obj() for n in LOAD
    ]
    for n, count in LOAD.items():
        objects += [pod(f"s-{n}{i}").requests(cpu="100m", gpu=1).on(n).obj() for i in range(count)]
    objects.append(workload_podgroup("train", 2, topology=topology))
    objects += [
        pod(f"train-{i}").requests(cpu="1", gpu=8).scheduling_group("train").obj() for i in range(2)
    ]
    return Snapshot.from_model(model(*objects))


def room(snap: Snapshot, engine: str = "cpsat", **goal: Any) -> Any:
    found = defragment(snap, DefragGoal(gang="default/train", **goal), engine=engine,
                       workers=1, seed=0, time_limit=10)  # fmt: skip
    assert_valid(snap, found)
    return found


def test_the_fewest_moves_make_room_and_the_scheduler_places_the_gang() -> None:
    found = room(cluster())
    assert found.pods_moved == 4 and {m.source for m in found.moves} == {"a", "b"}
    assert sorted(found.placement.values()) == ["a", "b"]
    assert found.status == "OPTIMAL"


def test_the_gang_keeps_its_required_rack() -> None:
    found = room(cluster(topology=RACK))
    assert found.pods_moved == 6 and {m.source for m in found.moves} == {"a", "c"}
    assert sorted(found.placement.values()) == ["a", "c"]


def test_a_budget_too_small_moves_nothing_and_says_so() -> None:
    found = room(cluster(), max_pods=3)
    assert found.moves == () and found.placement == {}
    assert any("no moves of at most 3 pod(s) make room for gang default/train" in n
               for n in found.notes)  # fmt: skip


def test_the_greedy_engine_does_not_plan_moves() -> None:
    found = room(cluster(), engine="greedy")
    assert found.moves == () and "--engine cpsat plans the moves" in found.notes[-1]


def test_a_gang_that_fits_needs_no_move() -> None:
    objects = [node(n).gpu(8).obj() for n in "ab"]
    objects.append(workload_podgroup("train", 2))
    objects += [pod(f"train-{i}").requests(gpu=8).scheduling_group("train").obj() for i in range(2)]
    found = room(Snapshot.from_model(model(*objects)))
    assert found.moves == () and sorted(found.placement.values()) == ["a", "b"]


def test_an_unknown_gang_is_one_line_naming_the_field() -> None:
    with pytest.raises(GoalError, match="defrag goal: gang: no pending pod of gang 'x/y'"):
        defragment(cluster(), DefragGoal(gang="x/y"))
