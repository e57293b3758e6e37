"""Volcano's allocate action on HyperNode trees, translated from upstream's table tests
(volcano-sh/volcano `pkg/scheduler/actions/allocate/allocate_test.go` at `ed72c7c8`), run on
both engines: the greedy makes upstream's choice; CP-SAT is feasible (verified inside
`schedule`) and no worse under the objective.

Most cases share upstream's two-tier fixture (4 nodes of 2 cpu / 4Gi):

                 s2 (tier 2)
               /            \\
        s0 (tier 1)        s1 (tier 1)
      s0-n1   s0-n2      s1-n3   s1-n4
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from tests.features.topology.hypernode.fixtures import (
    Objects,
    conf,
    hypernode,
    hypernode_count,
    nodes,
    run,
    task,
    vc_group,
)

ENGINES = ["greedy", "cpsat"]
FOUR = nodes(
    ("s0-n1", "2", "4Gi"), ("s0-n2", "2", "4Gi"), ("s1-n3", "2", "4Gi"), ("s1-n4", "2", "4Gi")
)
TWO_TIERS = [
    hypernode("s0", 1, ("s0-n1", "s0-n2"), tier_name="rack"),
    hypernode("s1", 1, ("s1-n3", "s1-n4"), tier_name="rack"),
    hypernode("s2", 2, children=("s0", "s1"), tier_name="spine"),
]
ONE_TIER = TWO_TIERS[:2]


def pods(group: str, count: int, running: tuple[str, ...] = ()) -> Objects:
    out = [task(f"p{i + 1}", group, "2", "4G", on=on) for i, on in enumerate(running)]
    out += [task(f"p{i + 1}", group, "2", "4G") for i in range(len(running), count)]
    return out


@dataclass
class Case:
    upstream: str  # the upstream test case name
    objects: Objects
    binds: int  # ExpectBindsNum (new placements)
    bind_map: dict[str, str] = field(default_factory=dict)  # ExpectBindMap


CASES = [
    # TestAllocateWithNetWorkTopologies
    Case(
        "soft network topology constrain, can allocate job when resources are enough",
        [*FOUR, *TWO_TIERS, vc_group("pg1", 3, "soft", 0), *pods("pg1", 3)],
        3,
    ),
    Case(
        "soft network topology constrain, can allocate job when minavailable < replicas",
        [*FOUR, *TWO_TIERS, vc_group("pg1", 2, "soft", 0), *pods("pg1", 4)],
        4,
    ),
    Case(
        "hard network topology constrain, can not allocate job when cross highestTierAllowed tier",
        [*FOUR, *TWO_TIERS, vc_group("pg1", 3, "hard", 1), *pods("pg1", 3)],
        0,
    ),
    Case(
        "hard network topology constrain, can allocate job when highestTierAllowed not reached",
        [*FOUR, *TWO_TIERS, vc_group("pg1", 3, "hard", 2), *pods("pg1", 3)],
        3,
    ),
    Case(
        "hard network topology constrain, can allocate job when multi hyperNodes are available",
        [*FOUR, *TWO_TIERS, vc_group("pg1", 2, "hard", 1), *pods("pg1", 2)],
        2,
        {"c1/p1": "s0-n1", "c1/p2": "s0-n2"},  # s0 and s1 tie: the first by name
    ),
    Case(
        "hard network topology constrain, can allocate job when minavailable < replicas",
        [*FOUR, *TWO_TIERS, vc_group("pg1", 1, "hard", 1), *pods("pg1", 2)],
        2,
    ),
    Case(
        "hard network topology constrain, two available hyperNodes, can allocate job to nodes "
        "with affinity",
        [
            *nodes(("s0-n1", "2", "4Gi")),
            *[
                o | {"metadata": {"name": "s1-n2", "labels": {"nodeRole": "master"}}}
                for o in nodes(("s1-n2", "2", "4Gi"))
            ],
            hypernode("s0", 0, ("s0-n1",)),
            hypernode("s1", 0, ("s1-n2",)),
            vc_group("pg1", 1, "hard", 1),
            task("p1", "pg1", "2", "4G", nodeRole="master"),
        ],
        1,
        {"c1/p1": "s1-n2"},
    ),
    Case(
        "hard network topology constrain and tasks in job rescheduled, can allocate job when "
        "highestTierAllowed not reached",
        [*FOUR, *TWO_TIERS, vc_group("pg1", 2, "hard", 2), *pods("pg1", 3, ("s0-n1", "s0-n2"))],
        1,
    ),
    Case(
        "hard network topology constrain and tasks in job rescheduled, can not allocate job "
        "when cross highestTierAllowed tier",
        [*FOUR, *TWO_TIERS, vc_group("pg1", 2, "hard", 1), *pods("pg1", 3, ("s0-n1", "s0-n2"))],
        0,
    ),
    Case(
        "hard network topology constrain and tasks in job rescheduled, can allocate job when "
        "LCAHyperNode is empty",
        [*FOUR, *ONE_TIER, vc_group("pg1", 2, "hard", 2), *pods("pg1", 3, ("s0-n1", "s0-n2"))],
        1,
    ),
    Case(
        "hard network topology constrain, can not allocate job when cross highestTierName tier",
        [*FOUR, *TWO_TIERS, vc_group("pg1", 3, "hard", tier_name="rack"), *pods("pg1", 3)],
        0,
    ),
    Case(
        "hard network topology constrain, can allocate job when the tier corresponding to "
        "highestTierName not reached",
        [*FOUR, *TWO_TIERS, vc_group("pg1", 3, "hard", tier_name="spine"), *pods("pg1", 3)],
        3,
    ),
    Case(
        "hard network topology with highestTierName constrain and tasks in job rescheduled, can "
        "allocate job when here is no corresponding highestTierAllowed for highestTierName",
        [
            *FOUR,
            *ONE_TIER,
            vc_group("pg1", 2, "hard", tier_name="volcano.sh/hypercluster"),
            *pods("pg1", 3, ("s0-n1", "s0-n2")),
        ],
        1,
    ),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CASES, ids=[c.upstream for c in CASES])
def test_allocate_with_network_topologies(case: Case, engine: str) -> None:
    decision = run(case.objects, engine)
    assert len(decision.placed) == case.binds
    if engine == "greedy":
        for pod_key, node_name in case.bind_map.items():
            assert decision.placed[pod_key] == node_name
    else:
        greedy = run(case.objects, "greedy")
        assert decision.objective >= greedy.objective  # CP-SAT no worse under the objective


# TestNodeLevelScoreWithNetWorkTopologies: pg2's running pods fill half of s0, binpack puts
# pg1 on the fuller HyperNode and, node by node, on the fuller nodes.
NODE_LEVEL = [
    *nodes(
        ("s0-n1", "4", "8Gi"), ("s0-n2", "8", "16Gi"), ("s1-n3", "4", "8Gi"), ("s1-n4", "8", "16Gi")
    ),
    *TWO_TIERS,
    vc_group("pg1", 2, "hard", 1),
    vc_group("pg2", 2, None),
    task("p1", "pg1", "2", "4Gi"),
    task("p2", "pg1", "4", "8Gi"),
    task("p3", "pg2", "2", "4Gi", on="s0-n1"),
    task("p4", "pg2", "4", "8Gi", on="s0-n2"),
]


@pytest.mark.parametrize("engine", ENGINES)
def test_node_level_score_with_network_topologies(engine: str) -> None:
    """`hard network topology constrain, allocate job to highest score hypeNode with node
    level binpack`."""
    decision = run(NODE_LEVEL, engine, conf("binpack"))
    assert decision.placed == {"c1/p1": "s0-n1", "c1/p2": "s0-n2"}


# TestHyperNodeBinpackWithNetWorkTopologies: three tier-1 HyperNodes of two 4-cpu nodes under
# s3 (tier 2); 4 pods of 4 cpu fit in no tier-1 HyperNode, so s3; the LCA node score keeps
# the pods two by two: [2, 2].
#
#                        s3 (tier 2)
#              /              |              \
#        s0 (tier 1)     s1 (tier 1)     s2 (tier 1)
#      s0-n1  s0-n2    s1-n3  s1-n4    s2-n5  s2-n6
SIX = nodes(*((f"s{i // 2}-n{i + 1}", "4", "8Gi") for i in range(6)))
BINPACK_TREE = [
    hypernode("s0", 1, ("s0-n1", "s0-n2")),
    hypernode("s1", 1, ("s1-n3", "s1-n4")),
    hypernode("s2", 1, ("s2-n5", "s2-n6")),
    hypernode("s3", 2, children=("s0", "s1", "s2")),
]


@pytest.mark.parametrize("engine", ENGINES)
def test_hypernode_binpack_with_network_topologies(engine: str) -> None:
    """`hard network topology constrain, allocate task to node under LCAHyperNode`."""
    objects = [
        *SIX,
        *BINPACK_TREE,
        vc_group("pg1", 4, "hard", 2),
        *(task(f"p{i}", "pg1", "4", "8Gi") for i in range(1, 5)),
    ]
    decision = run(objects, engine)
    groups = {"s0": ("s0-n1", "s0-n2"), "s1": ("s1-n3", "s1-n4"), "s2": ("s2-n5", "s2-n6")}
    assert len(decision.placed) == 4
    assert hypernode_count(decision, groups)[:2] == [2, 2]
