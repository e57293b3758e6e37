"""Dumps as `kubectl get -A -o yaml` gives them: PodGroup objects missing, pods for other
schedulers, several namespaces."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from clients.cli import app
from solver import schedule
from solver.model import PodSelection
from tests.builders import model, node, pod, podgroup


def test_volcano_pods_without_their_podgroup_form_one_gang_of_all_of_them() -> None:
    pods = [
        pod(f"w{i}", "ml")
        .annotate("scheduling.k8s.io/group-name", "train")
        .annotate("scheduling.volcano.sh/queue-name", "research")
        .requests(gpu=1)
        .obj()
        for i in range(3)
    ]
    cluster = model(node("n0").gpu(2).obj(), *pods)
    gang = cluster.gangs["ml/train"]
    assert (gang.min_member, gang.dialect, gang.queue) == (3, "scheduling.volcano.sh", "research")
    assert any("PodGroup 'ml/train' is not in the input" in n for n in cluster.notes)
    decision = schedule(cluster, engine="greedy")
    assert not decision.podgroups["ml/train"].placed  # 3 GPUs asked, 2 there: none of them


def test_a_dump_without_queue_objects_does_not_refuse_the_queues_its_jobs_name() -> None:
    group = podgroup("train", 1, "volcano")
    group["spec"]["queue"] = "research"
    cluster = model(
        node("n0").gpu(2).obj(),
        group,
        pod("w0").annotate("scheduling.k8s.io/group-name", "train").obj(),
    )
    assert cluster.queues["research"].capability == {}
    assert any(
        "no Queue objects in the input: research treated as open" in n for n in cluster.notes
    )
    assert schedule(cluster, engine="greedy").podgroups["default/train"].placed


def test_coscheduling_label_without_its_podgroup_counts_running_members() -> None:
    label = "scheduling.x-k8s.io/pod-group"
    running = pod("w0").label(label, "g").requests(gpu=1).on("n0").obj()
    pending = [pod(f"w{i}").label(label, "g").requests(gpu=1).obj() for i in (1, 2)]
    cluster = model(node("n0").gpu(4).obj(), running, *pending)
    assert cluster.gangs["default/g"].min_member == 3
    assert cluster.gangs["default/g"].members == ("default/w0", "default/w1", "default/w2")
    decision = schedule(cluster, engine="greedy")
    assert decision.podgroups["default/g"].placed


def _mixed_cluster() -> list[dict[str, object]]:
    busy = pod("web", "prod").requests(cpu=2).on("n0").obj()
    busy["spec"]["schedulerName"] = "my-scheduler"  # bound by another scheduler: still uses n0
    theirs = pod("other", "prod").requests(cpu=1).obj()
    theirs["spec"]["schedulerName"] = "my-scheduler"
    ours = [pod("a", "ml").requests(cpu=1).obj(), pod("b", "dev").requests(cpu=1).obj()]
    ours[0]["spec"]["schedulerName"] = "volcano"
    return [node("n0").cpu(3).obj(), busy, theirs, *ours]


def test_pods_of_other_schedulers_stay_pending_but_their_usage_counts() -> None:
    cluster = PodSelection().apply(model(*_mixed_cluster()))
    assert sorted(p.key for p in cluster.pods) == ["dev/b", "ml/a", "prod/web"]
    assert any("1 (schedulerName my-scheduler)" in n for n in cluster.notes)
    decision = schedule(cluster, engine="greedy")
    assert "prod/other" not in decision.placements
    # 3 cores, 2 used by the other scheduler's pod: one of ours fits
    assert len(set(decision.placed) & {"ml/a", "dev/b"}) == 1


def test_namespaces_restrict_what_is_placed() -> None:
    selection = PodSelection(namespaces=frozenset({"ml"}))
    cluster = selection.apply(model(*_mixed_cluster()))
    assert sorted(p.key for p in cluster.pods if p.pending) == ["ml/a"]
    assert any("1 (namespace dev)" in n for n in cluster.notes)


def test_the_cli_selects_by_scheduler_name_and_namespace(tmp_path: Path) -> None:
    path = tmp_path / "dump.yaml"
    path.write_text(yaml.safe_dump_all(_mixed_cluster()))
    runner = CliRunner()
    result = runner.invoke(app, ["schedule", "-f", str(path), "--engine", "greedy", "-n", "ml"])
    assert result.exit_code == 0, result.output
    assert set(json.loads(result.stdout)["placements"]) == {"ml/a"}
    assert "1 (namespace dev), 1 (namespace prod)" in result.stderr
    result = runner.invoke(
        app, ["schedule", "-f", str(path), "--engine", "greedy", "--scheduler-name", "my-scheduler"]
    )
    assert set(json.loads(result.stdout)["placements"]) == {"prod/other"}
    result = runner.invoke(app, ["schedule", "-f", str(path), "-n", "ml", "-A"])
    assert result.exit_code == 2 and "exclude each other" in result.stderr
