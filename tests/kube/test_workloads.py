"""Workload objects expanded into the pods and gangs their controllers create; each case
checked by hand against the controller code cited in the expander's docstring."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from clients.cli import app
from solver import schedule
from solver.errors import ManifestError
from solver.kube import build_model, load_manifests
from solver.kube.workloads import expand_workloads
from tests.builders import node, pod, queue, raw


def volcano_job(**spec: Any) -> dict[str, Any]:
    template = {
        "spec": {"containers": [{"name": "w", "resources": {"requests": {"nvidia.com/gpu": "4"}}}]}
    }
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": {
            "queue": "research",
            "tasks": [
                {"name": "master", "replicas": 1, "template": template},
                {"name": "worker", "replicas": 3, "minAvailable": 2, "template": template},
            ],
            **spec,
        },
    }


def batch_job(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "sweep", "namespace": "ml"},
        "spec": {
            "template": {
                "metadata": {"labels": {"scheduling.x-k8s.io/pod-group": "sweep"}},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
            },
            **spec,
        },
    }


def test_volcano_job_becomes_its_pods_and_podgroup() -> None:
    objects, notes = expand_workloads(raw(volcano_job(minAvailable=3, maxRetry=2)))
    bodies = [o.body for o in objects]
    group = bodies[0]
    assert group["kind"] == "PodGroup" and group["metadata"] == {"name": "train", "namespace": "ml"}
    assert group["spec"] == {
        "minMember": 3,
        "minTaskMember": {"master": 1, "worker": 2},
        "queue": "research",
        "minResources": {"nvidia.com/gpu": "12"},  # 1 master + 2 workers, 4 GPUs each
    }
    names = [b["metadata"]["name"] for b in bodies[1:]]
    assert names == ["train-master-0", "train-worker-0", "train-worker-1", "train-worker-2"]
    worker = bodies[2]
    assert worker["spec"]["schedulerName"] == "volcano"
    assert worker["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "train"
    assert worker["metadata"]["annotations"]["volcano.sh/task-index"] == "0"
    assert worker["metadata"]["labels"]["volcano.sh/task-index"] == "0"
    assert worker["metadata"]["labels"]["volcano.sh/job-namespace"] == "ml"
    assert notes == ["batch.volcano.sh/v1alpha1 Job ml/train: ignored maxRetry"]


def test_volcano_job_defaults_and_the_uid_in_the_group_name() -> None:
    job = volcano_job()
    job["metadata"]["uid"] = "1234"
    (group, *_), _ = expand_workloads(raw(job))
    assert group.body["metadata"]["name"] == "train-1234"
    # unset minAvailable: the tasks' minAvailable summed (master 1 + worker 2), Volcano's
    # webhook patchDefaultMinAvailable
    assert group.body["spec"]["minMember"] == 3
    assert group.body["spec"]["queue"] == "research"


def _cluster_with(job: dict[str, Any]) -> Any:
    nodes = [node("n0").gpu(8).obj(), node("n1").gpu(4).obj()]
    objects, _ = expand_workloads(raw(*nodes, queue("research"), job))
    return build_model(objects)


def test_a_volcano_job_is_placed_as_one_gang() -> None:
    decision = schedule(_cluster_with(volcano_job(minAvailable=4)), engine="greedy")
    outcome = decision.podgroups["ml/train"]
    assert outcome.enqueued and not outcome.placed  # 16 GPUs asked, 12 there
    decision = schedule(_cluster_with(volcano_job(minAvailable=3)), engine="greedy")
    assert decision.podgroups["ml/train"].placed
    assert len(decision.placed) == 3  # minMember 3 of 4: the fourth does not fit


def test_indexed_job_pods_carry_their_index_and_join_the_template_gang() -> None:
    job = batch_job(completionMode="Indexed", completions=4, parallelism=3)
    objects, _ = expand_workloads(raw(job))
    assert [o.body["metadata"]["name"] for o in objects] == ["sweep-0", "sweep-1", "sweep-2"]
    labels = objects[2].body["metadata"]["labels"]
    assert labels["batch.kubernetes.io/job-completion-index"] == "2"
    assert labels["batch.kubernetes.io/job-name"] == labels["job-name"] == "sweep"
    assert (
        objects[2].body["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
        == "2"
    )
    cluster = build_model(objects + raw(node("n0").cpu(8).obj()))
    assert cluster.gangs["ml/sweep"].min_member == 3  # PodGroup missing: all its pods


def test_a_non_indexed_job_runs_parallelism_pods_capped_by_completions() -> None:
    objects, _ = expand_workloads(raw(batch_job(parallelism=5, completions=2)))
    assert len(objects) == 2
    assert "batch.kubernetes.io/job-completion-index" not in objects[0].body["metadata"]["labels"]


def test_a_workload_whose_pods_are_in_the_dump_is_not_expanded() -> None:
    running = pod("sweep-abcde", "ml").label("batch.kubernetes.io/job-name", "sweep").on("n0").obj()
    objects, notes = expand_workloads(raw(batch_job(parallelism=2), running))
    assert [o.body["metadata"]["name"] for o in objects] == ["sweep-abcde"]
    assert notes == ["Job ml/sweep: its pods are in the input, not expanded"]


@pytest.mark.parametrize(
    ("job", "field"),
    [
        (batch_job(parallelism="two"), "spec.parallelism"),
        (batch_job(parallelism=10**9), "spec.parallelism"),
        (batch_job(completionMode="Sometimes"), "spec.completionMode"),
        (volcano_job(tasks="all"), "spec.tasks"),
        (
            volcano_job(tasks=[{"name": "w", "replicas": 1, "template": "x"}]),
            "spec.tasks[0].template",
        ),
    ],
)
def test_bad_workloads_name_the_field(job: dict[str, Any], field: str) -> None:
    with pytest.raises(ManifestError) as err:
        expand_workloads(raw(job))
    assert err.value.field == field


def test_expand_prints_the_pods_and_the_gang(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(volcano_job()))
    result = CliRunner().invoke(app, ["expand", "-f", str(path)])
    assert result.exit_code == 0, result.output
    listed = yaml.safe_load(result.stdout)  # a v1 List, as `kubectl get -o yaml` prints
    assert (listed["apiVersion"], listed["kind"]) == ("v1", "List")
    docs = listed["items"]
    assert [d["kind"] for d in docs] == ["PodGroup", "Pod", "Pod", "Pod", "Pod"]
    model = load_manifests(str(path))
    assert model.gangs["ml/train"].members == tuple(f"ml/{d['metadata']['name']}" for d in docs[1:])


def apps(kind: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": "web", "namespace": "prod"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
            },
            **spec,
        },
    }


def test_stateful_set_pods_are_numbered_from_the_ordinal_start() -> None:
    objects, _ = expand_workloads(raw(apps("StatefulSet", replicas=3, ordinals={"start": 5})))
    assert [o.body["metadata"]["name"] for o in objects] == ["web-5", "web-6", "web-7"]
    labels = objects[1].body["metadata"]["labels"]
    assert labels == {
        "app": "web",
        "statefulset.kubernetes.io/pod-name": "web-6",
        "apps.kubernetes.io/pod-index": "6",
    }


def test_a_deployment_whose_selected_pods_are_in_the_dump_is_not_expanded() -> None:
    objects, _ = expand_workloads(raw(apps("Deployment", replicas=2)))
    assert len(objects) == 2
    running = pod("web-7f9c-abcde", "prod").label("app", "web").on("n0").obj()
    objects, notes = expand_workloads(raw(apps("Deployment", replicas=2), running))
    assert [o.body["metadata"]["name"] for o in objects] == ["web-7f9c-abcde"]
    assert notes == ["Deployment prod/web: its pods are in the input, not expanded"]


def pytorch_job(scheduler: str | None, **run_policy: Any) -> dict[str, Any]:
    template: dict[str, Any] = {
        "spec": {
            "containers": [{"name": "pytorch", "resources": {"requests": {"nvidia.com/gpu": "8"}}}]
        }
    }
    if scheduler:
        template["spec"]["schedulerName"] = scheduler
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "llm", "namespace": "ml"},
        "spec": {
            "runPolicy": run_policy,
            "pytorchReplicaSpecs": {
                "Worker": {"replicas": 3, "template": template},
                "Master": {"replicas": 1, "template": template},
            },
        },
    }


def test_pytorch_job_with_volcano_is_one_volcano_gang() -> None:
    job = pytorch_job("volcano", schedulingPolicy={"queue": "research", "minAvailable": 4})
    objects, notes = expand_workloads(raw(job))
    pods = [o.body for o in objects if o.body["kind"] == "Pod"]
    assert [p["metadata"]["name"] for p in pods] == [
        "llm-master-0",
        "llm-worker-0",
        "llm-worker-1",
        "llm-worker-2",
    ]
    master = pods[0]["metadata"]
    assert master["labels"]["training.kubeflow.org/job-role"] == "master"
    assert master["labels"]["training.kubeflow.org/replica-type"] == "master"
    assert master["annotations"] == {
        "scheduling.k8s.io/group-name": "llm",
        "volcano.sh/task-spec": "master",
    }
    (group,) = [o.body for o in objects if o.body["kind"] == "PodGroup"]
    assert group["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert group["spec"] == {"minMember": 4, "queue": "research"}
    assert notes == []


def test_pytorch_job_with_scheduler_plugins_and_without_a_gang_scheduler() -> None:
    objects, _ = expand_workloads(raw(pytorch_job("scheduler-plugins-scheduler")))
    (group,) = [o.body for o in objects if o.body["kind"] == "PodGroup"]
    assert group["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert group["spec"] == {"minMember": 4}
    pods = [o.body for o in objects if o.body["kind"] == "Pod"]
    assert all(p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "llm" for p in pods)
    cluster = build_model(objects)
    assert cluster.gangs["ml/llm"].min_member == 4
    objects, notes = expand_workloads(raw(pytorch_job(None)))
    assert all(o.body["kind"] == "Pod" for o in objects)
    assert "no gang scheduler named" in notes[0]


def test_mpi_job_launcher_and_workers() -> None:
    template = {"spec": {"schedulerName": "volcano", "containers": [{"name": "c"}]}}
    job = {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": "hpc", "namespace": "sim"},
        "spec": {
            "slotsPerWorker": 1,
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "template": template},
                "Worker": {"replicas": 2, "template": template},
            },
        },
    }
    objects, _ = expand_workloads(raw(job))
    names = [o.body["metadata"]["name"] for o in objects]
    assert names == ["hpc", "hpc-launcher", "hpc-worker-0", "hpc-worker-1"]
    assert objects[0].body["spec"]["minMember"] == 3  # the launcher counts with the workers
    launcher = objects[1].body["metadata"]["labels"]
    assert launcher["training.kubeflow.org/job-role"] == "master"
    assert "training.kubeflow.org/replica-index" not in launcher


def test_pytorch_worker_0_is_the_master_of_a_job_without_one() -> None:
    job = pytorch_job(None)
    del job["spec"]["pytorchReplicaSpecs"]["Master"]
    objects, _ = expand_workloads(raw(job))
    roles = [o.body["metadata"]["labels"].get("training.kubeflow.org/job-role") for o in objects]
    assert roles == ["master", None, None]


@pytest.mark.parametrize(
    ("mode", "tier", "placed"),
    [("hard", 1, True), ("soft", 0, True), (None, 1, True), ("hard", 0, False), (None, 0, False)],
)
def test_volcano_network_topology_is_copied_and_enforced(
    mode: str | None, tier: int, placed: bool
) -> None:
    """Without HyperNodes the virtual root (tier 1) holds every node: a hard limit of 1
    places the job, 0 keeps it pending; soft never blocks (volcano.md §4)."""
    topology: dict[str, Any] = {"highestTierAllowed": tier}
    if mode:
        topology["mode"] = mode
    job = volcano_job(networkTopology=topology)
    objects, notes = expand_workloads(raw(job))
    # job_controller_actions.go createOrUpdatePodGroup copies mode and the tier limit
    assert objects[0].body["spec"]["networkTopology"] == {"mode": mode or "hard", **topology}
    assert notes == []
    cluster = _cluster_with(job)
    decision = schedule(cluster, engine="greedy")
    assert bool(decision.placed) == placed
    if not placed:
        assert "no HyperNode of tier <= 0" in decision.podgroups["ml/train"].reason
