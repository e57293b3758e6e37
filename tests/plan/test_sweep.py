"""What-if sweeps on the default executor (a forkserver process pool), with resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clients.plan_cli import build_plan_input
from solver.errors import InputError
from solver.plan import PlanOptions
from solver.plan._executors import make_executor
from solver.plan.sweep import Scenario, apply_scenario, load_sweep, results_path, run_sweep

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "plan"


def _spec(tmp_path: Path) -> Path:
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(
        f"""
workload: [{EXAMPLES / "workload.yaml"}]
cluster: [{EXAMPLES / "cluster.yaml"}]
catalog: {EXAMPLES / "catalog.yaml"}
output: out.jsonl
timeLimit: 1
workers: 1
scenarios:
- name: base
- name: no-h100
  maxCounts: {{h100x8: 0}}
grid:
  prices.a100x8: [20, 40]
"""
    )
    return sweep


def test_process_pool_sweep_appends_jsonl_and_resumes(tmp_path: Path) -> None:
    spec = load_sweep(_spec(tmp_path))
    assert [s.name for s in spec.scenarios] == [
        "base",
        "no-h100",
        "prices.a100x8=20",
        "prices.a100x8=40",
    ]
    assert spec.output == "out.jsonl"
    output = results_path(spec, tmp_path)
    assert output == tmp_path / "out.jsonl"
    base = build_plan_input(spec.workload, spec.catalog, spec.cluster, None, None)
    options = PlanOptions(time_limit=spec.time_limit, workers=spec.workers, seed=spec.seed)
    # an interrupted run: only `base` made it to the file (plus a torn line)
    first = run_sweep(base, spec.scenarios[:1], options, output, max_workers=2)
    with Path(output).open("a") as f:
        f.write('{"scenario": "no-h1')
    rest = run_sweep(base, spec.scenarios, options, output, max_workers=2)
    assert [r["scenario"] for r in first] == ["base"]
    assert sorted(r["scenario"] for r in rest) == [
        "no-h100",
        "prices.a100x8=20",
        "prices.a100x8=40",
    ]
    rows = {}
    for line in Path(output).read_text().splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        rows[row["scenario"]] = row
    assert len(rows) == 4
    assert "h100x8" in rows["base"]["add"] and "h100x8" not in rows["no-h100"]["add"]
    assert rows["no-h100"]["placed_pods"] < rows["base"]["placed_pods"]
    assert rows["prices.a100x8=20"]["cost"] < rows["prices.a100x8=40"]["cost"]
    assert all(r["workers"] == 1 and r["seed"] == 0 for r in rows.values())
    # everything is there now: nothing to solve
    assert run_sweep(base, spec.scenarios, options, output) == []


def test_bad_sweep_and_unknown_executor(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "catalog: c.yaml\nworkload: [w.yaml]\nscenarios:\n- name: x\n  prices: {a: -1}\n"
    )
    with pytest.raises(InputError, match=r"bad.yaml: scenarios\[0\].prices.a: must be a number"):
        load_sweep(bad)
    with pytest.raises(InputError, match="unknown executor 'slurm'"):
        make_executor("slurm", 1)
    spec = load_sweep(_spec(tmp_path))
    base = build_plan_input(spec.workload, spec.catalog, spec.cluster, None, None)
    with pytest.raises(InputError, match=r"scenario s: prices\.nope: no such node type"):
        apply_scenario(base, Scenario(name="s", prices=(("nope", 1.0),)))


def test_sweep_value_is_read_and_checked(tmp_path: Path) -> None:
    sweep = _spec(tmp_path)
    assert load_sweep(sweep).value == "pods"
    sweep.write_text(sweep.read_text() + "value: gpu\n")
    assert load_sweep(sweep).value == "gpu"
    sweep.write_text(sweep.read_text().replace("value: gpu", "value: dollars"))
    with pytest.raises(InputError, match=r"sweep.yaml: value: must be one of pods, gpu"):
        load_sweep(sweep)


def test_results_that_cannot_be_written_or_read_are_input_errors(tmp_path: Path) -> None:
    spec = load_sweep(_spec(tmp_path))
    base = build_plan_input(spec.workload, spec.catalog, spec.cluster, None, None)
    options = PlanOptions(time_limit=spec.time_limit, workers=1, seed=0)
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(InputError, match=r"file/out.jsonl: cannot write the sweep results"):
        run_sweep(base, spec.scenarios[:1], options, blocker / "out.jsonl")
    folder = tmp_path / "folder.jsonl"
    folder.mkdir()
    with pytest.raises(InputError, match=r"folder.jsonl: cannot read the sweep results"):
        run_sweep(base, spec.scenarios[:1], options, folder)
