"""`verify` catches every kind of invalid Decision (it is the oracle of the property tests)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from solver import SchedulerConf, load_conf, load_manifests, schedule, solve, verify
from solver.decision import Decision, GroupOutcome, Placement
from tests.builders import groups_annotation, model, node, pod, podgroup

CONF = SchedulerConf.default()

CLUSTER = model(
    node("n1").gpu(4).obj(),
    node("tainted").gpu(4).taint("dedicated", "infer").obj(),
    node("zoned").gpu(4).label("zone", "a").obj(),
    pod("running").requests(gpu=3).on("n1").obj(),
    podgroup("m", 1, **groups_annotation("default/m", "default/w")),
    podgroup("w", 2, **groups_annotation("default/m", "default/w")),
    pod("m-0").group("m").obj(),
    pod("w-0").group("w").requests(gpu=1).obj(),
    pod("w-1").group("w").requests(gpu=1).obj(),
    pod("z").selector(zone="a").obj(),
)


def decision(placed: dict[str, str | None], groups: dict[str, bool] | None = None) -> Decision:
    placements = {k: Placement(node=v, reason="" if v else "x") for k, v in placed.items()}
    podgroups = {k: GroupOutcome(enqueued=True, placed=v) for k, v in (groups or {}).items()}
    return Decision(
        placements=placements,
        podgroups=podgroups,
        engine="t",
        status="HEURISTIC",
        objective=0,
        tiers={},
        seconds=0,
    )


def test_the_engine_answer_is_valid() -> None:
    assert verify(CLUSTER, CONF, solve(CLUSTER)) == []


VIOLATIONS = {
    "over capacity": (
        {"default/w-0": "n1", "default/w-1": "n1", "default/m-0": "zoned"},
        "nvidia.com/gpu requested 5 > allocatable 4",
    ),
    "untolerated taint": (
        {"default/w-0": "tainted", "default/w-1": "zoned", "default/m-0": "zoned"},
        "taint dedicated=infer:NoSchedule not tolerated",
    ),
    "nodeSelector": ({"default/z": "n1"}, "nodeSelector zone=a not matched"),
    "half-placed gang": (
        {"default/w-0": "zoned", "default/m-0": "zoned"},
        "gang default/w has 1 of 2 required new pods",
    ),
    "group member missing": (
        {"default/w-0": "zoned", "default/w-1": "zoned"},
        "gang default/m has 0 of 1 required new pods",
    ),
    "bound pod moved": (
        {"default/running": "zoned"},
        "default/running: not a pending pod of the input",
    ),
    "unknown node": ({"default/z": "ghost"}, "placed on unknown node ghost"),
}


@pytest.mark.parametrize("case", VIOLATIONS.values(), ids=VIOLATIONS.keys())
def test_violations_are_reported(case: tuple[dict[str, str | None], str]) -> None:
    placed, expected = case
    problems = verify(CLUSTER, CONF, decision(placed))
    assert any(expected in p for p in problems), problems


def test_podgroup_flags_must_match_placements() -> None:
    d = decision(
        {"default/w-0": "zoned", "default/w-1": "zoned", "default/m-0": "zoned"},
        {"default/w": False},
    )
    assert any("pods placed but reported as not placed" in p for p in verify(CLUSTER, CONF, d))
    d = decision({}, {"default/w": True})
    assert any(
        "reported placed but no pending member was placed" in p for p in verify(CLUSTER, CONF, d)
    )


def test_check_raises_internal_error() -> None:
    from solver import InternalError, check

    bad = replace(schedule(CLUSTER), placements={"default/z": Placement(node="n1")})
    with pytest.raises(InternalError, match="failed verification"):
        check(CLUSTER, CONF, bad)


def test_a_godel_pod_moved_out_of_its_required_domain_is_reported() -> None:
    example = Path(__file__).resolve().parents[2] / "examples/topology/godel-job-affinity.yaml"
    m = load_manifests(str(example))
    conf = load_conf(None)
    d = solve(m, conf, engine="greedy")
    assert verify(m, conf, d) == []
    moved = next(k for k, p in d.placements.items() if p.node == "worker3")
    tampered = replace(d, placements={**d.placements, moved: Placement(node="worker5")})
    problems = verify(m, conf, tampered)
    assert any("span required topology domains" in p for p in problems), problems
