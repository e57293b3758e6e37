"""`gangplan why`: one gang's certificate from the command line (table, json, yaml), by
gang or by pod, and one clear line for a gang or pod that is not in the input."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from clients.cli import app
from solver.config import SchedulerConf

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "examples" / "ganggroup-gpu.yaml")
GATHER = str(ROOT / "examples" / "topology" / "koordinator-gather.yaml")
runner = CliRunner()


def test_why_prints_the_certificate_first() -> None:
    out = runner.invoke(app, ["why", "-f", EXAMPLE, "--gang", "default/train-big"])
    assert out.exit_code == 0, out.output
    first = out.stdout.splitlines()[0]
    assert first.startswith("capacity (proven): gang default/train-big needs 16 × 1"), first
    assert "best places (nvidia.com/gpu): gpu-a1 4, gpu-a2 4, gpu-a3 3" in out.stdout
    assert "counted: when its turn came: gang default/train-big: 3 of 16" in out.stdout


def test_why_json_names_the_domain_for_a_pod() -> None:
    out = runner.invoke(app, ["why", "-f", GATHER, "--pod", "default/train-big-0", "-o", "json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["gang"] == "default/train-big" and data["placed"] is False
    cert = data["certificate"]
    assert cert["kind"] == "domain" and cert["proven"] is True
    assert cert["constraint"] == "one SpineLayer domain (MustGather)"
    assert [p["name"] for p in cert["places"]] == ["s2", "s1"]
    assert data["reason"].startswith(cert["sentence"])
    assert set(data["pods"].values()) == {None}


def test_why_of_a_placed_gang_says_so() -> None:
    out = runner.invoke(app, ["why", "-f", EXAMPLE, "--gang", "default/llm-worker", "-o", "yaml"])
    assert out.exit_code == 0, out.output
    data = yaml.safe_load(out.stdout)
    assert data["placed"] is True and data["certificate"] is None
    assert all(data["pods"].values())


def test_why_refuses_an_unknown_gang_or_pod_in_one_line() -> None:
    for flags, words in (
        (["--gang", "default/nope"], "--gang default/nope: no PodGroup default/nope"),
        (["--pod", "nope"], "--pod nope: no pod default/nope"),
        ([], "name the gang with --gang NS/NAME or a pod with --pod NS/NAME"),
    ):
        out = runner.invoke(app, ["why", "-f", EXAMPLE, *flags])
        assert out.exit_code == 2 and out.stdout == ""
        assert words in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_why_estimates_the_start_from_the_running_pods_ends(tmp_path: Path) -> None:
    """n1 (8 GPUs) runs `old` until 20:10; a 2 × 4 GPU gang starts then, after it."""
    manifest = tmp_path / "c.yaml"
    manifest.write_text(
        yaml.safe_dump_all(
            [
                {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                 "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110",
                                            "nvidia.com/gpu": "8"}}},
                {"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": "old", "namespace": "default",
                              "annotations": {"gangplan.io/expected-end": "2026-11-28T20:10:00Z"}},
                 "spec": {"nodeName": "n1", "containers": [
                     {"name": "c", "resources": {"requests": {"nvidia.com/gpu": "8"}}}]},
                 "status": {"phase": "Running"}},
                *[{"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": f"new-{i}", "namespace": "default"},
                   "spec": {"containers": [
                       {"name": "c", "resources": {"requests": {"nvidia.com/gpu": "4"}}}]}}
                  for i in range(1)],
            ]
        )
    )  # fmt: skip
    out = runner.invoke(
        app,
        [
            "why",
            "-f",
            str(manifest),
            "--pod",
            "new-0",
            "--now",
            "2026-11-28T18:00:00Z",
            "-o",
            "json",
        ],
    )
    assert out.exit_code == 0, out.output
    start = json.loads(out.stdout)["start"]
    assert start["at"] == "2026-11-28T20:10:00+00:00" and start["after"] == ["default/old"]
    table = runner.invoke(
        app, ["why", "-f", str(manifest), "--pod", "new-0", "--now", "2026-11-28T18:00:00Z"]
    )
    assert "when: starts in ~2 h 10 min" in table.stdout


def test_why_refuses_a_bad_clock_in_one_line() -> None:
    for flags, words in (
        (["--now", "yesterday"], "--now 'yesterday': not an RFC 3339 time"),
        (["--default-runtime", "99999999d"], "--default-runtime '99999999d': not a duration"),
    ):
        out = runner.invoke(app, ["why", "-f", EXAMPLE, "--gang", "default/train-big", *flags])
        assert out.exit_code == 2 and out.stdout == ""
        assert words in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_a_long_unknown_name_is_cut_in_the_error_line() -> None:
    out = runner.invoke(app, ["why", "-f", EXAMPLE, "--gang", "x" * 5000])
    assert out.exit_code == 2 and len(out.stderr) < 400, len(out.stderr)


def test_why_reads_a_priority_class_runtime_from_the_conf(tmp_path: Path) -> None:
    """`old` (class `train`, created 17:00) states no end: the conf gives `train` 3 h, so
    the pod waiting for its node starts at 20:00; without the conf, never."""
    manifest = tmp_path / "c.yaml"
    manifest.write_text(
        yaml.safe_dump_all(
            [
                {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                 "status": {"allocatable": {"cpu": "8", "pods": "110", "nvidia.com/gpu": "8"}}},
                {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                 "metadata": {"name": "train"}, "value": 100},
                {"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": "old", "namespace": "default",
                              "creationTimestamp": "2026-11-28T17:00:00Z"},
                 "spec": {"nodeName": "n1", "priorityClassName": "train", "containers": [
                     {"name": "c", "resources": {"requests": {"nvidia.com/gpu": "8"}}}]},
                 "status": {"phase": "Running"}},
                {"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": "new", "namespace": "default"},
                 "spec": {"containers": [
                     {"name": "c", "resources": {"requests": {"nvidia.com/gpu": "4"}}}]}},
            ]
        )
    )  # fmt: skip
    conf = tmp_path / "gangplan.conf"
    conf.write_text(
        yaml.safe_dump(
            {**SchedulerConf.default().to_dict(),
             "expectedRuntime": {"default": "1h", "priorityClasses": {"train": "3h"}}}
        )
    )  # fmt: skip
    flags = ["why", "-f", str(manifest), "--pod", "new", "--now", "2026-11-28T18:00:00Z"]
    out = runner.invoke(app, [*flags, "--config", str(conf), "-o", "json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["start"]["at"] == "2026-11-28T20:00:00+00:00"
    out = runner.invoke(app, [*flags, "-o", "json"])
    assert json.loads(out.stdout)["start"]["at"] is None


def test_why_buys_from_a_catalogue() -> None:
    """`--catalog`: the nodes change is the cheapest number of one catalogue type (two
    l4x4 nodes at 3.40 for the 16-GPU gang short of 5 GPUs), not copies of its best node."""
    catalog = str(ROOT / "examples" / "plan" / "catalog.yaml")
    out = runner.invoke(
        app,
        ["why", "-f", EXAMPLE, "--gang", "default/train-big", "--catalog", catalog, "-o", "json"],
    )
    assert out.exit_code == 0, out.output
    nodes = [c for c in json.loads(out.stdout)["changes"] if c["kind"] == "nodes"]
    assert nodes == [{"kind": "nodes", "change": "+2 l4x4 node(s) (cost 6.8)", "size": 2,
                      "target": "l4x4", "dimension": ""}]  # fmt: skip
    bad = runner.invoke(app, ["why", "-f", EXAMPLE, "--gang", "default/train-big", "--catalog",
                              str(ROOT / "examples" / "plan" / "workload.yaml")])  # fmt: skip
    assert bad.exit_code == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr


def test_the_readme_start_example_prints_what_the_readme_says() -> None:
    """examples/why/start.yaml: the README's `when` line and the example's changes."""
    start = str(ROOT / "examples" / "why" / "start.yaml")
    args = ["why", "-f", start, "--gang", "research/train", "--now", "2026-11-28T18:00:00Z"]
    out = runner.invoke(app, args)
    assert out.exit_code == 0, out.output
    readme = " ".join((ROOT / "README.md").read_text().split())
    when = next(line for line in out.stdout.splitlines() if line.startswith("when: "))
    assert when.removeprefix("when: ") in readme, when
    assert "preemption: evict 2 pod(s) of research/eval-0, research/llm-pretrain-0" in out.stdout
    assert "nodes: +2 node(s) like gpu-2, empty" in out.stdout
