"""KAI Queues as users write them (KAI's `examples/quickstart/default-queues.yaml` shape):
read, carried over gRPC, refused with a field when wrong, and acted on in a call.

    default-parent-queue (quota 0, limit -1)      cluster: 2 nodes × 8 GPUs
    ├── team-a (GPU quota 4, limit 6, weight 1)
    └── team-b (GPU quota 4, limit -1, weight 3)
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from clients.cli import app
from solver import SchedulerConf, schedule
from solver.changes import changes
from solver.codec import ConvertError, cluster_to_proto, snapshot_from_proto
from solver.errors import ManifestError
from solver.features.kaishare import KaiMode
from solver.features.queues import build_queue_tree, call_requests
from solver.kube import load_objects
from solver.model import Queue
from solver.schedule import snapshot_of
from solver.snapshot import Delta, DeltaError, PodSchema, Workload
from tests.builders import raw

GPU = "nvidia.com/gpu"
EXAMPLE = Path(__file__).parents[3] / "examples/fairshare/kai.yaml"
UNLIMITED = {"quota": -1, "limit": -1, "overQuotaWeight": 1}


def kai_queue(name: str, parent: str | None = None, **gpu: float) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "resources": {
            "gpu": {"quota": 0, "limit": -1, "overQuotaWeight": 1, **gpu},
            "cpu": dict(UNLIMITED),
            "memory": dict(UNLIMITED),
        }
    }
    if parent:
        spec["parentQueue"] = parent
    return {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": name},
            "spec": spec}  # fmt: skip


def job(
    name: str, queue: str, pods: int, gpus: int, priority: str = "train"
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{
        "apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minMember": pods, "queue": queue, "priorityClassName": priority},
    }]  # fmt: skip
    for i in range(pods):
        out.append({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{name}-{i}", "namespace": "default",
                         "annotations": {"pod-group-name": name}},
            "spec": {"schedulerName": "kai-scheduler", "containers": [{"name": "c", "resources": {
                "requests": {GPU: str(gpus), "cpu": "1"}, "limits": {GPU: str(gpus)}}}]},
        })  # fmt: skip
    return out


NODES = [
    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"},
     "status": {"allocatable": {"cpu": "64", "memory": "512Gi", GPU: "8", "pods": "110"}}}
    for i in range(2)
] + [
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": n},
     "value": v} for n, v in (("train", 50), ("build", 100))
]  # fmt: skip
QUEUES = [
    kai_queue("default-parent-queue"),
    kai_queue("team-a", "default-parent-queue", quota=4, limit=6),
    kai_queue("team-b", "default-parent-queue", quota=4, overQuotaWeight=3),
]


def test_the_queue_is_read_in_gangplans_units() -> None:
    q = copy.deepcopy(QUEUES[1])
    q["spec"]["resources"]["cpu"] = {"quota": 2000, "limit": 4000, "overQuotaWeight": 2}
    q["spec"]["resources"]["memory"] = {"quota": 1000, "limit": -1, "overQuotaWeight": 1}
    cluster = load_objects(raw(*NODES, QUEUES[0], q))
    kai = cluster.queues["team-a"].kai
    assert cluster.queues["team-a"].parent == "default-parent-queue"
    assert cluster.queues["team-a"].priority == 100  # DefaultQueuePriority
    assert kai is not None
    assert kai.quota == {"cpu": 2000, "memory": 1e9, GPU: 4}  # millicpus, MB -> bytes
    assert kai.limit == {"cpu": 4000, "memory": -1, GPU: 6}
    assert kai.over_quota_weight == {"cpu": 2, "memory": 1, GPU: 1}  # a weight has no unit


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"gpu": {"quota": -2}}, "spec.resources.gpu.quota"),
        ({"gpu": {"limit": "all"}}, "spec.resources.gpu.limit"),
        ({"gpu": {"overQuotaWeight": -1}}, "spec.resources.gpu.overQuotaWeight"),
        ({"tpu": {"quota": 1}}, "spec.resources.tpu"),
        ({"gpu": {"quota": float("inf")}}, "spec.resources.gpu.quota"),
    ],
)
def test_a_bad_queue_is_one_line_naming_its_field(change: dict[str, Any], field: str) -> None:
    q = copy.deepcopy(QUEUES[1])
    q["spec"]["resources"].update(change)
    with pytest.raises(ManifestError) as err:
        load_objects(raw(*NODES, QUEUES[0], q))
    assert err.value.field == field and "\n" not in str(err.value)


def test_beside_volcano_queues_the_kai_ones_are_noted_not_acted_on() -> None:
    """A cluster running both schedulers: one queue dialect shares it (Volcano's, whose
    plugins the conf names); the KAI Queues are noted, never mixed into its tree."""
    volcano = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
               "metadata": {"name": "v"}, "spec": {"weight": 1}}  # fmt: skip
    cluster = load_objects(raw(*NODES, *QUEUES, volcano))
    assert set(cluster.queues) == {"v"} and cluster.queues["v"].kai is None
    assert any("KAI Queues default-parent-queue, team-a, team-b not acted on" in n
               for n in cluster.notes)  # fmt: skip


def test_a_resource_left_unset_is_noted_as_kai_reads_it() -> None:
    q = copy.deepcopy(QUEUES[1])
    del q["spec"]["resources"]["memory"]
    q["spec"]["preemptMinRuntime"] = "10m"
    q["spec"]["displayName"] = "Team A"
    cluster = load_objects(raw(*NODES, QUEUES[0], q))
    assert any("no limit for memory: KAI reads it as 0" in n for n in cluster.notes)
    assert any("spec displayName not acted on" in n for n in cluster.notes)
    kai = cluster.queues[q["metadata"]["name"]].kai
    assert kai is not None and kai.preempt_min_runtime == 600


def test_over_grpc_the_queue_keeps_its_kai_numbers_and_bad_ones_name_their_path() -> None:
    cluster = load_objects(raw(*NODES, *QUEUES))
    msg = cluster_to_proto(cluster)
    again = snapshot_from_proto(msg, "cluster", PodSchema())
    assert again.queues["team-b"].kai == cluster.queues["team-b"].kai
    msg.queues[1].kai.limit[GPU] = -3
    msg.queues[2].kai.quota["tpu"] = 1
    msg.queues[0].ClearField("kai")
    with pytest.raises(ConvertError) as err:
        snapshot_from_proto(msg, "cluster", PodSchema())
    text = str(err.value)
    assert "cluster.queues[1].kai.limit[nvidia.com/gpu]" in text
    assert "cluster.queues[2].kai.quota[tpu]" in text
    assert "cluster.queues[0].kai" in text  # a Volcano queue among KAI ones


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_fair_share_down_the_tree_and_limits_in_a_call(engine: str) -> None:
    """16 GPUs, both teams ask 12: quotas 4 + 4, the 8 left by weight 1:3 -> 2 and 6, so
    fair shares 6 and 10; team-a's job of 8 GPUs is over its limit 6 and waits, team-b's
    runs; team-a's 4-GPU job runs too (idle room beyond fair share is used)."""
    objects = [*NODES, *QUEUES, *job("a-big", "team-a", 2, 4), *job("a-small", "team-a", 1, 4),
               *job("b", "team-b", 3, 4)]  # fmt: skip
    snapshot = snapshot_of(load_objects(raw(*objects)))
    workload = Workload.everything(snapshot)
    mode = KaiMode(SchedulerConf.default())
    tree = build_queue_tree(snapshot, mode, ["team-a", "team-b"])
    assert tree is not None
    mode.settle(snapshot, workload, tree, ["team-a", "team-b"])
    assert call_requests(snapshot, workload, mode)["team-a"][GPU] == 12
    assert mode.fair["team-a"][GPU] == 6 and mode.fair["team-b"][GPU] == 10
    assert mode.fair["default-parent-queue"][GPU] == 16
    d = schedule(snapshot, SchedulerConf.default(), engine=engine, workers=1)  # verified
    placed = {g for g, o in d.podgroups.items() if o.placed}
    assert placed == {"default/a-small", "default/b"}
    assert "limit" in (d.podgroups["default/a-big"].reason or "")


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_a_job_of_a_parent_queue_waits_as_kai_skips_it(engine: str) -> None:
    objects = [*NODES, *QUEUES, *job("dept", "default-parent-queue", 1, 1)]
    d = schedule(
        snapshot_of(load_objects(raw(*objects))), SchedulerConf.default(), engine=engine, workers=1
    )
    outcome = d.podgroups["default/dept"]
    assert not outcome.placed and "not a leaf queue" in (outcome.reason or "")


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_a_pod_without_a_podgroup_is_in_the_queue_its_label_names(engine: str) -> None:
    """KAI's `kai.scheduler/queue` label (its pod-grouper copies it into the PodGroup):
    three 4-GPU pods of team-a, limit 6: one runs."""
    pods = []
    for i in range(3):
        (_, pod) = job(f"p{i}", "team-a", 1, 4)
        del pod["metadata"]["annotations"]
        pod["metadata"]["labels"] = {"kai.scheduler/queue": "team-a"}
        pods.append(pod)
    d = schedule(snapshot_of(load_objects(raw(*NODES, *QUEUES, *pods))), SchedulerConf.default(),
                 engine=engine, workers=1)  # fmt: skip
    assert sum(1 for p in d.placements.values() if p.node) == 1


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_shared_gpu_pods_count_their_fraction_against_the_limit(engine: str) -> None:
    """GPU sharing in play: a KAI queue's limits count milli-GPUs. team-a's limit 6 takes
    two 2-GPU pods and four half-GPU pods (KAI's annotation `gpu-fraction: 0.5`), not a
    fifth."""
    objects = [*NODES, *QUEUES, *job("a-whole", "team-a", 2, 2)]
    for i in range(5):
        group, pod = job(f"half{i}", "team-a", 1, 0)
        pod["metadata"]["annotations"]["gpu-fraction"] = "0.5"
        pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
        objects += [group, pod]
    d = schedule(snapshot_of(load_objects(raw(*objects))), SchedulerConf.default(), engine=engine,
                 workers=1)  # fmt: skip
    halves = sum(1 for k, p in d.placements.items() if p.node and "half" in k)
    assert d.podgroups["default/a-whole"].placed and halves == 4


def test_queues_tree_draws_kai_fair_shares(tmp_path: Path) -> None:
    """`gangplan queues tree` on KAI Queues: quota, limit, weight and the fair share."""
    path = tmp_path / "kai.yaml"
    objects = [*NODES, *QUEUES, *job("a", "team-a", 2, 4), *job("b", "team-b", 3, 4)]
    path.write_text(yaml.safe_dump_all(objects))
    result = CliRunner().invoke(app, ["queues", "tree", "-f", str(path), "-o", "json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    team_a, team_b = out["queues"]["team-a"], out["queues"]["team-b"]
    assert team_a["limit"][GPU] == 6 and team_b["overQuotaWeight"][GPU] == 3
    assert team_a["fairShare"][GPU] == 6 and team_b["fairShare"][GPU] == 10
    table = CliRunner().invoke(app, ["queues", "tree", "-f", str(path)])
    assert "fair share" in table.stdout and "team-b priority 100" in table.stdout


def test_why_offers_the_kai_quota_or_limit_that_lets_the_gang_run() -> None:
    """`gangplan why` on the fair-share example: `serve` (non-preemptible, 8 GPUs) is held by
    inference's quota of 4 for non-preemptible jobs: +4 GPUs of quota, checked, and +3 would
    not run; a preemptible 8-GPU job in team-a (limit 6) gets +2 GPUs of limit."""
    cluster = load_objects(raw(*yaml.safe_load_all(EXAMPLE.read_text())))
    snapshot = snapshot_of(cluster)
    conf = SchedulerConf.default()
    d = schedule(snapshot, conf, engine="greedy")
    cert = d.certificates["ml/serve"]
    assert (
        cert.kind == "quota"
        and cert.constraint == "queue inference (quota for non-preemptible jobs)"
    )
    found = [c for c in changes(snapshot, conf, "ml/serve", cert) if c.kind == "quota"]
    assert [c.text for c in found] == ["+4 nvidia.com/gpu quota on KAI queue inference"]

    objects = [*NODES, *QUEUES, *job("big", "team-a", 2, 4)]
    snapshot = snapshot_of(load_objects(raw(*objects)))
    d = schedule(snapshot, conf, engine="greedy")
    found = changes(snapshot, conf, "default/big", d.certificates["default/big"])
    assert "+2 nvidia.com/gpu limit on KAI queue team-a" in [c.text for c in found]


def test_an_update_mixing_queue_kinds_names_the_field() -> None:
    """UpdateSnapshot deltas: a Volcano queue upserted into a snapshot of KAI queues is
    refused with its field path, as a whole snapshot mixing them is."""
    snapshot = snapshot_of(load_objects(raw(*NODES, *QUEUES)))
    with pytest.raises(DeltaError) as err:
        snapshot.apply(Delta(upsert_queues=(Queue(name="volcano-q"),)))
    assert "upsert_queues[0].kai" in str(err.value)
    kai = snapshot.queues["team-a"].kai
    assert kai is not None
    same = snapshot.apply(
        Delta(upsert_queues=(Queue(name="team-c", parent="default-parent-queue", kai=kai),))
    )
    assert same.queues["team-c"].kai == kai


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_a_non_preemptible_job_naming_a_queue_that_is_not_there_waits(engine: str) -> None:
    """Found by the slow manifest fuzzer: a build job whose PodGroup names a queue that is
    not among the KAI Queues crashed the quota rows of non-preemptible jobs (KeyError). It
    is refused at enqueue, as a job of an unknown queue."""
    objects = [*NODES, *QUEUES, *job("lost", "nowhere", 1, 1, priority="build")]
    d = schedule(
        snapshot_of(load_objects(raw(*objects))), SchedulerConf.default(), engine=engine, workers=1
    )
    outcome = d.podgroups["default/lost"]
    assert not outcome.placed and "nowhere" in (outcome.reason or "")


def test_queues_validate_checks_kai_queues_as_kai_would_admit_them(tmp_path: Path) -> None:
    """`gangplan queues validate` on KAI Queues: not Volcano's webhook rules. A missing parent
    is invalid; a limit of 0 and a quota above its limit are warnings."""
    orphan = kai_queue("orphan", "no-such-parent")
    odd = kai_queue("odd", "default-parent-queue", quota=6, limit=4)
    odd["spec"]["resources"]["cpu"] = {"quota": 0, "limit": 0, "overQuotaWeight": 1}
    path = tmp_path / "q.yaml"
    path.write_text(yaml.safe_dump_all([*NODES, *QUEUES, orphan, odd]))
    result = CliRunner().invoke(app, ["queues", "validate", "-f", str(path), "-o", "json"])
    assert result.exit_code == 1
    verdicts = json.loads(result.stdout)["queues"]
    assert not verdicts["orphan"]["valid"] and "no-such-parent" in verdicts["orphan"]["reason"]
    assert verdicts["odd"]["valid"]
    assert any("cpu limit is 0" in w for w in verdicts["odd"]["warnings"])
    assert any("quota 6 exceeds its limit 4" in w for w in verdicts["odd"]["warnings"])
    assert all(verdicts[q]["valid"] for q in ("team-a", "team-b", "default-parent-queue"))


def test_a_queue_without_resources_is_refused_as_kais_webhook_refuses_it() -> None:
    """`pkg/apis/scheduling/v2/queue_webhook.go`: "resources must be specified"."""
    bare = {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": "bare"},
            "spec": {"parentQueue": "default-parent-queue"}}  # fmt: skip
    with pytest.raises(ManifestError) as err:
        load_objects(raw(*NODES, *QUEUES, bare))
    assert err.value.field == "spec.resources" and "must be specified" in str(err.value)
