"""The live cluster, read once (`clients.scheduler.live`): `gangplan dump`, and `schedule`,
`explain` and `plan` with `--kubeconfig`, against the fake API server. "Would this job fit?"
asked of the cluster gives the answer the same objects get from files, the dump replays to
the same answer, and nothing is written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from clients.cli import app
from clients.kubefake import FakeApiServer, default_resources, kubeconfig_for, load
from solver.kube import expand_workloads, read_sources
from tests.clients.scheduler.conftest import Harness, gang, node, pod
from tests.clients.scheduler.test_dialects import EXAMPLES

ROOT = Path(__file__).resolve().parents[3]
WRITES = ("POST", "PUT", "PATCH", "DELETE", "BIND")
SERVER_KEPT = ("uid", "creationTimestamp", "resourceVersion")  # the fake sets them on create


def _kubeconfig(api: FakeApiServer, tmp_path: Path) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(kubeconfig_for(api.url)))
    return str(path)


def _run(*args: str) -> Any:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result


def _placements(*args: str) -> dict[str, str]:
    out = json.loads(_run("schedule", "--engine", "greedy", "-o", "json", *args).stdout)
    return {k: p["node"] for k, p in out["placements"].items()}


def _load_example(api: FakeApiServer, path: str) -> None:
    expanded, _ = expand_workloads(read_sources([str(ROOT / path)]))
    load(api.store, [raw.body for raw in expanded])  # kinds the fake lacks: the reader's too


def _writes(api: FakeApiServer) -> int:
    return sum(api.store.counts.get(verb, 0) for verb in WRITES)


@pytest.mark.parametrize("path", EXAMPLES)
def test_the_live_cluster_and_its_dump_decide_as_the_files_do(
    cluster: Harness, path: str, tmp_path: Path
) -> None:
    _load_example(cluster.api, path)
    conf = _kubeconfig(cluster.api, tmp_path)
    writes = _writes(cluster.api)
    expected = _placements("-f", str(ROOT / path))
    assert _placements("--kubeconfig", conf) == expected
    dump = tmp_path / "dump.yaml"
    dump.write_text(_run("dump", "--kubeconfig", conf).stdout)
    assert _placements("-f", str(dump)) == expected
    assert _writes(cluster.api) == writes  # read-only


def test_a_dump_loaded_into_another_cluster_dumps_the_same(
    cluster: Harness, tmp_path: Path
) -> None:
    _load_example(cluster.api, "examples/topology/volcano-hypernode.yaml")
    first = yaml.safe_load(_run("dump", "--kubeconfig", _kubeconfig(cluster.api, tmp_path)).stdout)
    assert first["kind"] == "List" and first["items"]
    for item in first["items"]:
        assert item["apiVersion"] and item["kind"]  # a list's items lose them on the wire
    with FakeApiServer(default_resources()) as other:
        assert load(other.store, [dict(o) for o in first["items"]]) == []
        again = json.loads(
            _run("dump", "-o", "json", "--kubeconfig", _kubeconfig(other, tmp_path)).stdout
        )

    def bare(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            {**o, "metadata": {k: v for k, v in o["metadata"].items() if k not in SERVER_KEPT}}
            for o in items
        ]

    assert bare(again["items"]) == bare(first["items"])


def test_would_this_job_fit_is_answered_against_the_live_cluster(
    cluster: Harness, tmp_path: Path
) -> None:
    # two 4-GPU nodes, one already full: a 2-pod job of 2 GPUs fits only on n2
    cluster.create(node("n1"), node("n2"), pod("busy", gpus=4, node_name="n1"))
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump_all(gang("job", 2, gpus=2)))
    conf = _kubeconfig(cluster.api, tmp_path)
    got = _placements("--kubeconfig", conf, "-f", str(job), "--scheduler-name", "gangplan")
    assert got == {"default/job-0": "n2", "default/job-1": "n2"}
    dump = tmp_path / "dump.yaml"
    dump.write_text(_run("dump", "--kubeconfig", conf).stdout)
    offline = _placements("-f", str(dump), "-f", str(job), "--scheduler-name", "gangplan")
    assert offline == got
    assert "job-0" not in cluster.pods()  # nothing submitted


def test_a_file_object_replaces_the_clusters_of_the_same_name(
    cluster: Harness, tmp_path: Path
) -> None:
    cluster.create(node("n1"), pod("p", gpus=8))  # 8 GPUs: fits nowhere
    smaller = tmp_path / "p.yaml"
    smaller.write_text(yaml.safe_dump(pod("p", gpus=2)))
    result = _run(
        "schedule",
        "--engine",
        "greedy",
        "--scheduler-name",
        "gangplan",
        "--kubeconfig",
        _kubeconfig(cluster.api, tmp_path),
        "-f",
        str(smaller),
    )
    assert json.loads(result.stdout)["placements"]["default/p"]["node"] == "n1"
    assert "Pod default/p replaces the cluster's" in result.stderr


def test_explain_and_plan_read_the_live_cluster(cluster: Harness, tmp_path: Path) -> None:
    cluster.create(node("n1"), node("n2"), pod("p", gpus=2))
    conf = _kubeconfig(cluster.api, tmp_path)
    dump = tmp_path / "dump.yaml"
    dump.write_text(_run("dump", "--kubeconfig", conf).stdout)
    live = json.loads(
        _run(
            "explain", "--pod", "default/p", "--scheduler-name", "gangplan", "--kubeconfig", conf
        ).stdout
    )
    offline = json.loads(
        _run(
            "explain", "--pod", "default/p", "--scheduler-name", "gangplan", "-f", str(dump)
        ).stdout
    )
    assert live == offline and live
    plan_live = json.loads(_run("plan", "--kubeconfig", conf, "-o", "json").stdout)
    plan_dump = json.loads(_run("plan", "--cluster", str(dump), "-o", "json").stdout)
    for d in (plan_live, plan_dump):  # timings
        d.pop("seconds", None)
        d.pop("stats", None)
    assert plan_live == plan_dump


def test_a_kind_the_user_may_not_read_is_left_out_with_a_note(
    cluster: Harness, tmp_path: Path
) -> None:
    cluster.create(node("n1"), pod("p"))
    cluster.api.store.faults.fail["GET /priorityclasses"] = [403, 1]
    result = _run("dump", "--kubeconfig", _kubeconfig(cluster.api, tmp_path))
    assert "priorityclasses.scheduling.k8s.io: not readable (403): left out" in result.stderr
    assert {o["kind"] for o in yaml.safe_load(result.stdout)["items"]} == {"Node", "Pod"}


def test_a_cluster_that_cannot_be_read_is_one_line_and_exit_2(tmp_path: Path) -> None:
    with FakeApiServer(default_resources()) as api:
        conf = _kubeconfig(api, tmp_path)
    for args in (
        ("dump", "--kubeconfig", conf),
        ("schedule", "--kubeconfig", conf),
        ("schedule", "--kubeconfig", str(tmp_path / "missing")),
        ("schedule",),
        ("dump", "--kubeconfig", conf, "-o", "table"),
    ):
        result = CliRunner().invoke(app, list(args))
        assert result.exit_code == 2, (args, result.output)
        assert result.stdout == ""
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert "Traceback" not in result.stderr
