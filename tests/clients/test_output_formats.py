"""Every subcommand prints json, yaml (the same data) or a table for people; --version."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from clients.cli import app
from clients.render import amounts, human
from server import Settings, create_server
from solver.quantity import UNLIMITED

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


def test_version_is_the_installed_distribution_s() -> None:
    assert _run(["--version"]) == f"gangplan {version('gangplan')}\n"


def test_version_without_package_metadata_falls_back() -> None:
    """A checkout on sys.path without an install still answers (`gangplan.__version__`)."""
    script = (
        "import importlib.metadata as m, sys\n"
        "def missing(name): raise m.PackageNotFoundError(name)\n"
        "m.version = missing\n"
        "from clients.cli import main\n"
        "sys.argv = ['gangplan', '--version']\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert (done.returncode, done.stdout) == (0, "gangplan 0+unknown\n"), done.stderr


@pytest.mark.parametrize("command", COMMANDS)
def test_json_and_yaml_carry_the_same_data_and_table_prints(command: str) -> None:
    args = COMMANDS[command]
    as_json = _timeless(json.loads(_run([*args, "-o", "json"])))
    as_yaml = _timeless(yaml.safe_load(_run([*args, "-o", "yaml"])))
    assert as_json == as_yaml and as_json
    assert _run([*args, "-o", "table"]).strip()


@pytest.mark.parametrize("command", [*COMMANDS, "health"])
def test_every_help_offers_the_three_formats_and_says_json_keeps_machine_units(
    command: str,
) -> None:
    text = " ".join(_run([*command.split(), "--help"]).split())  # rich wraps the help
    assert "json|yaml|table" in text and "machine units (milli-CPU, bytes" in text


def test_expand_prints_a_list_that_gangplan_reads_back() -> None:
    text = _run(COMMANDS["expand"] + ["-o", "yaml"])
    listed = yaml.safe_load(text)
    assert (listed["apiVersion"], listed["kind"]) == ("v1", "List")
    assert {item["kind"] for item in listed["items"]} == {"PodGroup", "Pod"}
    placed = CliRunner().invoke(
        app, ["schedule", "-f", "examples/dump/cluster.yaml", "-f", "-"], input=text
    )
    assert placed.exit_code == 0, placed.output
    assert json.loads(placed.stdout)["podgroups"]


@pytest.fixture
def server_address() -> Iterator[str]:
    settings = Settings(host="127.0.0.1", port=0, metrics_port=None, grace=1.0)
    srv, port = create_server(settings)
    srv.start()
    yield f"127.0.0.1:{port}"
    srv.stop(0)


def test_health_prints_the_bare_status_or_the_same_data_as_json_and_yaml(
    server_address: str,
) -> None:
    args = ["health", "--server", server_address]
    assert _run(args) == "SERVING\n"  # what probes and scripts compare
    as_json = json.loads(_run([*args, "-o", "json"]))
    assert as_json == {"server": server_address, "service": "", "status": "SERVING"}
    assert yaml.safe_load(_run([*args, "-o", "yaml"])) == as_json


def test_plan_table_separates_existing_nodes_and_shows_human_units() -> None:
    table = _run(PLAN)
    as_json = json.loads(_run([*PLAN, "-o", "json"]))
    to_add, rest = table.split("Existing nodes used")
    existing, utilisation = rest.split("Utilisation")
    assert as_json["add"] and as_json["use"]
    for node_type, count in as_json["add"].items():  # the types to buy, not current nodes
        assert f"{node_type} " in to_add and f" {count} " in to_add
    assert "existing" not in to_add and "a100-0" not in to_add
    for name, count in as_json["use"].items():  # the current nodes, with how many are used
        assert name.startswith("existing:")
        assert f"{name.removeprefix('existing:')} " in existing and f" {count} " in existing
    assert "existing:" not in existing and "a100x8" not in existing
    cpu, memory = (as_json["utilisation"][r]["used"] for r in ("cpu", "memory"))
    assert f"{cpu / 1000:,.0f} cores" in utilisation  # milli-CPU in the JSON
    assert f"{memory / 1024:,.0f} GiB" in utilisation  # MiB in the JSON (the planner's unit)
    assert f"{cpu:,.0f}" not in table and "e+0" not in table


def test_queue_tree_table_in_cores_and_counts_json_in_milli() -> None:
    args = COMMANDS["queues tree"]
    table = " ".join(_run(args).split())
    assert "capability cpu 200 cores, memory ∞, nvidia.com/gpu 24" in table
    queues = json.loads(_run([*args, "-o", "json"]))["queues"]
    assert queues["engineering"]["capability"] == {
        "cpu": 200_000,
        "memory": None,
        "nvidia.com/gpu": 24,
    }


@pytest.mark.parametrize(
    ("resource", "value", "unit", "shown"),
    [
        ("cpu", 2500, 1, "2.5"),
        ("cpu", 250, 1, "0.25"),
        ("cpu", 1_272_000, 1, "1,272"),
        ("cpu", 0, 1, "0"),
        ("memory", 3 * 2**30, 1, "3 GiB"),
        ("memory", 1.5 * 2**30, 1, "1.5 GiB"),
        ("memory", 524_288, 2**20, "512 GiB"),
        ("memory", 10_027_008.0, 2**20, "9,792 GiB"),
        ("memory", 512 * 2**20, 1, "512 MiB"),
        ("memory", 1000, 1, "1,000 B"),
        ("ephemeral-storage", 20 * 2**30, 1, "20 GiB"),
        ("hugepages-2Mi", 2**31, 1, "2 GiB"),
        ("nvidia.com/gpu", 8, 1, "8"),
        ("gpu", 168.0, 1, "168"),
        ("pods", 2639.0, 1, "2,639"),
        ("nvidia.com/gpu", 0.5, 1, "0.5"),
        ("memory", UNLIMITED, 1, "∞"),
    ],
)
def test_human_units(resource: str, value: float, unit: int, shown: str) -> None:
    assert human(resource, value, memory_unit=unit) == shown


def test_amounts_name_the_unit_of_each_resource() -> None:
    values = {"nvidia.com/gpu": 8, "memory": 3 * 2**30, "cpu": 2500, "pods": 0}
    assert amounts(values) == "cpu 2.5 cores, memory 3 GiB, nvidia.com/gpu 8"
    assert amounts({"cpu": UNLIMITED}) == "cpu ∞" and amounts({}) == "-"


def test_the_getting_started_synopsis_lists_every_format(tmp_path: Path) -> None:
    readme = Path("docs/getting-started.md").read_text(encoding="utf-8")
    synopsis = readme[
        readme.index("gangplan schedule -f FILE...") : readme.index("gangplan serve ...")
    ]
    assert synopsis.count("[-o json|yaml|table]") >= 7
