"""Consolidation over gRPC: `SolveOptions.consolidate` (or the conf's `consolidation`
action) on PlaceJob and Preempt, through the Python client and the CLI's `--server`.

n0 [4 GPU: run-0 2]   n1 [4 GPU: run-1 2]      job: 1 × 3 GPU
-> run-0 moves to n1, the job's pod goes to n0 (`Decision.moves`)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

import server.servicer as servicer
from clients.cli import app
from clients.client import Client
from gangplan.v1 import cluster_pb2 as pb
from solver.config import SchedulerConf
from tests.server.conftest import gang_job, gpu_pod, small_cluster

MOVED = [("default/run-0", "default/run-0", "n0", "n1")]


def _fragmented() -> pb.Cluster:
    cluster = small_cluster(nodes=2)
    cluster.pods.extend(gpu_pod(f"run-{i}", gpus=2, node=f"n{i}", priority=50) for i in range(2))
    return cluster


def _moves(decision: Any) -> list[tuple[str, str, str, str]]:
    return [(m.pod, m.unit, m.from_node, m.to_node) for m in decision.moves]


def test_place_job_consolidates_when_asked(start: Any) -> None:
    _, port = start()
    with Client(f"127.0.0.1:{port}", timeout=30) as client:
        plain = client.place_job(gang_job("big", 1, gpus=3), cluster=_fragmented())
        moved = client.place_job(
            gang_job("big", 1, gpus=3), cluster=_fragmented(), consolidate=True
        )
    assert not plain.placed and not plain.decision.moves
    assert moved.placed and _moves(moved.decision) == MOVED
    assert {p.pod: p.node for p in moved.decision.placements} == {"default/big-0": "n0"}


def test_the_conf_action_turns_it_on_and_preempt_prefers_moves(start: Any) -> None:
    conf = yaml.safe_dump(
        {**SchedulerConf.default().to_dict(), "actions": "enqueue, allocate, consolidation"}
    )
    _, port = start()
    with Client(f"127.0.0.1:{port}", timeout=30) as client:
        by_conf = client.place_job(
            gang_job("big", 1, gpus=3), cluster=_fragmented(), scheduler_conf=conf
        )
        preempting = client.preempt(
            gang_job("big", 1, gpus=3), cluster=_fragmented(), consolidate=True
        )
    assert _moves(by_conf.decision) == MOVED
    assert _moves(preempting.decision) == MOVED and not preempting.decision.victims


EXAMPLE = str(
    Path(__file__).resolve().parents[2] / "examples" / "preemption" / "consolidation.yaml"
)


def test_cli_consolidates_here_and_on_a_server_alike(start: Any) -> None:
    _, port = start()
    runner = CliRunner()
    args = ["schedule", "-f", EXAMPLE, "--engine", "greedy", "--consolidate", "-o", "json"]
    local = runner.invoke(app, args)
    remote = runner.invoke(app, [*args, "--server", f"127.0.0.1:{port}"])
    assert local.exit_code == 0 and remote.exit_code == 0, remote.output
    here, there = json.loads(local.stdout), json.loads(remote.stdout)
    assert (
        here["moves"]
        == there["moves"]
        == [{"pod": "default/job-a", "unit": "default/job-a", "from": "node-1", "to": "node-2"}]
    )
    assert here["placements"]["default/waiting"]["node"] == "node-1"
    assert there["placements"]["default/waiting"]["node"] == "node-1"
    plain = runner.invoke(app, [*args[:-3], "-o", "json"])
    assert "moves" not in json.loads(plain.stdout)


def test_enqueue_answers_admission_without_planning_moves(start: Any, monkeypatch: Any) -> None:
    """Moves change no queue's verdict: Enqueue with the conf's `consolidation` action
    answers from the placement alone and never runs the moves planner."""

    def no_moves(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("Enqueue planned moves")

    monkeypatch.setattr(servicer, "schedule_moving", no_moves)
    conf = yaml.safe_dump(
        {**SchedulerConf.default().to_dict(), "actions": "enqueue, allocate, consolidation"}
    )
    _, port = start()
    with Client(f"127.0.0.1:{port}", timeout=30) as client:
        answer = client.enqueue(gang_job("big", 1, gpus=3), cluster=_fragmented(),
                                scheduler_conf=conf)  # fmt: skip
    assert [(a.gang, a.admitted) for a in answer.admissions] == [("default/big", True)]
