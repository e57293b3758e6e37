"""The README's Volcano HyperNode example through the CLI: `gangplan topology` draws the tree,
`gangplan schedule` places the job where the README says, on both engines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clients.cli import app

ROOT = Path(__file__).resolve().parents[4]
EXAMPLE = str(ROOT / "examples" / "topology" / "volcano-hypernode.yaml")
CONF = str(ROOT / "examples" / "topology" / "volcano-hypernode.conf")

TREE = """\
<cluster-top-hypernode>  (tier 3, 4 nodes)
└── s2  (tier 2/spine, 4 nodes)
    ├── s0  (tier 1/leaf, 2 nodes)
    │   ├── node: node-0
    │   └── node: node-1
    └── s1  (tier 1/leaf, 2 nodes)
        ├── node: node-2
        └── node: node-3
"""


def test_topology_draws_the_hypernode_tree() -> None:
    result = CliRunner().invoke(app, ["topology", "-f", EXAMPLE, "--nodes"])
    assert result.exit_code == 0, result.output
    assert result.output == TREE


def test_topology_json_lists_each_hypernode() -> None:
    result = CliRunner().invoke(app, ["topology", "-f", EXAMPLE, "-o", "json"])
    view = json.loads(result.output)["hyperNodeTree"]
    assert [(h["name"], h["tier"], h["parent"]) for h in view["hyperNodes"]] == [
        ("s0", 1, "s2"),
        ("s1", 1, "s2"),
        ("s2", 2, "<cluster-top-hypernode>"),
        ("<cluster-top-hypernode>", 3, None),
    ]


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_schedule_places_the_job_in_the_fuller_hypernode(engine: str) -> None:
    result = CliRunner().invoke(
        app, ["schedule", "-f", EXAMPLE, "--config", CONF, "--engine", engine, "-o", "json"]
    )
    assert result.exit_code == 0, result.output
    placed = {k: v["node"] for k, v in json.loads(result.output)["placements"].items()}
    assert placed == {"default/train-0": "node-1", "default/train-1": "node-1"}


def test_bad_network_topology_names_file_document_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\n"
        "metadata: {name: pg, namespace: default}\n"
        "spec: {minMember: 1, networkTopology: {mode: strict}}\n"
    )
    result = CliRunner().invoke(app, ["schedule", "-f", str(bad)])
    assert result.exit_code != 0
    assert "spec.networkTopology.mode" in result.output and "Traceback" not in result.output
    assert "document 1" in result.output
