"""Table tests translated from kubernetes-sigs/kueue `pkg/cache/scheduler/tas_cache_test.go`
TestFindTopologyAssignments (snapshot ff69552e79ad; case names verbatim), run on both
engines: the greedy must give upstream's exact TopologyAssignment (or its failure message),
CP-SAT must be verified (inside `schedule`) and no worse under the objective tiers.

Feature gates are that Kueue version's defaults (TASProfileMixed on: unconstrained pod sets
use LeastFreeCapacity); cases that set other gates (balanced placement, affinity scoring,
multi-layer slices, leader/worker groups) are not translated.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from solver.decision import Decision
from tests.builders import model, pod, podgroup
from tests.features.topology.kueue.helpers import (
    BINARY,
    BLOCK,
    DEFAULT,
    HOST,
    PREFERRED,
    RACK,
    REQUIRED,
    SCATTERED,
    SLICE_LEVEL,
    SLICE_SIZE,
    THREE,
    TWO,
    UNCONSTRAINED,
    assigned,
    cluster,
    nodes_of,
    run,
    topology,
)


@dataclass(frozen=True)
class Case:
    nodes: list[str]
    levels: tuple[str, ...]
    count: int
    request: dict[str, str]
    want: dict[str, int] = field(default_factory=dict)
    reason: str = ""
    labels: tuple[str, ...] = THREE


def slices(level: str, size: int, **mode: str) -> dict[str, str]:
    return {SLICE_LEVEL: level, SLICE_SIZE: str(size), **mode}


CASES: dict[str, Case] = {
    #       b1
    #   /   |    \
    #  r1   r2   r3
    #  |     |    |   \   \     \
    # x3:2,x5:2,x1:1,x6:1,x2:1,x4:1
    "minimize the number of used racks before optimizing the number of nodes; BestFit": Case(
        ["b1/r1/x3:2", "b1/r2/x5:2", "b1/r3/x1:1", "b1/r3/x6:1", "b1/r3/x2:1", "b1/r3/x4:1"],
        THREE,
        4,
        {REQUIRED: BLOCK},
        {"x1": 1, "x6": 1, "x2": 1, "x4": 1},
    ),
    #        b1
    #         |
    #        r1
    #    /    |    \
    # x3:2, x5:1, x1:1
    "choose the node that can accommodate all Pods": Case(
        ["b1/r1/x3:2", "b1/r1/x5:1", "b1/r1/x1:1"], THREE, 2, {REQUIRED: BLOCK}, {"x3": 2}
    ),
    "unconstrained; 6 pods fit into hosts scattered across the whole datacenter even they "
    "could fit into single rack; BestFit": Case(
        SCATTERED,
        THREE,
        6,
        {UNCONSTRAINED: "true"},
        {"x1": 1, "x3": 1, "x5": 1, "x2": 1, "x6": 2},
    ),
    "unconstrained; a single pod fits into each host; LeastFreeCapacity; TASProfileMixed": Case(
        DEFAULT, THREE, 1, {UNCONSTRAINED: "true"}, {"x3": 1}
    ),
    "block required; 4 pods fit into one host each; BestFit": Case(
        BINARY, THREE, 4, {REQUIRED: BLOCK}, {"x3": 1, "x5": 1, "x1": 1, "x6": 1}
    ),
    "host required; single Pod fits in the host; BestFit": Case(
        DEFAULT, THREE, 1, {REQUIRED: HOST}, {"x3": 1}
    ),
    "rack required; single Pod fits in a rack; BestFit": Case(
        DEFAULT, TWO, 1, {REQUIRED: RACK}, {"b1/r1": 1}
    ),
    "rack required; multiple Pods fit in a rack; BestFit": Case(
        DEFAULT, TWO, 3, {REQUIRED: RACK}, {"b1/r2": 3}
    ),
    # b1:2  b2:1  b3:4 (one level)
    "block preferred; Pods fit in 2 blocks; BestFit": Case(
        ["b1:2", "b2:1", "b3:4"], (BLOCK,), 5, {PREFERRED: BLOCK}, {"b2": 1, "b3": 4}
    ),
    "rack required; multiple Pods fit in some racks; BestFit": Case(
        DEFAULT, TWO, 2, {REQUIRED: RACK}, {"b2/r2": 2}
    ),
    "rack required; too many pods to fit in any rack; BestFit": Case(
        DEFAULT,
        TWO,
        4,
        {REQUIRED: RACK},
        reason="topology 'default' allows to fit only 3 out of 4 pod(s)",
    ),
    "block required; single Pod fits in a block and a single rack; BestFit": Case(
        DEFAULT, TWO, 1, {REQUIRED: BLOCK}, {"b2/r1": 1}
    ),
    "block required; Pods fit in a block spread across two racks; BestFit": Case(
        DEFAULT, TWO, 4, {REQUIRED: BLOCK}, {"b1/r1": 1, "b1/r2": 3}
    ),
    "block required; too many Pods to fit requested; BestFit": Case(
        DEFAULT,
        TWO,
        5,
        {REQUIRED: BLOCK},
        reason="topology 'default' allows to fit only 4 out of 5 pod(s)",
    ),
    "rack preferred; but only block can accommodate the workload; BestFit": Case(
        DEFAULT, TWO, 4, {PREFERRED: RACK}, {"b1/r1": 1, "b1/r2": 3}
    ),
    "rack preferred; but only multiple blocks can accommodate the workload; BestFit": Case(
        DEFAULT, TWO, 6, {PREFERRED: RACK}, {"b1/r1": 1, "b1/r2": 3, "b2/r2": 2}
    ),
    "block preferred; but only multiple blocks can accommodate the workload; BestFit": Case(
        DEFAULT, TWO, 6, {PREFERRED: BLOCK}, {"b1/r1": 1, "b1/r2": 3, "b2/r2": 2}
    ),
    "block preferred; but the workload cannot be accommodate in entire topology; BestFit": Case(
        DEFAULT,
        TWO,
        10,
        {PREFERRED: BLOCK},
        reason="topology 'default' allows to fit only 7 out of 10 pod(s)",
    ),
    #   b1 / r1 / x3:3, x5:3, x1:3
    "block required for podset; host required for slices; BestFit": Case(
        ["b1/r1/x3:3", "b1/r1/x5:3", "b1/r1/x1:3"],
        THREE,
        6,
        slices(HOST, 2, **{REQUIRED: BLOCK}),
        {"x1": 2, "x3": 2, "x5": 2},
    ),
    #   b1 / r1 / x3:6 x5:5 x1:4 x6:2
    "block required for podset; host required for slices; prioritize more free slice "
    "capacity first and then tight fit; BestFit": Case(
        ["b1/r1/x3:6", "b1/r1/x5:5", "b1/r1/x1:4", "b1/r1/x6:2"],
        THREE,
        12,
        slices(HOST, 2, **{REQUIRED: BLOCK}),
        {"x1": 4, "x3": 6, "x6": 2},
    ),
    #   b1 / r1 / x3:3, x5:2, x1:2
    "block required for podset; host required for slices; select domains with tight fit; "
    "BestFit": Case(
        ["b1/r1/x3:3", "b1/r1/x5:2", "b1/r1/x1:2"],
        THREE,
        4,
        slices(HOST, 2, **{REQUIRED: BLOCK}),
        {"x1": 2, "x5": 2},
    ),
    #          b1               b2
    #       /      \             |
    #     r1        r2           r1
    #    /  \     /  |  \       /  \
    #   x3  x5   x1  x6  x2    x4  x7      (1 cpu each)
    "block required for podset; rack required for slices; BestFit": Case(
        [
            *("b1/r1/x3:1", "b1/r1/x5:1", "b1/r2/x1:1", "b1/r2/x6:1", "b1/r2/x2:1"),
            "b2/r1/x4:1",
            "b2/r1/x7:1",
        ],
        THREE,
        4,
        slices(RACK, 2, **{REQUIRED: BLOCK}),
        {"x3": 1, "x5": 1, "x1": 1, "x2": 1},
    ),
    "block preferred for podset; rack required for slices; BestFit": Case(
        DEFAULT, THREE, 4, slices(RACK, 2, **{PREFERRED: BLOCK}), {"x1": 1, "x5": 1, "x4": 2}
    ),
    #   b1 / r1 / x3:4, x5:3, x1:2
    "block required for podset; host required for slices; optimize last domain; BestFit": Case(
        ["b1/r1/x3:4", "b1/r1/x5:3", "b1/r1/x1:2"],
        THREE,
        6,
        slices(HOST, 2, **{REQUIRED: BLOCK}),
        {"x1": 2, "x3": 4},
    ),
    #        b1                  b2
    #        |                    |
    #        r1                   r1
    #    /   |   \                |
    #  x3:3, x5:3, x1:3          x6:6
    "block preferred for podset; host required for slices; 2 blocks with unbalanced "
    "subdomains; BestFit": Case(
        ["b1/r1/x3:3", "b1/r1/x5:3", "b1/r1/x1:3", "b2/r1/x6:6"],
        THREE,
        12,
        slices(HOST, 3, **{PREFERRED: BLOCK}),
        {"x1": 3, "x3": 3, "x6": 6},
    ),
}


def _tiers_not_worse(better: Decision, than: Decision) -> None:
    """`better` is no worse than `than` under the packed objective (lexicographic tiers)."""
    assert better.objective >= than.objective, (better.tiers, than.tiers)


@pytest.mark.parametrize("name", sorted(CASES))
def test_find_topology_assignments(name: str) -> None:
    case = CASES[name]
    question = cluster(case.nodes, case.levels, case.count, case.request, labels=case.labels)
    greedy = run(question, "greedy")
    if case.reason:
        assert not greedy.podgroups["default/job"].placed
        assert case.reason in greedy.podgroups["default/job"].reason
        assert assigned(greedy) == {}
    else:
        assert greedy.podgroups["default/job"].placed, greedy.podgroups
        assert assigned(greedy) == case.want
    cpsat = run(question, "cpsat")  # verify runs inside schedule
    _tiers_not_worse(cpsat, greedy)
    if not case.reason:
        assert cpsat.podgroups["default/job"].placed
    if case.request.get(SLICE_LEVEL) == HOST:  # whole slices per host, checked here too
        size = int(case.request[SLICE_SIZE])
        assert all(c % size == 0 for c in assigned(cpsat).values()), assigned(cpsat)


def test_two_podsets_with_overlapping_domain() -> None:
    """TestFindTopologyAssignments "find topology assignment for two podsets with overlapping
    domain": blocks b1, b2, b3 of 2 cpu; two pod sets of one workload, 3 pods each, preferred
    block. The second is placed against the room the first leaves (Kueue's assumed usage)."""
    nodes = nodes_of(["b1:2", "b2:2", "b3:2"], (BLOCK,))
    pods = [
        pod(f"{name}-{i}")
        .label("scheduling.x-k8s.io/pod-group", "job")
        .label("kueue.x-k8s.io/podset", name)
        .annotate(PREFERRED, BLOCK)
        .obj()
        for name in ("podset1", "podset2")
        for i in range(3)
    ]
    question = model(*nodes, *topology((BLOCK,)), podgroup("job", 6), *pods)
    greedy = run(question, "greedy")
    got = {a.pod_set: {"/".join(v): c for v, c in a.domains} for a in greedy.topology_assignments}
    assert got == {"podset1": {"b1": 2, "b2": 1}, "podset2": {"b2": 1, "b3": 2}}
    _tiers_not_worse(run(question, "cpsat"), greedy)
