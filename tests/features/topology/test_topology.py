"""The topology policy: Koordinator's tree, the gather spec and pod order; verify's topology rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clients.cli import app
from solver import SchedulerConf, solve, verify
from solver.decision import Placement
from solver.errors import InputError
from solver.features.topology.koordinator.spec import gather_rank_key, must_gather_layer
from solver.features.topology.tree import (
    build_tree,
    detail_status,
    render_tree,
)
from solver.model import GatherSpec, GatherSpecError, parse_gather_spec
from tests.builders import (
    BLOCK,
    INDEX_ANNOTATION,
    SPINE,
    gather,
    model,
    network_topology,
    node,
    pod,
    podgroup,
    spine_block_topology,
)

ROOT = Path(__file__).resolve().parents[3]


def labelled(name: str, spine: str | None, block: str | None) -> dict[str, object]:
    b = node(name).cpu("16")
    if spine:
        b.label(SPINE, spine)
    if block:
        b.label(BLOCK, block)
    return b.obj()


# The seed 001 tree:
#   ClusterTopologyLayer (8 nodes)
#   ├── s1 (4) ─┬─ b1 (2)
#   │           └─ b2 (2)
#   └── s2 (4) ─┬─ b3 (2)
#               └─ b4 (2)
SEED = [
    ("node-1", "s1", "b1"), ("node-8", "s1", "b1"), ("node-2", "s1", "b2"), ("node-7", "s1", "b2"),
    ("node-3", "s2", "b3"), ("node-6", "s2", "b3"), ("node-4", "s2", "b4"), ("node-5", "s2", "b4"),
]  # fmt: skip


def seed_model() -> object:
    return model(spine_block_topology(), *(labelled(n, s, b) for n, s, b in SEED))


def test_detail_status_matches_koordinators_make_status() -> None:
    m = model(spine_block_topology(), *(labelled(n, s, b) for n, s, b in SEED))
    tree = build_tree(m.topology, m.nodes)
    status = detail_status(tree)
    assert [(e["topologyInfo"]["topologyName"], e["nodeNum"]) for e in status] == [
        ("", 8), ("s1", 4), ("b1", 2), ("b2", 2), ("s2", 4), ("b3", 2), ("b4", 2),
    ]  # fmt: skip
    root, s1, b1 = status[0], status[1], status[2]
    assert root["childTopologyLayer"] == "SpineLayer" and root["childTopologyNames"] == ["s1", "s2"]
    assert "parentTopologyInfo" not in root
    assert s1["parentTopologyInfo"] == {"topologyLayer": "ClusterTopologyLayer", "topologyName": ""}
    assert s1["childTopologyNames"] == ["b1", "b2"]
    assert b1["childTopologyLayer"] == "NodeTopologyLayer" and "childTopologyNames" not in b1
    assert render_tree(tree).splitlines()[:3] == [
        "ClusterTopologyLayer  (8 nodes)",
        "├── SpineLayer: s1  (4 nodes)",
        "│   ├── BlockLayer: b1  (2 nodes)",
    ]


def test_missing_labels_virtual_block_and_out_of_tree() -> None:
    m = model(
        spine_block_topology(),
        labelled("a", "s1", "b1"),
        labelled("b", "s1", None),  # missing the layer above nodes: virtual block "b"
        labelled("c", None, "b1"),  # missing the spine: left out of the tree
    )
    tree = build_tree(m.topology, m.nodes)
    assert tree.domains[2] == ("b", "b1")
    assert tree.in_tree.tolist() == [True, True, False]
    assert tree.node_domain[:, 2].tolist() == [-1, -1, -1, -1]


def test_same_block_name_under_two_spines_collapses_into_the_first() -> None:
    #   a (s1, b1), z (s2, b1): one block b1 under s1; s2 exists with no node
    m = model(spine_block_topology(), labelled("a", "s1", "b1"), labelled("z", "s2", "b1"))
    tree = build_tree(m.topology, m.nodes)
    assert tree.domains[1] == ("s1", "s2") and tree.domains[2] == ("b1",)
    assert tree.node_domain[1].tolist() == [0, 0]
    assert tree.node_counts(1).tolist() == [2, 0]


def test_label_key_list_first_non_empty_wins() -> None:
    topo = network_topology(
        ("BlockLayer", None, ["rack", "block"]), ("NodeTopologyLayer", "BlockLayer", [])
    )
    n1 = node("n1").label("rack", "").label("block", "b7").obj()
    m = model(topo, n1)
    assert build_tree(m.topology, m.nodes).domains[1] == ("b7",)


@pytest.mark.parametrize(
    "layers",
    [
        [("SpineLayer", None, [SPINE]), ("BlockLayer", "SpineLayer", [BLOCK])],  # no node layer
        [("SpineLayer", None, [SPINE]), ("NodeTopologyLayer", "BlockLayer", [])],  # no BlockLayer
        [("X", None, ["x"]), ("NodeTopologyLayer", None, [])],  # X is not on the chain
    ],
)
def test_broken_layer_chain_means_no_tree(layers: list[tuple[str, str | None, list[str]]]) -> None:
    m = model(network_topology(*layers), labelled("a", "s1", "b1"))
    with pytest.raises(InputError, match="not found in spec"):
        build_tree(m.topology, m.nodes)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{}", GatherSpec()),
        ("null", GatherSpec()),
        ('{"gatherStrategy": null}', GatherSpec()),
        (
            '{"GatherStrategy": [{"Layer": "BlockLayer", "strategy": "MustGather", "podCountMultiple": 8, "x": 1}]}',
            [("BlockLayer", "MustGather", 8)],
        ),
        ('{"gatherStrategy": [null]}', [("", "", 0)]),
    ],
)
def test_spec_parses_like_go_json(text: str, expected: object) -> None:
    spec = parse_gather_spec(text)
    if isinstance(expected, list):
        assert [(r.layer, r.strategy, r.pod_count_multiple) for r in spec.rules] == expected
    else:
        assert spec == expected


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        "[]",
        '{"gatherStrategy": {}}',
        '{"gatherStrategy": [{"layer": 3}]}',
        '{"gatherStrategy": [{"layer": "B", "podCountMultiple": 8.5}]}',
        '{"gatherStrategy": [{"layer": "B", "podCountMultiple": "8"}]}',
        '{"gatherStrategy": [{"layer": "B", "podCountMultiple": 9223372036854775808}]}',  # > Go int
    ],
)
def test_spec_errors(text: str) -> None:
    with pytest.raises(GatherSpecError):
        parse_gather_spec(text)


LAYERS = ("ClusterTopologyLayer", "SpineLayer", "BlockLayer", "NodeTopologyLayer")


@pytest.mark.parametrize(
    ("rules", "expected"),
    [
        ([("SpineLayer", "MustGather"), ("BlockLayer", "MustGather")], "BlockLayer"),  # deepest
        ([("BlockLayer", "PreferGather"), ("SpineLayer", "MustGather")], "SpineLayer"),
        ([("spineLayer", "MustGather"), ("SpineLayer", "MustGather")], "SpineLayer"),  # known first
        ([("spineLayer", "MustGather")], "spineLayer"),  # unknown: Koordinator finds no domain
        ([("BlockLayer", "PreferGather")], ""),
    ],
)
def test_must_gather_layer(rules: list[tuple[str, str]], expected: str) -> None:
    spec = parse_gather_spec(gather(*rules)["gang.scheduling.koordinator.sh/network-topology-spec"])
    assert must_gather_layer(spec, LAYERS) == expected


def test_rank_key_index_first_then_unindexed_then_name() -> None:
    def p(name: str, index: str | None) -> object:
        b = pod(name)
        if index is not None:
            b.annotate(INDEX_ANNOTATION, index)
        return b.obj()

    m = model(
        p("w-1", None), p("w-10", "1"), p("w-2", "0"), p("w-3", "-1"), p("w-4", "x"), p("w-0", "1")
    )
    ordered = [q.name for q in sorted(m.pods, key=gather_rank_key)]
    assert ordered == ["w-2", "w-0", "w-10", "w-1", "w-3", "w-4"]


# --------------------------------------------------------------------------- verify


def test_verify_catches_a_must_gather_and_multiple_violation() -> None:
    m = model(
        spine_block_topology(),
        *(labelled(n, s, b) for n, s, b in SEED),
        podgroup("j", 2, **gather(("BlockLayer", "MustGather", 2))),
        *(pod(f"j-{i}").group("j").requests(cpu="8").obj() for i in range(2)),
    )
    conf = SchedulerConf.default()
    decision = solve(m, conf, engine="greedy")
    assert verify(m, conf, decision) == []
    bad = dict(decision.placements)
    bad["default/j-0"] = Placement(node="node-1")
    bad["default/j-1"] = Placement(node="node-2")
    problems = verify(m, conf, type(decision)(**{**decision.__dict__, "placements": bad}))
    assert any("MustGather BlockLayer spans domains ['b1', 'b2']" in p for p in problems)
    assert any("podCountMultiple 2 broken" in p for p in problems)


# --------------------------------------------------------------------------- CLI


def test_cli_topology_table_and_json(tmp_path: Path) -> None:
    path = ROOT / "examples" / "topology" / "koordinator-gather.yaml"
    runner = CliRunner()
    result = runner.invoke(app, ["topology", "-f", str(path)])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith(
        "ClusterTopologyLayer  (8 nodes)\n├── SpineLayer: s1  (4 nodes)"
    )
    result = runner.invoke(app, ["topology", "-f", str(path), "-o", "json"])
    data = json.loads(result.stdout)
    assert data["detailStatus"][0]["nodeNum"] == 8 and data["nodesOutOfTree"] == []
    empty = tmp_path / "n.yaml"
    empty.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: a}\n")
    result = runner.invoke(app, ["topology", "-f", str(empty)])
    assert result.exit_code == 2 and "no ClusterNetworkTopology" in result.stderr
