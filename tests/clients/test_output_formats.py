"""Every subcommand prints json, yaml (the same data) or a table for people; --version."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from clients.cli import app
from clients.render import human
from gangplan import __version__

PLAN = [
    "plan", "-f", "examples/plan/workload.yaml", "--cluster", "examples/plan/cluster.yaml",
    "--catalog", "examples/plan/catalog.yaml", "--workers", "1", "--seed", "0",
    "--time-limit", "5",
]  # fmt: skip
COMMANDS = {
    "schedule": ["schedule", "-f", "examples/ganggroup-gpu.yaml", "--engine", "greedy"],
    "explain": ["explain", "-f", "examples/ganggroup-gpu.yaml", "--pod", "default/llm-worker-0"],
    "expand": ["expand", "-f", "examples/dump/pytorchjob.yaml"],
    "config show": ["config", "show"],
    "topology": ["topology", "-f", "examples/topology/koordinator-gather.yaml"],
    "queues validate": ["queues", "validate", "-f", "examples/queues/hierarchy-engineering.yaml"],
    "queues tree": ["queues", "tree", "-f", "examples/queues/hierarchy-engineering.yaml"],
    "cards": ["cards", "-f", "examples/cards/multi-card.yaml"],
    "plan": PLAN,
}


def _run(args: list[str]) -> str:
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.stdout


def _timeless(data: object) -> object:
    """The data without wall-clock times, which differ from run to run."""
    if isinstance(data, dict):
        return {k: _timeless(v) for k, v in data.items() if "seconds" not in k}
    if isinstance(data, list):
        return [_timeless(v) for v in data]
    return data


def test_version() -> None:
    assert _run(["--version"]) == f"gangplan {__version__}\n"


@pytest.mark.parametrize("command", COMMANDS)
def test_json_and_yaml_carry_the_same_data_and_table_prints(command: str) -> None:
    args = COMMANDS[command]
    as_json = _timeless(json.loads(_run([*args, "-o", "json"])))
    text = _run([*args, "-o", "yaml"])
    if command == "expand":  # YAML documents, one per object, as `kubectl apply` reads
        as_yaml = {"kind": "List", "items": list(yaml.safe_load_all(text))}
    else:
        as_yaml = _timeless(yaml.safe_load(text))
    assert as_json == as_yaml
    assert _run([*args, "-o", "table"]).strip()


def test_plan_table_separates_existing_nodes_and_shows_human_units() -> None:
    table = _run(PLAN)
    to_add, rest = table.split("Existing nodes used")
    assert "existing" not in to_add and "a100x8" in to_add
    assert "a100-0" in rest and "existing:" not in rest
    assert "cores" in rest and "GiB" in rest
    assert "e+0" not in table  # no raw milli-CPU in scientific notation


@pytest.mark.parametrize(
    ("resource", "value", "unit", "shown"),
    [
        ("cpu", 2500, 1, "2.5"),
        ("cpu", 1_272_000, 1, "1,272"),
        ("memory", 3 * 2**30, 1, "3.0 GiB"),
        ("memory", 524_288, 2**20, "512 GiB"),
        ("nvidia.com/gpu", 8, 1, "8"),
    ],
)
def test_human_units(resource: str, value: int, unit: int, shown: str) -> None:
    assert human(resource, value, memory_unit=unit) == shown


def test_the_readme_synopsis_lists_every_format(tmp_path: Path) -> None:
    readme = Path("README.md").read_text(encoding="utf-8")
    synopsis = readme[
        readme.index("gangplan schedule -f FILE...") : readme.index("gangplan serve ...")
    ]
    assert synopsis.count("[-o json|yaml|table]") >= 7
