"""The `network-topology-aware` plugin's scores and gradients, translated from volcano-sh/volcano
`pkg/scheduler/plugins/network-topology-aware/network_topology_aware_test.go` (`ed72c7c8`):
TestBatchNodeOrderFn (pods without network topology: tier-faded HyperNode bin-packing),
TestNew (arguments), TestHyperNodeGradientPreFiltering (the minResources pre-filter).

Upstream rounds its expected scores to one decimal; memory is kept in whole units here, so
scores agree within 0.15. Tree of TestBatchNodeOrderFn (tier 4 is the virtual root, counted
in the fading):

                          s0 (tier 3)
                /                          \\
          s1 (tier 2)                   s2 (tier 2)
         /         \\                  /          \\
    s3 (1)         s4 (1)         s5 (1)          s6 (1)
  2cpu/4G x2     4cpu/4G x2     2cpu/8G x2      4cpu/8G x2
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from solver.compile import compile_problem
from solver.features.topology.hypernode.block import HyperNodeBlock
from solver.features.topology.hypernode.compile import hypernode_args
from solver.features.topology.hypernode.greedy import gradients
from tests.builders import model, node, pod
from tests.features.topology.hypernode.fixtures import conf, hypernode, vc_group

FOO = "example.com/foo"
SIZES = {
    "s3": ("2", "4G", "8"),
    "s4": ("4", "4G", "8"),
    "s5": ("2", "8G", "16"),
    "s6": ("4", "8G", "16"),
}
TREE = [
    hypernode("s0", 3, children=("s1", "s2")),
    hypernode("s1", 2, children=("s3", "s4")),
    hypernode("s2", 2, children=("s5", "s6")),
    *(hypernode(h, 1, (f"{h}-n1", f"{h}-n2")) for h in SIZES),
]


def cluster_nodes(foo: bool) -> list[dict[str, Any]]:
    out = []
    for h, (cpu, mem, f) in SIZES.items():
        for i in (1, 2):
            b = node(f"{h}-n{i}").cpu(cpu).memory(mem).pods(10)
            if foo:
                b = b.alloc(FOO, f)
            out.append(b.obj())
    return out


def scores(objects: list[dict[str, Any]], **arguments: Any) -> dict[str, float]:
    problem = compile_problem(model(*objects), conf(**arguments))
    row = np.asarray(problem.static_score[0])
    eligible = np.asarray(problem.eligible[0])
    return {n: round(float(row[i]), 1) for i, n in enumerate(problem.node_names) if eligible[i]}


def p1(foo: bool) -> dict[str, Any]:
    requests = {"cpu": "2", "memory": "4G", **({FOO: "8"} if foo else {})}
    return pod("p1", "ns1").requests(**requests).obj()


CUSTOM = {
    "weight": 10,
    "hypernode.binpack.cpu": 1,
    "hypernode.binpack.memory": 4,
    "hypernode.binpack.resources": "nvidia.com/gpu, example.com/foo",
    "hypernode.binpack.resources.nvidia.com/gpu": 2,
    "hypernode.binpack.resources.example.com/foo": 3,
    "hypernode.binpack.normal-pod.enable": True,
    "hypernode.binpack.normal-pod.fading": 0,
}


def test_no_hypernode_level_binpacking() -> None:
    """`score empty nodes for single task with no network topology and no hypernode-level
    binpacking`."""
    objects = [*cluster_nodes(False), *TREE, p1(False)]
    got = scores(objects, **{"hypernode.binpack.normal-pod.enable": False})
    assert set(got.values()) == {0.0}


def test_default_plugin_arguments() -> None:
    """`score empty nodes for single task with no network topology and default plugin
    arguments`."""
    got = scores([*cluster_nodes(False), *TREE, p1(False)])
    assert got == pytest.approx({
        "s3-n1": 25.8, "s3-n2": 25.8, "s4-n1": 21.6, "s4-n2": 21.6,
        "s5-n1": 19.9, "s5-n2": 19.9, "s6-n1": 15.7, "s6-n2": 15.7,
    }, abs=0.15)  # fmt: skip


def test_customized_plugin_arguments() -> None:
    """`score empty nodes for single task with no network topology and customized plugin
    arguments`."""
    got = scores([*cluster_nodes(True), *TREE, p1(True)], **CUSTOM)
    assert got == pytest.approx({
        "s3-n1": 500.0, "s3-n2": 500.0, "s4-n1": 468.8, "s4-n2": 468.8,
        "s5-n1": 281.3, "s5-n2": 281.3, "s6-n1": 250.0, "s6-n2": 250.0,
    }, abs=0.15)  # fmt: skip


def test_non_empty_nodes_customized_plugin_arguments() -> None:
    """`score non-empty nodes for single task with no network topology and customized plugin
    arguments`: s3's nodes are full, so its bin-packing overflows: 0."""
    running = [
        pod(f"p{i}", "ns1").requests(cpu="2", memory="4G", **{FOO: "8"}).on(f"s3-n{i - 1}").obj()
        for i in (2, 3)
    ]
    got = scores([*cluster_nodes(True), *TREE, p1(True), *running], **CUSTOM)
    assert got == pytest.approx({
        "s3-n1": 0.0, "s3-n2": 0.0, "s4-n1": 468.8, "s4-n2": 468.8, "s5-n1": 281.3, "s5-n2": 281.3,
        "s6-n1": 250.0, "s6-n2": 250.0,
    }, abs=0.15)  # fmt: skip


@pytest.mark.parametrize(
    ("upstream", "arguments", "want"),
    [
        ("build plugin with no arguments", {}, (1, (1, 1), True, 0.8)),
        (
            "build plugin with customized valid arguments",
            {"weight": 10, "hypernode.binpack.cpu": 5, "hypernode.binpack.memory": 2,
             "hypernode.binpack.normal-pod.fading": 0.5},
            (10, (5, 2), True, 0.5),
        ),
        (
            "build plugin with customized invalid arguments",
            {"weight": -1, "hypernode.binpack.cpu": -2, "hypernode.binpack.memory": "x",
             "hypernode.binpack.normal-pod.fading": -0.5},
            (1, (1, 1), True, 0.8),
        ),
    ],
)  # fmt: skip
def test_new(upstream: str, arguments: dict[str, Any], want: tuple[Any, ...]) -> None:
    """TestNew: defaults, valid values, and invalid ones falling back to the defaults."""
    args = hypernode_args(arguments, ("cpu", "memory"), True)
    assert (args.weight, args.binpack, args.normal_pod, args.fading) == want


@pytest.mark.parametrize(
    ("upstream", "min_cpu", "tier1"),
    [
        ("Job - idle sufficient, futureIdle sufficient", "3", True),
        ("Job - idle insufficient, futureIdle insufficient", "5", False),
    ],
)
def test_hypernode_gradient_pre_filtering(upstream: str, min_cpu: str, tier1: bool) -> None:
    """TestHyperNodeGradientPreFiltering (allocate purpose): a tier-1 HyperNode is a
    candidate only if its idle covers the PodGroup's minResources (s3: 4 cpu idle)."""
    objects = [
        *cluster_nodes(False),
        *TREE,
        vc_group("pg", 1, "hard", 3, min_resources={"cpu": min_cpu}),
        pod("w", "c1").annotate("scheduling.k8s.io/group-name", "pg").requests(cpu="1").obj(),
    ]
    problem = compile_problem(model(*objects), conf())
    block = problem.block(HyperNodeBlock)
    assert block is not None and block.tree is not None
    plan = block.plan(0)
    assert plan is not None
    tree = block.tree
    idle = tree.covers.astype(np.int64) @ np.maximum(problem.free, 0)
    keep = (idle >= plan.min_resources).all(axis=1)
    first = gradients(tree, plan.search_root, plan.limit, keep)[0]
    assert (tree.names[first[0]] == "s3") is tier1
