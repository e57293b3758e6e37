"""`gangplan defrag` from the command line: the bundled example (table, json with the
Evictions and nominatedNodeName patches, yaml), the count goal out of reach, one clear line
for a bad flag, and the same plan from a server (--server)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from clients.cli import app
from tests.server.conftest import start  # noqa: F401  (the fixture)

ROOT = Path(__file__).resolve().parents[2]
RACKS = str(ROOT / "examples" / "defrag" / "racks.yaml")
RACK = ["--level", "cloud.com/topology-rack"]
runner = CliRunner()


def test_the_example_frees_the_emptiest_rack_proven() -> None:
    out = runner.invoke(app, ["defrag", "-f", RACKS, *RACK, "--max-pods", "20", "--workers", "1"])
    assert out.exit_code == 0, out.output
    last = next(line for line in out.stdout.splitlines() if line.startswith("freed "))
    assert last.startswith("freed 1  already free 0  pods moved 4  gangs moved 0  GPUs moved 4")
    assert last.endswith("cpsat OPTIMAL  bound 1  gap 0.0%")


def test_json_carries_the_moves_and_what_a_front_end_applies() -> None:
    args = ["defrag", "-f", RACKS, *RACK, "--max-pods", "20", "--workers", "1", "-o", "json"]
    out = runner.invoke(app, args)
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["freed"] == ["r3"] and data["pods_moved"] == 4 and data["status"] == "OPTIMAL"
    assert all(m["from"].startswith("r3-") and m["to"].startswith("r1-") for m in data["moves"])
    evictions = [a for a in data["apply"] if a["kind"] == "Eviction"]
    patches = [a for a in data["apply"] if a["kind"] == "Pod"]
    assert [e["metadata"]["name"] for e in evictions] == [
        m["pod"].split("/")[1] for m in data["moves"]
    ]
    assert [p["status"]["nominatedNodeName"] for p in patches] == [m["to"] for m in data["moves"]]
    yaml_out = runner.invoke(app, [*args[:-1], "yaml"])
    assert yaml.safe_load(yaml_out.stdout)["moves"] == data["moves"]


def test_a_count_out_of_reach_frees_the_most_with_a_note() -> None:
    args = ["defrag", "-f", RACKS, *RACK, "--count", "2", "--max-pods", "40", "--workers", "1"]
    out = runner.invoke(app, [*args, "-o", "json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["freed"] == ["r3"]
    assert any("no plan frees 2 domain(s) within the budget (proven)" in n for n in data["notes"])


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--shape", "nvidia.com/gpu"], "--shape: 'nvidia.com/gpu' is not KEY=VALUE"),
        (["--shape", "nvidia.com/gpu=eight"], "--shape: invalid quantity"),
        (["--protect-label", "=x"], "--protect-label: '=x' is not KEY=VALUE"),
        (["--engine", "magic"], "--engine: 'magic' is not one of auto, cpsat, greedy"),
    ],
)
def test_a_bad_flag_is_one_line_naming_it(args: list[str], line: str) -> None:
    out = runner.invoke(app, ["defrag", "-f", RACKS, *args])
    assert out.exit_code == 2, out.output
    assert line in out.stderr and "Traceback" not in out.output
    assert out.stdout == ""


def test_the_server_gives_the_same_plan(start: Any) -> None:  # noqa: F811
    _, port = start()
    args = ["defrag", "-f", RACKS, *RACK, "--max-pods", "20", "--workers", "1", "-o", "json"]
    here = json.loads(runner.invoke(app, args).stdout)
    there = runner.invoke(app, [*args, "--server", f"127.0.0.1:{port}"])
    assert there.exit_code == 0, there.output
    remote = json.loads(there.stdout)
    assert (remote["freed"], remote["moves"], remote["bound"]) == (
        here["freed"], here["moves"], here["bound"],
    )  # fmt: skip


def test_room_for_a_gang_in_its_rack() -> None:
    example = str(ROOT / "examples" / "defrag" / "consolidate.yaml")
    out = runner.invoke(app, ["defrag", "-f", example, "--gang", "research/train", "--workers",
                              "1", "-o", "json"])  # fmt: skip
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["pods_moved"] == 6 and data["status"] == "OPTIMAL" and data["gap"] == 0.0
    assert sorted(data["placement"].values()) == ["gpu-a", "gpu-c"]
    assert {m["from"] for m in data["moves"]} == {"gpu-a", "gpu-c"}
