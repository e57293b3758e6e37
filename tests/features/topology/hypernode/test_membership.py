"""HyperNode membership and tree, translated from volcano-sh/volcano (`ed72c7c8`):
`pkg/util/hypernode/member_selector_test.go` TestGetMembers and
`pkg/scheduler/api/hyper_node_info_test.go` TestHyperNodesInfo_NodeRegexOrLabelMatchHyperNode,
TestGetLCAHyperNode, TestHyperNodesInfo_UpdateHyperNode_MultipleParents / _WithCycle.
"""

from __future__ import annotations

from typing import Any

import pytest

from solver.errors import ManifestError
from solver.features.topology.hypernode.tree import CLUSTER_TOP, build_hypernode_tree
from tests.builders import model, node
from tests.features.topology.hypernode.fixtures import hypernode

NODES = [
    node("worker-1").cpu("1").label("role", "worker").obj(),
    node("worker-2").cpu("1").label("role", "worker").obj(),
    node("control-plane-1").cpu("1").label("role", "control-plane").obj(),
]


def members(selector: dict[str, Any]) -> set[str]:
    hn = {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": "h"},
        "spec": {"tier": 1, "members": [{"type": "Node", "selector": selector}]},
    }
    cluster = model(*NODES, hn)
    assert cluster.topology is not None
    tree = build_hypernode_tree(cluster.topology.hypernodes, cluster.nodes)
    return {n.name for i, n in enumerate(cluster.nodes) if tree.covers[0, i]}


@pytest.mark.parametrize(
    ("upstream", "selector", "want"),
    [
        ("exact", {"exactMatch": {"name": "worker-1"}}, {"worker-1"}),
        ("regex", {"regexMatch": {"pattern": "^worker-"}}, {"worker-1", "worker-2"}),
        ("invalid regex", {"regexMatch": {"pattern": "["}}, set()),
        ("label", {"labelMatch": {"matchLabels": {"role": "worker"}}}, {"worker-1", "worker-2"}),
        ("empty label", {"labelMatch": {}}, set()),
        # gangplan's own: the pattern is searched, not anchored (Go's MatchString)
        ("unanchored regex", {"regexMatch": {"pattern": "plane"}}, {"control-plane-1"}),
        (
            "label expression",
            {
                "labelMatch": {
                    "matchExpressions": [{"key": "role", "operator": "NotIn", "values": ["worker"]}]
                }
            },
            {"control-plane-1"},
        ),
    ],
)
def test_get_members(upstream: str, selector: dict[str, Any], want: set[str]) -> None:
    """TestGetMembers."""
    assert members(selector) == want


def test_node_regex_or_label_match_hypernode() -> None:
    """TestHyperNodesInfo_NodeRegexOrLabelMatchHyperNode: s1 (regex ^prefix, node-2), s4
    (label role=worker), s5 (role=invalid-role), s6 (role In master)."""
    nodes = [
        node("prefix-1").cpu("1").obj(),
        node("node-2").cpu("1").obj(),
        node("node-5").cpu("1").label("role", "worker").obj(),
        node("node-6").cpu("1").label("role", "master").obj(),
    ]
    objs = [
        hypernode("s1", 1, regex="^prefix"),
        hypernode("s4", 1, labels={"role": "worker"}),
        hypernode("s5", 1, labels={"role": "invalid-role"}),
        {
            **hypernode("s6", 1),
            "spec": {
                "tier": 1,
                "members": [
                    {
                        "type": "Node",
                        "selector": {
                            "labelMatch": {
                                "matchExpressions": [
                                    {"key": "role", "operator": "In", "values": ["master"]}
                                ]
                            }
                        },
                    }
                ],
            },
        },
    ]
    objs[0]["spec"]["members"].append(
        {"type": "Node", "selector": {"regexMatch": {"pattern": "node-2"}}}
    )
    cluster = model(*nodes, *objs)
    assert cluster.topology is not None
    tree = build_hypernode_tree(cluster.topology.hypernodes, cluster.nodes)
    names = [n.name for n in cluster.nodes]
    got = {
        tree.names[h]: {names[i] for i in range(len(names)) if tree.covers[h, i]}
        for h in range(len(tree.names) - 1)
    }
    assert got == {
        "s1": {"prefix-1", "node-2"},
        "s4": {"node-5"},
        "s5": set(),
        "s6": {"node-6"},
    }


def _lca_tree() -> Any:
    """TestGetLCAHyperNode's tree (node6 under s4 here, s-orphan a second root):

                 s4 (3)                s-orphan (1)
              /        \\
          s2 (2)       s3 (2)
          /   \\
      s0 (1)  s1 (1)
    """
    objs = [
        node("n0").cpu("1").obj(),
        node("n1").cpu("1").obj(),
        node("n2").cpu("1").obj(),
        node("n9").cpu("1").obj(),
        hypernode("s0", 1, ("n0",)),
        hypernode("s1", 1, ("n1",)),
        hypernode("s2", 2, children=("s0", "s1")),
        hypernode("s3", 2, ("n2",)),
        hypernode("s4", 3, children=("s2", "s3")),
        hypernode("s-orphan", 1, ("n9",)),
    ]
    cluster = model(*objs)
    assert cluster.topology is not None
    return build_hypernode_tree(cluster.topology.hypernodes, cluster.nodes)


@pytest.mark.parametrize(
    ("upstream", "a", "b", "want"),
    [
        ("Sibling hypernode", "s0", "s1", "s2"),
        ("No common ancestor", "s0", "s-orphan", CLUSTER_TOP),  # the virtual root, in a session
        ("One is ancestor of the other", "s4", "s0", "s4"),
        ("Both are the same node", "s3", "s3", "s3"),
    ],
)
def test_get_lca_hypernode(upstream: str, a: str, b: str, want: str) -> None:
    """TestGetLCAHyperNode."""
    tree = _lca_tree()
    assert tree.names[tree.lca(tree.index(a), tree.index(b))] == want


def test_virtual_root_and_tiers() -> None:
    tree = _lca_tree()
    assert tree.names[tree.root] == CLUSTER_TOP and tree.max_tier == 4
    assert tree.tier_list == (1, 2, 3)
    # top_within(2): nodes under s2 share s2; n2 its s3; n9 its s-orphan
    top = tree.top_within(2)
    assert [tree.names[h] for h in top.tolist()] == ["s2", "s2", "s3", "s-orphan"]
    assert (tree.top_within(0) == -1).all()


def test_multiple_parents_first_by_name_wins_with_a_note() -> None:
    """TestHyperNodesInfo_UpdateHyperNode_MultipleParents: a second claimer is refused."""
    cluster = model(
        node("n0").cpu("1").obj(),
        hypernode("s0", 1, ("n0",)),
        hypernode("a", 2, children=("s0",)),
        hypernode("b", 2, children=("s0",)),
    )
    assert cluster.topology is not None
    tree = build_hypernode_tree(cluster.topology.hypernodes, cluster.nodes)
    assert tree.names[tree.parent[tree.index("s0")]] == "a"
    assert any("already has a parent" in n for n in tree.notes)


def test_cycle_is_broken_with_a_note() -> None:
    """TestHyperNodesInfo_UpdateHyperNode_WithCycle."""
    cluster = model(
        node("n0").cpu("1").obj(),
        hypernode("a", 1, ("n0",), children=("b",)),
        hypernode("b", 2, children=("a",)),
    )
    assert cluster.topology is not None
    tree = build_hypernode_tree(cluster.topology.hypernodes, cluster.nodes)
    assert any("cycle" in n for n in tree.notes)


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"members": []}, "spec.tier"),
        ({"tier": -1}, "spec.tier"),
        ({"tier": "1"}, "spec.tier"),
        ({"tier": 1, "members": [{"type": "Rack", "selector": {}}]}, "spec.members[0].type"),
        ({"tier": 1, "members": [{"type": "Node", "selector": {}}]}, "spec.members[0].selector"),
        (
            {
                "tier": 1,
                "members": [{"type": "HyperNode", "selector": {"regexMatch": {"pattern": "x"}}}],
            },
            "spec.members[0].selector",
        ),
        (
            {
                "tier": 1,
                "members": [
                    {
                        "type": "Node",
                        "selector": {
                            "labelMatch": {"matchExpressions": [{"key": "k", "operator": "In"}]}
                        },
                    }
                ],
            },
            "spec.members[0].selector.labelMatch.matchExpressions[0].values",
        ),
    ],
)
def test_bad_hypernode_names_the_field(spec: dict[str, Any], field: str) -> None:
    bad = {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": "h"},
        "spec": spec,
    }
    with pytest.raises(ManifestError) as err:
        model(bad)
    assert err.value.field == field
