"""KAI's workload priority as its docs and pod-grouper give it (NVIDIA/KAI-Scheduler
`docs/priority/README.md`, `pkg/podgrouper/podgrouper/plugins/defaultgrouper/
default_grouper.go` `calcPodGroupPriorityClass`, `calcPodGroupPreemptibilityWithDefaults`):

* a KAI pod's label `priorityClassName` names its class (before `spec.priorityClassName`);
* KAI's install creates `train` (50), `build-preemptible` (75), `build` (100) and
  `inference` (125): a KAI object naming one the input lacks gets that value, with a note;
* a pod's label `kai.scheduler/preemptibility` sets its job's preemptibility.

The docs' example (`docs/priority/example/`: limited-queue.yaml, train-priority-pod.yaml,
build-priority-pod.yaml), in our own copy with the pods in the `test` queue the README
describes (the files name `default-queue`): a running train pod and a pending build pod
in a queue limited to 1 GPU; the build pod preempts the train pod.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from solver import SchedulerConf, schedule
from solver.errors import ManifestError
from solver.kube import load_objects
from solver.schedule import snapshot_of
from tests.builders import raw

ENGINES = ["greedy", "cpsat"]
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-node-0"},
        "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "nvidia.com/gpu": "1", "pods": "110"}}}  # fmt: skip
UNLIMITED = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
QUEUES = [
    {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": "default"},
     "spec": {"resources": {"cpu": UNLIMITED, "gpu": UNLIMITED, "memory": UNLIMITED}}},
    {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": "test"},
     "spec": {"parentQueue": "default", "resources": {
         "cpu": UNLIMITED, "gpu": {"quota": 1, "limit": 1, "overQuotaWeight": 1},
         "memory": UNLIMITED}}},
]  # fmt: skip


def pod(name: str, cls: str, running: bool = False, **labels: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"kai.scheduler/queue": "test", "priorityClassName": cls, **labels}},
        "spec": {"schedulerName": "kai-scheduler", "containers": [{"name": "main", "image": "ubuntu",
                 "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
    }  # fmt: skip
    if running:
        out["spec"]["nodeName"] = "gpu-node-0"
        out["status"] = {"phase": "Running"}
    return out


@pytest.mark.parametrize("engine", ENGINES)
def test_the_docs_example_a_build_pod_preempts_the_train_pod(engine: str) -> None:
    cluster = load_objects(raw(NODE, *QUEUES, pod("train-pod", "train", running=True),
                               pod("build-pod", "build")))  # fmt: skip
    build = next(p for p in cluster.pods if p.name == "build-pod")
    train = next(p for p in cluster.pods if p.name == "train-pod")
    assert (build.priority, train.priority) == (100, 50)
    assert sum("KAI's predefined one" in n for n in cluster.notes) == 2
    d = schedule(
        snapshot_of(cluster), SchedulerConf.default(), engine=engine, workers=1, preempt=True
    )
    assert [v.pod for v in d.victims] == ["default/train-pod"]
    assert d.placements["default/build-pod"].nominated == "gpu-node-0"


def test_the_label_names_the_class_before_the_spec_and_only_for_kai_pods() -> None:
    kai = pod("p", "inference")
    kai["spec"]["priorityClassName"] = "train"
    other = copy.deepcopy(kai)
    other["metadata"]["name"] = "q"
    other["spec"]["schedulerName"] = "default-scheduler"
    classes = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": "train"}, "value": 7}]  # fmt: skip
    cluster = load_objects(raw(NODE, *QUEUES, *classes, kai, other))
    by_name = {p.name: p.priority for p in cluster.pods}
    assert by_name == {"p": 125, "q": 7}  # the input's own `train` wins over KAI's


def test_a_class_the_input_lacks_is_refused_outside_kai() -> None:
    other = pod("q", "train")
    other["spec"]["schedulerName"] = "default-scheduler"
    other["spec"]["priorityClassName"] = "train"
    with pytest.raises(ManifestError, match="PriorityClass 'train' is not in the input"):
        load_objects(raw(NODE, other))


@pytest.mark.parametrize("engine", ENGINES)
def test_the_preemptibility_label_makes_a_build_pod_run_over_quota(engine: str) -> None:
    """`test`'s GPU quota is 1 and limit 1 → raised to 2 here; two build pods: the second
    is over quota, so it waits unless labelled preemptible."""
    queues = copy.deepcopy(QUEUES)
    queues[1]["spec"]["resources"]["gpu"]["limit"] = 2
    node = copy.deepcopy(NODE)
    node["status"]["allocatable"]["nvidia.com/gpu"] = "2"
    plain = load_objects(raw(node, *queues, pod("a", "build"), pod("b", "build")))
    d = schedule(snapshot_of(plain), SchedulerConf.default(), engine=engine, workers=1)
    assert sum(1 for p in d.placements.values() if p.node) == 1
    labelled = load_objects(raw(node, *queues, pod("a", "build"),
                                pod("b", "build", **{"kai.scheduler/preemptibility": "preemptible"})))  # fmt: skip
    d = schedule(snapshot_of(labelled), SchedulerConf.default(), engine=engine, workers=1)
    assert sum(1 for p in d.placements.values() if p.node) == 2


def deployment(**labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "serve", "namespace": "default", "labels": labels},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "serve"}}, "template": {
            "metadata": {"labels": {"app": "serve", "kai.scheduler/queue": "test"}},
            "spec": {"schedulerName": "kai-scheduler", "containers": [{"name": "main", "image": "x",
                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}},
    }  # fmt: skip


@pytest.mark.parametrize("engine", ENGINES)
def test_a_deployment_defaults_to_inference_and_stays_within_quota(engine: str) -> None:
    """KAI's default priority for a Deployment is `inference` (125, non-preemptible:
    docs/priority/README.md): two 1-GPU replicas in `test` (quota 1, limit 2 here) — one
    runs, the other is over quota. With the Deployment labelled `priorityClassName: train`
    (the owner's label comes first) both run."""
    queues = copy.deepcopy(QUEUES)
    queues[1]["spec"]["resources"]["gpu"]["limit"] = 2
    node = copy.deepcopy(NODE)
    node["status"]["allocatable"]["nvidia.com/gpu"] = "2"
    cluster = load_objects(raw(node, *queues, deployment()))
    assert {p.priority for p in cluster.pods} == {125}
    assert any("KAI's default for a Deployment is 'inference'" in n for n in cluster.notes)
    d = schedule(snapshot_of(cluster), SchedulerConf.default(), engine=engine, workers=1)
    assert sum(1 for p in d.placements.values() if p.node) == 1
    train = load_objects(raw(node, *queues, deployment(priorityClassName="train")))
    assert {p.priority for p in train.pods} == {50}
    d = schedule(snapshot_of(train), SchedulerConf.default(), engine=engine, workers=1)
    assert sum(1 for p in d.placements.values() if p.node) == 2


@pytest.mark.parametrize("engine", ENGINES)
def test_a_running_pods_preemptibility_label_counts_in_the_quota(engine: str) -> None:
    """A running train pod (50) labelled non-preemptible holds `test`'s whole quota of 1
    for non-preemptible jobs, so a pending build pod waits though the limit (raised to 2
    here) and the node have room; unlabelled, the build pod runs."""
    queues = copy.deepcopy(QUEUES)
    queues[1]["spec"]["resources"]["gpu"]["limit"] = 2
    node = copy.deepcopy(NODE)
    node["status"]["allocatable"]["nvidia.com/gpu"] = "2"
    held = pod("old", "train", running=True, **{"kai.scheduler/preemptibility": "non-preemptible"})
    for running, runs in ((held, False), (pod("old", "train", running=True), True)):
        cluster = load_objects(raw(node, *queues, running, pod("new", "build")))
        d = schedule(snapshot_of(cluster), SchedulerConf.default(), engine=engine, workers=1)
        assert bool(d.placements["default/new"].node) == runs
