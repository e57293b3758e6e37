"""Topology-aware greedy placement: Koordinator's offer-slot gather and Godel's NodeGroups.

Every case is a worked example of `reference/koordinator.md` §3.4/§5 or
`reference/godel_kueue.md` §1, run end to end (manifests -> Decision, verified).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver import SchedulerConf, schedule, solve, verify
from solver.compile import compile_problem
from solver.decision import Decision
from solver.features.topology import GatherBlock, TopologyBlock
from solver.model import ClusterModel
from tests.builders import (
    BLOCK,
    INDEX_ANNOTATION,
    SPINE,
    gather,
    groups_annotation,
    model,
    node,
    pod,
    podgroup,
    spine_block_topology,
)

Objects = list[dict[str, Any]]


def run(*objects: dict[str, Any]) -> Decision:
    return schedule(model(*objects), engine="greedy")  # verified inside


def placed(d: Decision) -> dict[str, str]:
    return {k.split("/", 1)[1]: v for k, v in d.placed.items()}


def tree_nodes(layout: dict[str, dict[str, list[str]]], cpu: str = "16") -> Objects:
    return [
        node(n).cpu(cpu).label(SPINE, s).label(BLOCK, b).obj()
        for s, blocks in layout.items()
        for b, names in blocks.items()
        for n in names
    ]


def job(
    name: str, size: int, cpu: str = "16", min_member: int | None = None, **ann: str
) -> Objects:
    pods = [pod(f"{name}-{i}").group(name).requests(cpu=cpu).obj() for i in range(1, size + 1)]
    return [podgroup(name, size if min_member is None else min_member, **ann), *pods]


# Koordinator's FakeClusterNetworkTopology (§5): nodes 16 cpu, pods 16 cpu -> 1 slot per node.
#
#   ClusterTopologyLayer
#   ├── s1 ─┬─ b1: node-1, node-8
#   │       └─ b2: node-2, node-7
#   └── s2 ─┬─ b3: node-3, node-6
#           └─ b4: node-4, node-5
FAKE = {
    "s1": {"b1": ["node-1", "node-8"], "b2": ["node-2", "node-7"]},
    "s2": {"b3": ["node-3", "node-6"], "b4": ["node-4", "node-5"]},
}
PREFER_BOTH = gather(("SpineLayer", "PreferGather"), ("BlockLayer", "PreferGather"))
MUST_BOTH = gather(("SpineLayer", "MustGather"), ("BlockLayer", "MustGather"))


@pytest.mark.parametrize(
    ("case", "size", "cpu", "spec", "expected"),
    [
        # blocks hold 2 < 4: candidates s1, s2 tie -> s1; inside: b1 then b2, node name order
        (
            "prefer-4",
            4,
            "16",
            PREFER_BOTH,
            {"job-1": "node-1", "job-2": "node-8", "job-3": "node-2", "job-4": "node-7"},
        ),
        # deepest MustGather = Block -> b1
        ("must-block-2", 2, "16", MUST_BOTH, {"job-1": "node-1", "job-2": "node-8"}),
        # 8-cpu pods: 2 slots per node -> candidates are nodes -> both on node-1
        ("two-per-node", 2, "8", MUST_BOTH, {"job-1": "node-1", "job-2": "node-1"}),
    ],
)
def test_fake_tree_worked_examples(
    case: str, size: int, cpu: str, spec: dict[str, str], expected: dict[str, str]
) -> None:
    d = run(spine_block_topology(), *tree_nodes(FAKE), *job("job", size, cpu, **spec))
    assert placed(d) == expected, case


def test_failure_message_lists_must_gather_domains_and_the_fit_error() -> None:
    # node-1 and node-4 are busy: s1 offers 3, s2 offers 3, the job needs 4 in one spine.
    busy = [pod(f"existing-{i}").requests(cpu="16").on(f"node-{i}").obj() for i in (1, 4)]
    d = run(
        spine_block_topology(),
        *tree_nodes(FAKE),
        *busy,
        *job("job", 4, **gather(("SpineLayer", "MustGather"))),
    )
    assert d.placed == {}
    assert d.podgroups["default/job"].reason == (
        # the certificate (solver/why), then Koordinator's own message
        "gang default/job needs 64 cpu inside one SpineLayer domain (MustGather); the largest "
        "offers 48 (s1), the next 48 (s2); "
        "no candidate topology nodes can accommodate job, desiredOfferSlot: 4, "
        "topology topologyNode SpineLayer/s1: 3;topology topologyNode SpineLayer/s2: 3, "
        "0/8 nodes are available: 8 Insufficient cpu."
    )


# solver_test (§3.4): one spine s1 = b1{n1: 5, n2: 7}, b2{n3: 6, n4: 4} offer slots.
#
#   s1 ─┬─ b1: n1 (5 slots), n2 (7 slots)
#       └─ b2: n3 (6 slots), n4 (4 slots)
SOLVER = {"s1": {"b1": ["n1", "n2"], "b2": ["n3", "n4"]}}
SLOTS = {"n1": 5, "n2": 7, "n3": 6, "n4": 4}


def solver_nodes() -> Objects:
    return [
        node(n).cpu(str(slots)).label(SPINE, "s1").label(BLOCK, b).obj()
        for b, names in SOLVER["s1"].items()
        for n in names
        for slots in [SLOTS[n]]
    ]


def per_node(d: Decision) -> dict[str, int]:
    out: dict[str, int] = {}
    for n in d.placed.values():
        out[n] = out.get(n, 0) + 1
    return dict(sorted(out.items()))


@pytest.mark.parametrize(
    ("case", "size", "spec", "expected"),
    [
        # no multiple: the spine is the only candidate; roomiest block, roomiest node first
        ("15-pods", 15, gather(), {"n1": 5, "n2": 7, "n3": 3}),
        # node multiple 4: 5,7,6,4 -> 4,4,4,4; blocks 8, 8; spine 16
        (
            "node-m4",
            16,
            gather(("NodeTopologyLayer", "PreferGather", 4)),
            {f"n{i}": 4 for i in (1, 2, 3, 4)},
        ),
        # block multiple 8: blocks 12 -> 8 and 10 -> 8; n2 7, n1 1, n3 6, n4 2
        (
            "block-m8",
            16,
            gather(("BlockLayer", "PreferGather", 8)),
            {"n1": 1, "n2": 7, "n3": 6, "n4": 2},
        ),
    ],
)
def test_solver_examples_with_pod_count_multiple(
    case: str, size: int, spec: dict[str, str], expected: dict[str, int]
) -> None:
    d = run(spine_block_topology(), *solver_nodes(), *job("w", size, cpu="1", **spec))
    assert per_node(d) == expected, case


def test_pod_count_multiple_shortfall_fails_with_the_constraints_in_the_message() -> None:
    # 20 wanted, only 16 multiple-of-8 slots: no candidate
    d = run(
        spine_block_topology(),
        *solver_nodes(),
        *job("w", 20, cpu="1", **gather(("BlockLayer", "PreferGather", 8))),
    )
    assert d.placed == {}
    reason = d.podgroups["default/w"].reason
    assert reason.startswith(
        "no candidate topology nodes can accommodate job, desiredOfferSlot: 20, "
        "topology topologyNode ClusterTopologyLayer/: 16, 0/4 nodes are available: "
    )
    assert reason.endswith("; podCountMultiple constraints: BlockLayer=8")


# Bin-packing with parents (issue #2748): a 3-pod job picks the block whose slots are closest
# to 3; among equal blocks, the one whose spine has fewer free slots.
#
#   s1 ─┬─ b0: 4 slots        s2 ─── b2: 3 slots
#       └─ b1: 3 slots
#   -> b1 and b2 both offer 3; s2 (3) < s1 (7) -> b2
def test_candidate_order_compares_parents_on_ties() -> None:
    layout = {"s1": {"b0": ["a1"], "b1": ["a2"]}, "s2": {"b2": ["a3"]}}
    cpus = {"a1": "4", "a2": "3", "a3": "3"}
    nodes = [
        node(n).cpu(cpus[n]).label(SPINE, s).label(BLOCK, b).obj()
        for s, blocks in layout.items()
        for b, names in blocks.items()
        for n in names
    ]
    d = run(spine_block_topology(), *nodes, *job("j", 3, cpu="1", **gather()))
    assert set(d.placed.values()) == {"a3"}


def test_index_annotation_orders_ranks_across_domains() -> None:
    # 4 pods over two 2-slot blocks (1 slot per node); index order, not name order: w-10 is
    # rank 2 (index 10 after 2 and 3 ... ) — consecutive ranks share a block.
    names_index = {"w-2": "0", "w-10": "1", "w-3": "2", "w-1": None}
    pods = []
    for name, index in names_index.items():
        p = pod(name).group("w").requests(cpu="16")
        if index is not None:
            p.annotate(INDEX_ANNOTATION, index)
        pods.append(p.obj())
    d = run(spine_block_topology(), *tree_nodes(FAKE), podgroup("w", 4, **gather()), *pods)
    # order: w-2 (0), w-10 (1), w-3 (2), w-1 (no index) over s1: b1 node-1, node-8; b2 node-2, node-7
    assert placed(d) == {"w-2": "node-1", "w-10": "node-8", "w-3": "node-2", "w-1": "node-7"}


def test_gang_group_is_gathered_as_one_unit_with_the_first_gangs_spec() -> None:
    group = groups_annotation("default/a-master", "default/b-worker")
    objects = [
        podgroup("a-master", 1, **group, **gather(("BlockLayer", "MustGather"))),
        podgroup("b-worker", 2, **group),  # no spec: the first gang's applies
        pod("m-0").group("a-master").requests(cpu="8").obj(),
        *(pod(f"w-{i}").group("b-worker").requests(cpu="8").obj() for i in range(2)),
    ]
    d = run(spine_block_topology(), *tree_nodes(FAKE), *objects)
    nodes = set(d.placed.values())
    assert len(d.placed) == 3 and nodes <= {"node-1", "node-8"}


def test_existing_peers_attract_the_job() -> None:
    selector = "scheduling.koordinator.sh/network-topology-selector"
    peer = pod("peer").requests(cpu="1").annotate(selector, "team-a").on("node-4").obj()
    pods = [
        pod(f"j-{i}").group("j").requests(cpu="8").annotate(selector, "team-a").obj()
        for i in range(2)
    ]
    d = run(spine_block_topology(), *tree_nodes(FAKE), peer, podgroup("j", 2, **gather()), *pods)
    # b4 (node-4, node-5) holds the peer: without it b1/node-1 would win
    assert set(d.placed.values()) <= {"node-4", "node-5"}


def test_nodes_missing_a_label_are_out_of_the_tree_unless_only_the_block_is_missing() -> None:
    nodes = [
        node("a-1").cpu("16").label(SPINE, "s1").label(BLOCK, "b1").obj(),
        node("a-2").cpu("16").label(SPINE, "s1").obj(),  # virtual block "a-2"
        node("a-3").cpu("16").label(BLOCK, "b1").obj(),  # no spine: out of the tree
    ]
    d = run(spine_block_topology(), *nodes, *job("j", 2, **gather()))
    assert set(d.placed.values()) == {"a-1", "a-2"}
    d = run(spine_block_topology(), *nodes, *job("j", 3, **gather()))
    assert d.placed == {}
    assert "1 node(s) are not in the network topology tree" in d.podgroups["default/j"].reason


def test_no_topology_object_blocks_only_topology_aware_gangs() -> None:
    d = run(*tree_nodes(FAKE), *job("t", 1, **gather()), *job("plain", 1))
    assert d.placed == {"default/plain-1": "node-1"}
    assert d.podgroups["default/t"].reason.startswith("no cluster network topology")


def test_unknown_must_gather_layer_is_a_counted_reason_not_an_error() -> None:
    # seed 001's second example writes "spineLayer": not a layer of the CR
    d = run(
        spine_block_topology(),
        *tree_nodes(FAKE),
        *job("j", 2, **gather(("spineLayer", "MustGather"))),
    )
    assert d.placed == {}
    assert "MustGather layer 'spineLayer' is not a layer" in d.podgroups["default/j"].reason
    assert any("spineLayer" in n for n in d.notes)


def test_malformed_spec_is_ignored_with_a_note() -> None:
    spec = {"gang.scheduling.koordinator.sh/network-topology-spec": "{not json"}
    d = run(spine_block_topology(), *tree_nodes(FAKE), *job("j", 2, **spec))
    assert len(d.placed) == 2  # placed as an ordinary gang
    assert any("ignored, as Koordinator does" in n for n in d.notes)


def test_units_without_topology_are_unchanged_by_the_topology_plugins() -> None:
    objects = [spine_block_topology(), *tree_nodes(FAKE, cpu="32"), *job("a", 5, cpu="8")]
    with_plugins = schedule(model(*objects), engine="greedy")
    conf = SchedulerConf.default()
    from solver.config import PluginConf, TierConf

    without = SchedulerConf(
        tiers=(
            TierConf(
                plugins=[
                    PluginConf(name=p.name)
                    for p in conf.tiers[0].plugins
                    if p.name not in ("network-topology", "job-affinity")
                ]
            ),
        )
    )
    assert with_plugins.placed == schedule(model(*objects), without, engine="greedy").placed


# ----------------------------------------------------------------------------- Godel


#   mainnet 10.76.0.0 ─┬─ micronet 10.76.64.0: worker (8 cpu), worker4 (8 cpu)
#                      └─ micronet 10.76.65.0: worker3 (8 cpu)
#   mainnet 10.25.0.0 ──── micronet 10.25.162.0: worker2 (8 cpu)
#   mainnet 10.53.0.0 ──── micronet 10.53.16.0: worker5 (8 cpu)
@st.composite
def gather_cases(draw: st.DrawFn) -> tuple[ClusterModel, bool]:
    """2 spines × 2-3 blocks × 1-3 nodes, partly loaded, one gang of 1 or 2 pod types."""
    objects: Objects = [spine_block_topology()]
    block_slots: list[int] = []
    for s in range(2):
        for b in range(draw(st.integers(2, 3))):
            total = 0
            for i in range(draw(st.integers(1, 3))):
                name = f"n-{s}-{b}-{i}"
                cpu = draw(st.integers(1, 8))
                objects.append(
                    node(name).cpu(str(cpu)).label(SPINE, f"s{s}").label(BLOCK, f"b{s}{b}").obj()
                )
                used = draw(st.integers(0, cpu))
                if used:
                    objects.append(pod(f"busy-{name}").requests(cpu=str(used)).on(name).obj())
                total += cpu - used
            block_slots.append(total)
    size = draw(st.integers(1, 10))
    strategy = draw(st.sampled_from(["MustGather", "PreferGather"]))
    layer = draw(st.sampled_from(["BlockLayer", "SpineLayer"]))
    objects.append(podgroup("g", size, **gather((layer, strategy))))
    for i in range(size):
        p = pod(f"g-{i}").group("g").requests(cpu="1")
        if draw(st.booleans()):
            p.annotate(INDEX_ANNOTATION, str(draw(st.integers(0, 20))))
        objects.append(p.obj())
    fits_in_a_block = max(block_slots) >= size
    return model(*objects), fits_in_a_block


def _check_gather(case: tuple[ClusterModel, bool], engine: str = "greedy") -> None:
    cluster, fits_in_a_block = case
    conf = SchedulerConf.default()
    decision = solve(cluster, conf, engine=engine, workers=1, time_limit=20)
    assert verify(cluster, conf, decision) == []
    blocks = {cluster.node_by_name[n].labels[BLOCK] for n in decision.placed.values()}
    if fits_in_a_block:
        assert len(decision.placed) == len(cluster.pending_pods)
        assert len(blocks) == 1
    if engine != "greedy":
        greedy = schedule(cluster, conf, engine="greedy")
        assert decision.objective >= greedy.objective
        assert decision.status in ("OPTIMAL", "INFEASIBLE")
        # CP-SAT agrees with the greedy on feasibility of the single gang
        assert bool(decision.placed) == bool(greedy.placed) or decision.objective > greedy.objective


@given(gather_cases(), st.sampled_from(["greedy", "cpsat"]))
def test_a_gang_that_fits_a_block_lands_in_one_block(
    case: tuple[ClusterModel, bool], engine: str
) -> None:
    _check_gather(case, engine)


@pytest.mark.slow
@settings(max_examples=2000)
@given(gather_cases(), st.sampled_from(["greedy", "cpsat"]))
def test_a_gang_that_fits_a_block_lands_in_one_block_long(
    case: tuple[ClusterModel, bool], engine: str
) -> None:
    _check_gather(case, engine)


def test_problem_fields_for_engines() -> None:
    p = compile_problem(
        model(
            spine_block_topology(),
            *tree_nodes(FAKE),
            *job("j", 4, **gather(("SpineLayer", "MustGather"), ("BlockLayer", "PreferGather", 2))),
        ),
        SchedulerConf.default(),
    )
    b = p.block(GatherBlock)
    assert b is not None
    assert b.layers == (
        "ClusterTopologyLayer",
        "SpineLayer",
        "BlockLayer",
        "NodeTopologyLayer",
    )
    assert b.node_domain.shape == (4, 8)
    assert b.unit_gather.tolist() == [True]
    assert b.unit_gather_layer.tolist() == [1]
    assert b.unit_pod_multiple.tolist() == [[1, 1, 2, 1]]
    rule = p.block(TopologyBlock)
    assert rule is not None
    dom = rule.unit_domain[0]
    assert dom is not None and dom.tolist() == b.node_domain[1].tolist()
    assert rule.unit_domain_names[0] == ("s1", "s2")
    assert rule.unit_domain_rule[0] == "one SpineLayer domain (MustGather)"
    gathered = b.domain_of(0)
    assert gathered is not None and gathered.tolist() == dom.tolist()
    assert json.dumps([r.tolist() for r in p.type_rank]) == "[[0, 1, 2, 3]]"
