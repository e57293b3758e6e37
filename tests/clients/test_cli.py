"""The `gangplan` command line: schedule and explain on the bundled example, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from clients.cli import app

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "examples" / "ganggroup-gpu.yaml")
runner = CliRunner()


def test_schedule_json_places_the_ganggroup_and_not_the_oversized_gang() -> None:
    result = runner.invoke(app, ["schedule", "-f", EXAMPLE, "-o", "json"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    placements = data["placements"]
    assert placements["default/llm-master-0"]["node"] == "cpu-1"
    workers = [placements[f"default/llm-worker-{i}"]["node"] for i in range(8)]
    assert all(n and n.startswith("gpu-") for n in workers)
    assert data["podgroups"]["default/llm-master"]["placed"] is True
    assert data["podgroups"]["default/llm-worker"]["placed"] is True
    big = [placements[f"default/train-big-{i}"] for i in range(16)]
    assert all(p["node"] is None for p in big)
    reason = data["podgroups"]["default/train-big"]["reason"]
    assert data["podgroups"]["default/train-big"]["placed"] is False
    assert reason.startswith(
        "gang default/train-big needs 16 × 1 nvidia.com/gpu (16 in all); its 4 eligible node(s) "
        "have 11 free (gpu-a1: 4, gpu-a2: 4, gpu-a3: 3); when its turn came: "
    )
    assert data["certificates"]["default/train-big"]["kind"] == "capacity"
    assert "needs 16 nvidia.com/gpu, eligible nodes have 3 free" in reason
    assert "0/4 nodes are available: 4 Insufficient nvidia.com/gpu." in reason
    assert big[0]["reason"] == reason
    assert data["engine"] == "auto" and data["status"] == "OPTIMAL" and data["victims"] == []
    assert data["gap"] == 0.0 and data["bound"] == data["objective"]


def test_schedule_yaml_and_table() -> None:
    result = runner.invoke(app, ["schedule", "-f", EXAMPLE, "-o", "yaml"])
    assert result.exit_code == 0
    assert yaml.safe_load(result.stdout)["placements"]["default/llm-master-0"]["node"] == "cpu-1"
    result = runner.invoke(app, ["schedule", "-f", EXAMPLE, "-o", "table"])
    assert result.exit_code == 0
    assert "default/train-big" in result.stdout and "placed 9/25 pods" in result.stdout


def test_schedule_from_stdin() -> None:
    text = Path(EXAMPLE).read_text()
    result = runner.invoke(app, ["schedule", "-f", "-"], input=text)
    assert result.exit_code == 0
    assert json.loads(result.stdout)["placements"]["default/llm-master-0"]["node"] == "cpu-1"


def test_explain_every_node_with_reasons_and_scores() -> None:
    result = runner.invoke(app, ["explain", "-f", EXAMPLE, "--pod", "default/llm-worker-0"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["pod"] == "default/llm-worker-0" and data["gang"] == "default/llm-worker"
    assert set(data["nodes"]) == {"cpu-1", "gpu-a1", "gpu-a2", "gpu-a3"}
    assert data["nodes"]["cpu-1"] == {
        "feasible": False,
        "reasons": ["Insufficient nvidia.com/gpu"],
        "scores": {},
        "total": 0,
    }
    a3 = data["nodes"]["gpu-a3"]
    assert a3["feasible"] and a3["scores"]["binpack"] > data["nodes"]["gpu-a1"]["scores"]["binpack"]
    assert data["placement"] == "gpu-a3"
    # The master pod does not tolerate the GPU taint.
    data = json.loads(
        runner.invoke(app, ["explain", "-f", EXAMPLE, "--pod", "default/llm-master-0"]).stdout
    )
    assert data["nodes"]["gpu-a1"]["reasons"] == [
        "node(s) had untolerated taint {nvidia.com/gpu: present}"
    ]
    table = runner.invoke(
        app, ["explain", "-f", EXAMPLE, "--pod", "default/train-big-0", "-o", "table"]
    )
    assert table.exit_code == 0 and "not placed: gang default/train-big" in table.stdout


def test_bad_manifest_exits_2_with_only_a_message(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
        "spec: {containers: [{name: c, resources: {requests: {memory: 12XB}}}]}\n"
    )
    result = runner.invoke(app, ["schedule", "-f", str(bad)])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert (
        f"{bad}: document 2 (Pod p): spec.containers[0].resources.requests.memory: invalid quantity '12XB'"
        in result.stderr.replace("\n", "")
    )


def test_unknown_pod_for_explain_and_unknown_engine() -> None:
    result = runner.invoke(app, ["explain", "-f", EXAMPLE, "--pod", "default/nope"])
    assert result.exit_code == 2 and "not in the input" in result.stderr
    result = runner.invoke(app, ["schedule", "-f", EXAMPLE, "--engine", "magic"])
    assert (
        result.exit_code == 2 and "unknown engine 'magic'" in result.stderr and result.stdout == ""
    )


def test_config_volcano_format(tmp_path: Path) -> None:
    conf = tmp_path / "conf.yaml"
    conf.write_text(
        'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: sla\n  - name: predicates\n'
        "- plugins:\n  - name: binpack\n"
    )
    result = runner.invoke(app, ["schedule", "-f", EXAMPLE, "--config", str(conf)])
    assert result.exit_code == 0, result.stderr
    # Without the gang plugin, 3 of train-big's 16 pods take the last 3 GPUs.
    placed = [
        p
        for k, p in json.loads(result.stdout)["placements"].items()
        if "train-big" in k and p["node"]
    ]
    assert len(placed) == 3
    assert "plugin 'sla' is not implemented yet; ignored" in result.stderr
    conf.write_text('actions: "enqueue, allocate, teleport"\n')
    result = runner.invoke(app, ["schedule", "-f", EXAMPLE, "--config", str(conf)])
    assert result.exit_code == 2 and "actions[2]: unknown action 'teleport'" in result.stderr


def test_volcano_configmap_wrapper(tmp_path: Path) -> None:
    conf = tmp_path / "cm.yaml"
    conf.write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: volcano-scheduler-configmap}\ndata:\n"
        '  volcano-scheduler.conf: |\n    actions: "enqueue, allocate"\n    tiers:\n    - plugins:\n'
        "      - name: gang\n"
    )
    result = runner.invoke(app, ["schedule", "-f", EXAMPLE, "--config", str(conf)])
    assert result.exit_code == 0, result.stderr
