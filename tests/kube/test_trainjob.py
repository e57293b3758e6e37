"""Kubeflow Trainer v2 TrainJob with its runtime given: the JobSet, pods and PodGroup the
controller makes (kubeflow/trainer at 8c0f5059; each case cites the plugin it follows)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from solver import load_manifests, schedule
from solver.errors import ManifestError
from solver.kube import load_objects
from solver.kube.workloads._trainer import merge
from tests.builders import node, raw

EXAMPLE = Path(__file__).parents[2] / "examples" / "workloads" / "trainjob.yaml"
DOCS = [d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d]
RUNTIME = next(d for d in DOCS if d["kind"] == "ClusterTrainingRuntime")
JOB = next(d for d in DOCS if d["kind"] == "TrainJob")
GPU_NODES = [node(f"n{i}").cpu("96").memory("768Gi").gpu(8).obj() for i in range(4)]


def _pods(model: Any) -> dict[str, Any]:
    return {p.name: p for p in model.pods}


def test_the_example_waits_whole_when_only_three_nodes_have_room() -> None:
    """Four 8-GPU pods in one gang; node-3 has 4 free: nothing is placed (coscheduling)."""
    model = load_manifests(str(EXAMPLE))
    gang = model.gangs["default/llm-pretrain"]
    assert gang.min_member == 4
    pods = _pods(model)
    assert sorted(pods) == ["inference"] + [f"llm-pretrain-node-0-{i}" for i in range(4)]
    assert all(pods[f"llm-pretrain-node-0-{i}"].gang == gang.id for i in range(4))
    assert pods["llm-pretrain-node-0-0"].requests["nvidia.com/gpu"] == 8
    for engine in ("greedy", "cpsat"):
        d = schedule(model, engine=engine, workers=1)
        assert not d.placed, engine


def test_num_nodes_comes_from_the_trainjob_else_the_runtime() -> None:
    """`torch.EnforceMLPolicy`: trainJob.spec.trainer.numNodes overrides mlPolicy.numNodes;
    the trainer's Job runs that many pods (`SyncParallelCount`)."""
    job = copy.deepcopy(JOB)
    del job["spec"]["trainer"]["numNodes"]
    model = load_objects(raw(RUNTIME, job, *GPU_NODES))
    assert model.gangs["default/llm-pretrain"].min_member == 1
    assert len([p for p in model.pods if p.name.startswith("llm-pretrain-node")]) == 1


def test_a_runtime_patch_adds_a_node_selector_to_the_node_job() -> None:
    """docs/operator-guides/runtime-patches.md: a nodeSelector patched into the `node` job."""
    job = copy.deepcopy(JOB)
    patch = {"spec": {"template": {"spec": {"nodeSelector": {"accelerator": "h100"}}}}}
    job["spec"]["runtimePatches"] = [
        {
            "manager": "trainer.kubeflow.org/kubeflow-sdk",
            "trainingRuntimeSpec": {
                "template": {"spec": {"replicatedJobs": [{"name": "node", "template": patch}]}}
            },
        }
    ]
    model = load_objects(raw(RUNTIME, job, *GPU_NODES))
    pod = _pods(model)["llm-pretrain-node-0-0"]
    assert pod.node_selector == {"accelerator": "h100"}
    assert not schedule(model, engine="greedy").placed  # no node has the label


def test_merge_keys_named_lists_by_name() -> None:
    base = {"a": [{"name": "x", "v": 1}, {"name": "y"}], "b": [1, 2], "c": {"d": 1}}
    patch = {"a": [{"name": "x", "w": 2}, {"name": "z"}], "b": [3], "c": {"e": 2}}
    assert merge(base, patch) == {
        "a": [{"name": "x", "v": 1, "w": 2}, {"name": "y"}, {"name": "z"}],
        "b": [3],
        "c": {"d": 1, "e": 2},
    }


def test_volcano_pod_group_policy_makes_a_volcano_gang_with_its_queue_and_tiers() -> None:
    """`volcano.EnforcePodGroupPolicy`: queue from the TrainJob's annotation, priority class
    from the pod templates, networkTopology from the policy; pods join by annotation."""
    runtime = copy.deepcopy(RUNTIME)
    runtime["spec"]["podGroupPolicy"] = {
        "volcano": {"networkTopology": {"mode": "hard", "highestTierAllowed": 2}}
    }
    job = copy.deepcopy(JOB)
    job["metadata"]["annotations"] = {"scheduling.volcano.sh/queue-name": "research"}
    model = load_objects(raw(runtime, job, *GPU_NODES))
    gang = model.gangs["default/llm-pretrain"]
    assert (gang.dialect, gang.queue, gang.min_member) == ("scheduling.volcano.sh", "research", 4)
    assert gang.network_topology is not None and gang.network_topology.mode == "hard"
    pod = _pods(model)["llm-pretrain-node-0-0"]
    assert pod.annotations["scheduling.k8s.io/group-name"] == "llm-pretrain"


def test_initializers_run_first_and_the_trainer_waits_for_them() -> None:
    """The torchtune runtimes (manifests/base/runtimes/torchtune): dataset and model
    initializers (1 replica each), the trainer `dependsOn` both Complete: only the
    initializers' pods are made now."""
    runtime = copy.deepcopy(RUNTIME)
    rjobs = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    for step in ("dataset-initializer", "model-initializer"):
        rjobs.insert(
            0,
            {
                "name": step,
                "template": {
                    "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": step}},
                    "spec": {"template": {"spec": {"containers": [{"name": step}]}}},
                },
            },
        )
    rjobs[-1]["dependsOn"] = [
        {"name": "dataset-initializer", "status": "Complete"},
        {"name": "model-initializer", "status": "Complete"},
    ]
    model = load_objects(raw(runtime, JOB, *GPU_NODES))
    names = sorted(p.name for p in model.pods)
    assert names == ["llm-pretrain-dataset-initializer-0-0", "llm-pretrain-model-initializer-0-0"]
    assert any("replicated job node depends on" in n for n in model.notes)


def test_a_training_runtime_is_looked_up_in_the_trainjobs_namespace() -> None:
    runtime = copy.deepcopy(RUNTIME)
    runtime["kind"] = "TrainingRuntime"
    runtime["metadata"]["namespace"] = "ml"
    job = copy.deepcopy(JOB)
    job["spec"]["runtimeRef"]["kind"] = "TrainingRuntime"
    model = load_objects(raw(runtime, job, *GPU_NODES))  # job in `default`: not found
    assert not model.pods and any("is not in the input" in n for n in model.notes)
    job["metadata"]["namespace"] = "ml"
    assert len(load_objects(raw(runtime, job, *GPU_NODES)).pods) == 4


def test_a_missing_runtime_places_nothing_with_a_note() -> None:
    model = load_objects(raw(JOB, *GPU_NODES))
    assert not model.pods
    assert any(
        "ClusterTrainingRuntime 'torch-distributed' is not in the input" in n for n in model.notes
    )


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"runtimeRef": None}, "spec.runtimeRef"),
        ({"runtimeRef": {"name": "x", "kind": "Runtime"}}, "spec.runtimeRef.kind"),
        ({"trainer": {"numNodes": -1}}, "spec.trainer.numNodes"),
        ({"runtimePatches": "x"}, "spec.runtimePatches"),
    ],
)
def test_bad_trainjobs_name_the_field(change: dict[str, Any], field: str) -> None:
    job = copy.deepcopy(JOB)
    for key, value in change.items():
        if value is None:
            del job["spec"][key]
        else:
            job["spec"][key] = value
    with pytest.raises(ManifestError) as err:
        load_objects(raw(RUNTIME, job, *GPU_NODES))
    assert field in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (("template",), "x", "spec.template.spec.replicatedJobs[0].template"),
        (("template", "metadata", "labels"), "x", "replicatedJobs[0].template.metadata.labels"),
        (("template", "spec", "template"), 3, "replicatedJobs[0].template.spec.template"),
        (("template", "spec", "parallelism"), "2", "replicatedJobs[0].template.spec.parallelism"),
    ],
)
def test_a_bad_runtime_names_its_field(path: tuple[str, ...], value: Any, field: str) -> None:
    runtime = copy.deepcopy(RUNTIME)
    runtime["spec"]["podGroupPolicy"] = {"coscheduling": {}}
    node_job: Any = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]
    for key in path[:-1]:
        node_job = node_job[key]
    node_job[path[-1]] = value
    with pytest.raises(ManifestError) as err:
        load_objects(raw(runtime, JOB, *GPU_NODES))
    assert field in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(("as_node", "pods"), [(True, 2), (False, 3)])
def test_an_mpi_runtime_sizes_its_node_job_beside_the_launcher(as_node: bool, pods: int) -> None:
    """`mpi.EnforceMLPolicy` (the mlx and deepspeed runtimes): the Job named `node` runs
    numNodes pods, one fewer when the launcher runs as a node; the launcher waits for the
    nodes (`dependsOn` Ready), so it is not placed now."""
    step = {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
    container = {"spec": {"template": {"spec": {"containers": [{"name": "node"}]}}}}
    runtime = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "mpi"},
        "spec": {
            "mlPolicy": {"numNodes": 1, "mpi": {"runLauncherAsNode": as_node}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {"name": "node", "template": copy.deepcopy(container)},
                        {
                            "name": "launcher",
                            "dependsOn": [{"name": "node", "status": "Ready"}],
                            "template": {"metadata": {"labels": step}, **container},
                        },
                    ]
                }
            },
        },
    }
    job = copy.deepcopy(JOB)
    job["spec"]["runtimeRef"]["name"] = "mpi"
    job["spec"]["trainer"]["numNodes"] = 3
    model = load_objects(raw(runtime, job, *GPU_NODES))
    assert sorted(p.name for p in model.pods) == [f"llm-pretrain-node-0-{i}" for i in range(pods)]
