"""`gangplan plan` on the bundled example: table, JSON, plot, bad input exits 2."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from clients.cli import app

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "plan"
ARGS = [
    "plan",
    "-f",
    str(EXAMPLES / "workload.yaml"),
    "--cluster",
    str(EXAMPLES / "cluster.yaml"),
    "--catalog",
    str(EXAMPLES / "catalog.yaml"),
    "--time-limit",
    "3",
]


def test_plan_example_json_and_plot(tmp_path: Path) -> None:
    png = tmp_path / "plan.png"
    result = CliRunner().invoke(app, [*ARGS, "-o", "json", "--plot", str(png)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["add"]["h100x8"] % 2 == 0  # whole blocks of 2
    assert data["status"] in ("OPTIMAL", "FEASIBLE")
    assert data["bound"] <= data["objective"]
    assert any("default/too-big" in u["jobs"] for u in data["unplaced"])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plan_table() -> None:
    result = CliRunner().invoke(app, ARGS)
    assert result.exit_code == 0, result.output
    assert "Nodes to add" in result.stdout and "Still cannot run" in result.stdout


def test_bad_input_exits_2(tmp_path: Path) -> None:
    cat = tmp_path / "cat.yaml"
    cat.write_text("nodeTypes:\n- name: x\n  cost: cheap\n  allocatable: {cpu: 1}\n")
    result = CliRunner().invoke(
        app, ["plan", "-f", str(EXAMPLES / "workload.yaml"), "--catalog", str(cat)]
    )
    assert result.exit_code == 2
    assert "cat.yaml: nodeTypes[0].cost: must be a number" in result.output
    trace = tmp_path / "t.csv"
    trace.write_text("a,b\n1,2\n")
    result = CliRunner().invoke(
        app, ["plan", "--trace", str(trace), "--catalog", str(EXAMPLES / "catalog.yaml")]
    )
    assert (
        result.exit_code == 2
        and "t.csv: trace mapping cpu=cpu_milli: no such column" in result.output
    )


def test_value_gpu_packs_the_current_cluster_for_gpu_work(tmp_path: Path) -> None:
    # One node of 4 CPUs and 1 GPU, no catalogue. Two 2-CPU pods or one 4-CPU GPU pod fit:
    # worth pods, the two CPU pods win (2 > 1); worth GPU milli, the GPU pod (1000 > 1 + 1).
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,4000,65536,1,A100\n")
    pods = tmp_path / "pods.csv"
    pods.write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
        "cpu-a,2000,1024,0,0,\ncpu-b,2000,1024,0,0,\ntrain,4000,1024,1,1000,\n"
    )
    args = ["plan", "--trace", str(pods), "--cluster", str(nodes), "-o", "json", "-q"]
    by_pods = json.loads(CliRunner().invoke(app, args).stdout)
    by_gpu = json.loads(CliRunner().invoke(app, [*args, "--value", "gpu"]).stdout)
    assert by_pods["placed_pods"] == 2 and by_gpu["placed_pods"] == 1
    assert by_gpu["utilisation"]["gpu"]["ratio"] == 1.0
    assert by_pods["utilisation"]["gpu"]["ratio"] == 0.0
    assert [u["jobs"] for u in by_gpu["unplaced"]] == [["cpu-a", "cpu-b"]]
