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
from hypothesis import given, settings
from hypothesis import strategies as st

from solver import schedule
from solver.defrag import DefragGoal, GoalError, defragment
from solver.defrag._room import moved_snapshot
from solver.snapshot import Snapshot, Workload
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


@st.composite
def jagged(draw: st.DrawFn) -> tuple[Snapshot, int]:
    """2–6 nodes of 8 GPUs in 1–2 racks, 2–8 1-GPU pods on each, a pending gang of 1–3
    pods of 4, 6 or 8 GPUs (sometimes required in one rack): about a third need moves."""
    n = draw(st.integers(2, 6))
    names = [f"n{i}" for i in range(n)]
    objects: list[dict[str, Any]] = [
        node(name).gpu(8).label(RACK, f"r{i % 2}").obj() for i, name in enumerate(names)
    ]
    for name in names:
        objects += [pod(f"s-{name}-{k}").requests(cpu="100m", gpu=1).on(name).obj()
                    for k in range(draw(st.integers(2, 8)))]  # fmt: skip
    size, gpus = draw(st.integers(1, 3)), draw(st.sampled_from([4, 6, 8]))
    objects.append(workload_podgroup("train", size, topology=RACK if draw(st.booleans()) else None))
    objects += [pod(f"train-{i}").requests(cpu="1", gpu=gpus).scheduling_group("train").obj()
                for i in range(size)]  # fmt: skip
    return Snapshot.from_model(model(*objects)), draw(st.integers(0, 12))


@settings(max_examples=40, deadline=None)
@given(jagged())
def test_every_room_plan_applied_places_the_gang(case: tuple[Snapshot, int]) -> None:
    """A plan with moves is one the scheduler, on the cluster with the moves applied,
    places the gang on (checked again here, independently of the planner's own check)."""
    snap, budget = case
    found = room(snap, max_pods=budget)
    assert found.pods_moved <= budget
    if not found.placement:
        assert found.moves == ()
        return
    rows = {snap.running.find(m.pod): m.target for m in found.moves}
    after = moved_snapshot(snap, {int(r): t for r, t in rows.items()})
    workload = Workload.of(after, (), ("default/train",))
    decision = schedule(after, workload=workload, engine="auto", workers=1, seed=0)
    assert decision.gang_placed("default/train"), decision.podgroups
    assert sorted(found.placement) == [f"default/train-{i}" for i in range(len(found.placement))]
