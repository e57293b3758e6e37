"""CP-SAT with network topology: the reference's worked examples agree with the greedy on
feasibility, never score worse, and honour MustGather domains and podCountMultiple.

    ClusterTopologyLayer                       (Koordinator's fake tree, 1 slot per node)
    ├── s1 ─┬─ b1: node-1, node-8
    │       └─ b2: node-2, node-7
    └── s2 ─┬─ b3: node-3, node-6
            └─ b4: node-4, node-5
"""

from __future__ import annotations

from typing import Any

import pytest

from solver import SchedulerConf, compile_problem, schedule, solve, verify
from solver.decision import Decision
from solver.features.topology.cpsat import layout_ranks
from tests.builders import BLOCK, SPINE, gather, model, node, pod, podgroup, spine_block_topology
from tests.features.topology.koordinator.test_gather import (
    FAKE,
    MUST_BOTH,
    PREFER_BOTH,
    job,
    solver_nodes,
    tree_nodes,
)

CONF = SchedulerConf.default()


def both(*objects: dict[str, Any]) -> tuple[Decision, Decision]:
    cluster = model(*objects)
    greedy = schedule(cluster, CONF, engine="greedy")
    exact = solve(cluster, CONF, engine="cpsat", workers=1, time_limit=20)
    assert verify(cluster, CONF, exact) == []
    assert exact.objective >= greedy.objective
    return greedy, exact


def blocks(cluster_objects: list[dict[str, Any]], d: Decision) -> set[str]:
    labels = {
        o["metadata"]["name"]: o["metadata"]["labels"]
        for o in cluster_objects
        if o["kind"] == "Node"
    }
    return {labels[n][BLOCK] for n in d.placed.values()}


@pytest.mark.parametrize(
    ("size", "cpu", "spec", "placeable"),
    [
        (4, "16", PREFER_BOTH, True),
        (2, "16", MUST_BOTH, True),
        (2, "8", MUST_BOTH, True),
        (3, "16", MUST_BOTH, False),
        (5, "16", gather(("SpineLayer", "MustGather")), False),
    ],
    ids=[
        "prefer-4",
        "must-block-2",
        "two-per-node",
        "must-block-3-too-big",
        "must-spine-5-too-big",
    ],
)
def test_fake_tree_feasibility_agrees(
    size: int, cpu: str, spec: dict[str, str], placeable: bool
) -> None:
    nodes = tree_nodes(FAKE)
    greedy, exact = both(spine_block_topology(), *nodes, *job("job", size, cpu, **spec))
    assert bool(greedy.placed) == bool(exact.placed) == placeable
    if placeable:
        assert exact.tiers == greedy.tiers  # the greedy is optimal here; CP-SAT proves it
        assert exact.status == "OPTIMAL"
    else:
        assert exact.status == "INFEASIBLE"


@pytest.mark.parametrize(
    ("size", "spec"),
    [
        (15, gather()),
        (16, gather(("BlockLayer", "PreferGather", 8))),
        (20, gather(("BlockLayer", "PreferGather", 8))),
    ],
    ids=["15-pods", "block-m8", "block-m8-short"],
)
def test_solver_examples_pod_count_multiple(size: int, spec: dict[str, str]) -> None:
    objs = [spine_block_topology(), *solver_nodes(), *job("w", size, cpu="1", **spec)]
    greedy, exact = both(*objs)
    assert bool(greedy.placed) == bool(exact.placed)
    if "block-m8" in str(spec) and exact.placed:
        per_block: dict[str, int] = {}
        for n in exact.placed.values():
            b = next(o for o in objs if o["kind"] == "Node" and o["metadata"]["name"] == n)[
                "metadata"
            ]["labels"][BLOCK]
            per_block[b] = per_block.get(b, 0) + 1
        assert all(v % 8 == 0 for v in per_block.values()), per_block


def test_cpsat_uses_one_block_when_one_can_hold_the_gang() -> None:
    # b1 has 2 free slots, b2 3, b3 and b4 1 each (4 one-cpu slots per node, partly used).
    objs: list[dict[str, Any]] = [spine_block_topology()]
    free = {"b1": [1, 1], "b2": [2, 1], "b3": [1], "b4": [1]}
    for b, slots in free.items():
        spine = "s1" if b in ("b1", "b2") else "s2"
        for i, s in enumerate(slots):
            name = f"{b}-n{i}"
            objs.append(node(name).cpu("4").label(SPINE, spine).label(BLOCK, b).obj())
            objs.append(pod(f"busy-{name}").requests(cpu=str(4 - s)).on(name).obj())
    objs += [
        podgroup("g", 3, **gather(("SpineLayer", "PreferGather"))),
        *[pod(f"g-{i}").group("g").requests(cpu="1").obj() for i in range(3)],
    ]
    greedy, exact = both(*objs)
    assert blocks(objs, exact) == {"b2"} == blocks(objs, greedy)
    assert exact.tiers["domains:BlockLayer"] == 1 and exact.tiers["domains:SpineLayer"] == 1


def test_must_gather_spine_is_hard_in_cpsat() -> None:
    # Each spine has 3 slots; 4 pods MustGather Spine cannot be placed by either engine.
    nodes = tree_nodes(FAKE)
    busy = [
        pod("busy-1").requests(cpu="16").on("node-1").obj(),
        pod("busy-4").requests(cpu="16").on("node-4").obj(),
    ]
    greedy, exact = both(
        spine_block_topology(),
        *nodes,
        *busy,
        *job("job", 4, "16", **gather(("SpineLayer", "MustGather"))),
    )
    assert greedy.placed == {} == exact.placed
    assert exact.status == "INFEASIBLE"


#   s1 ─┬─ b1: 1 + 1 free slots          MustGather Block, 2 pods: no node holds both, so two
#       └─ b2: 1 + 1 + 1 free slots      nodes either way; b1 (2 slots) is the tightest block and
#                                        the gather_slack tier makes CP-SAT pick it, as the greedy does
def test_cpsat_bin_packs_the_must_gather_domain() -> None:
    objs: list[dict[str, Any]] = [spine_block_topology()]
    for b, slots in {"b1": [1, 1], "b2": [1, 1, 1]}.items():
        for i, s in enumerate(slots):
            name = f"{b}-n{i}"
            objs.append(node(name).cpu("4").label(SPINE, "s1").label(BLOCK, b).obj())
            objs.append(pod(f"busy-{name}").requests(cpu=str(4 - s)).on(name).obj())
    objs += job("g", 2, cpu="1", **gather(("BlockLayer", "MustGather")))
    greedy, exact = both(*objs)
    assert blocks(objs, exact) == {"b1"} == blocks(objs, greedy)
    assert exact.tiers["gather_slack"] == 2 == greedy.tiers["gather_slack"]


def test_layout_ranks_keeps_consecutive_ranks_in_one_block() -> None:
    import numpy as np

    objs = [spine_block_topology(), *tree_nodes(FAKE), *job("job", 4, "16", **PREFER_BOTH)]
    problem = compile_problem(model(*objs), CONF)
    names = list(problem.node_names)
    scattered = [np.array([names.index(n) for n in ("node-2", "node-1", "node-7", "node-8")])]
    (laid,) = layout_ranks(problem, scattered)
    # b1 = node-1, node-8 first (ranks 0, 1), then b2 = node-2, node-7 (ranks 2, 3)
    assert [names[n] for n in laid] == ["node-1", "node-8", "node-2", "node-7"]


def test_cpsat_prefers_one_node_like_koordinator() -> None:
    # b1 offers 1 + 1 slots, b2 one node with 2: the lowest layer that holds both pods is a
    # node, so both engines put them together on b2's node.
    objs: list[dict[str, Any]] = [spine_block_topology()]
    for b, slots in {"b1": [1, 1], "b2": [2]}.items():
        for i, s in enumerate(slots):
            name = f"{b}-n{i}"
            objs.append(node(name).cpu("4").label(SPINE, "s1").label(BLOCK, b).obj())
            objs.append(pod(f"busy-{name}").requests(cpu=str(4 - s)).on(name).obj())
    objs += job("g", 2, cpu="1", **gather(("BlockLayer", "MustGather")))
    greedy, exact = both(*objs)
    assert set(exact.placed.values()) == {"b2-n0"} == set(greedy.placed.values())
    assert exact.tiers["domains:NodeTopologyLayer"] == 1
