"""`gangplan queues validate|tree` on the bundled examples and on broken trees."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from clients.cli import app

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "examples" / "queues" / "hierarchy-engineering.yaml")
runner = CliRunner()


def test_validate_valid_tree_exits_0() -> None:
    result = runner.invoke(app, ["queues", "validate", "-f", EXAMPLE, "-o", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data["queues"]) == {
        "root",
        "engineering",
        "backend-team",
        "frontend-team",
        "research",
    }
    assert data["queues"]["engineering"] == {"valid": True, "reason": "", "warnings": []}


def test_validate_invalid_tree_exits_1(tmp_path: Path) -> None:
    bad = tmp_path / "q.yaml"
    bad.write_text(
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: p}\nspec: {capability: {cpu: '2'}}\n---\n"
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: c}\nspec: {parent: p, capability: {cpu: '4'}}\n"
    )
    result = runner.invoke(app, ["queues", "validate", "-f", str(bad), "-o", "json"])
    assert result.exit_code == 1
    data = json.loads(result.stdout)["queues"]
    assert data["c"] == {
        "valid": False,
        "reason": "capability[cpu]=4 exceeds its ancestor's capability=2",
        "warnings": [],
    }
    assert (
        data["p"]["valid"] is False
        and "smaller than its descendants' max capability=4" in data["p"]["reason"]
    )
    table = runner.invoke(app, ["queues", "validate", "-f", str(bad)])
    assert table.exit_code == 1 and "c: invalid" in table.stdout


def test_tree_json_and_drawing() -> None:
    result = runner.invoke(app, ["queues", "tree", "-f", EXAMPLE, "-o", "json"])
    assert result.exit_code == 0
    q = json.loads(result.stdout)["queues"]
    assert q["backend-team"]["realCapability"]["nvidia.com/gpu"] == 20
    assert q["frontend-team"]["realCapability"]["nvidia.com/gpu"] == 8
    assert q["root"]["children"] == ["engineering", "research"]
    drawn = runner.invoke(app, ["queues", "tree", "-f", EXAMPLE])
    assert (
        drawn.exit_code == 0 and "backend-team" in drawn.stdout and "└── research" in drawn.stdout
    )


def test_schedule_reports_enqueue_decisions() -> None:
    result = runner.invoke(app, ["schedule", "-f", EXAMPLE, "--engine", "greedy"])
    groups = json.loads(result.stdout)["podgroups"]
    assert groups["default/web-train"] == {
        "enqueued": False,
        "placed": False,
        "reason": "not enqueued: queue engineering: nvidia.com/gpu 8 requested + 18 in use > realCapability 24 (over by 2)",
    }
    assert groups["default/api-train"]["placed"] and groups["default/lab-exp"]["placed"]


NODEGROUP_CONF = str(ROOT / "examples" / "queues" / "nodegroup.conf")


def test_nodegroup_examples() -> None:
    for name, expected in (
        ("nodegroup-nlp-recommend.yaml", {"nlp-train": "ng1-", "rec-train": "ng2-"}),
        ("nodegroup-private-public.yaml", {"rec-batch": "p"}),
    ):
        data = json.loads(
            runner.invoke(
                app,
                [
                    "schedule",
                    "-f",
                    str(ROOT / "examples" / "queues" / name),
                    "--config",
                    NODEGROUP_CONF,
                ],
            ).stdout
        )
        for job, prefix in expected.items():
            nodes = {p["node"] for k, p in data["placements"].items() if job in k}
            assert nodes and all(n and n.startswith(prefix) for n in nodes), (job, nodes)
    data = json.loads(
        runner.invoke(
            app,
            [
                "schedule",
                "-f",
                str(ROOT / "examples" / "queues" / "nodegroup-private-public.yaml"),
                "--config",
                NODEGROUP_CONF,
            ],
        ).stdout
    )
    assert not data["podgroups"]["default/tts-long"]["placed"]
    assert (
        "node does not satisfy the node group affinity"
        in data["podgroups"]["default/tts-long"]["reason"]
    )


KAI_USAGE = """\
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: a}
spec:
  resources:
    gpu: {quota: 0, limit: -1, overQuotaWeight: 1}
    cpu: {quota: -1, limit: -1, overQuotaWeight: 1}
    memory: {quota: -1, limit: -1, overQuotaWeight: 1}
---
apiVersion: v1
kind: Node
metadata: {name: n0}
status: {allocatable: {cpu: "32", memory: 64Gi, nvidia.com/gpu: "8", pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: old, namespace: default, labels: {kai.scheduler/queue: a},
           creationTimestamp: "2026-11-29T00:00:00Z"}
spec: {nodeName: n0, containers: [{name: c, resources: {requests: {nvidia.com/gpu: "4"}}}]}
status: {phase: Running}
"""


def test_queues_tree_counts_usage_to_now(tmp_path: Path) -> None:
    """4 of 8 GPUs for the 12 h before --now, over a 24 h window: 48 / 192 = 0.25."""
    (tmp_path / "c.yaml").write_text(KAI_USAGE)
    (tmp_path / "u.conf").write_text("usageDBConfig: {usageParams: {windowSize: 24h}}\n")
    args = ["queues", "tree", "-f", str(tmp_path / "c.yaml"), "--config", str(tmp_path / "u.conf")]
    result = runner.invoke(app, [*args, "--now", "2026-11-29T12:00:00Z", "-o", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["queues"]["a"]["usage"]["nvidia.com/gpu"] == 0.25
    bad = runner.invoke(app, [*args, "--now", "yesterday"])
    assert bad.exit_code != 0 and "--now 'yesterday': not an RFC 3339 time" in bad.output
