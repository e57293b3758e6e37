"""Hostile Defragment goals: every DefragmentGoal either converts or is refused with a
ConvertError naming a `goal.*` field, and every goal that converts gets a plan that passes
the independent check (never an exception, never a plan that fails it)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gangplan.v1 import placement_service_pb2 as spb
from solver.codec import ConvertError, goal_from_proto
from solver.defrag import defragment
from solver.snapshot import Snapshot
from tests.builders import model
from tests.defrag.test_defrag import assert_valid, ones, rack_nodes

SNAPSHOT = Snapshot.from_model(model(*rack_nodes(), *ones()))
INT32 = st.integers(-(2**31), 2**31 - 1)
TEXT = st.text(max_size=40)


@st.composite
def goals(draw: st.DrawFn) -> spb.DefragmentGoal:
    goal = spb.DefragmentGoal(
        level=draw(st.sampled_from(["", "node", "cloud.com/topology-rack", "nope"]) | TEXT),
        shape=draw(
            st.dictionaries(
                st.sampled_from(["nvidia.com/gpu", "cpu", "x"]) | TEXT,
                st.sampled_from(["8", "0", "-1", "1e400", "eight"]) | TEXT,
                max_size=3,
            )
        ),
        protect_namespaces=draw(st.lists(TEXT, max_size=3)),
        protect_labels=draw(st.dictionaries(TEXT, TEXT, max_size=3)),
        topology_keys=draw(st.lists(TEXT, max_size=3)),
    )
    for name in ("count", "max_pods", "max_gangs", "max_cost_per_domain"):
        if draw(st.booleans()):
            setattr(goal, name, draw(st.integers(-5, 30) | INT32))
    if draw(st.booleans()):
        goal.protect_priority = draw(st.integers(-(2**63), 2**63 - 1))
    return goal


@settings(max_examples=60, deadline=None)
@given(goals(), st.sampled_from(["greedy", "cpsat"]))
def test_a_hostile_goal_is_refused_by_field_or_planned_and_checked(
    message: spb.DefragmentGoal, engine: str
) -> None:
    try:
        goal = goal_from_proto(message)
    except ConvertError as err:
        assert err.violations and all(f.startswith("goal.") for f, _ in err.violations)
        return
    plan = defragment(SNAPSHOT, goal, engine=engine, time_limit=2, workers=1, seed=0)
    assert_valid(SNAPSHOT, plan)
    assert not [n for n in plan.notes if "failed its check" in n]
