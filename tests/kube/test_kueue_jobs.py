"""Jobs Kueue manages become Kueue's Workloads: one gang per Workload, pods labelled with
their pod set, so a pod set's topology request holds for the pod set (not pod by pod).

The shapes are Kueue's own samples and integration tests, cited per test. The cluster is
the racks below (cpu free = pod slots), in one TAS flavor:

    b1 ─┬─ r1: x1 (3)  x2 (3)          b2 ─┬─ r3: x5 (4)  x6 (4)
        └─ r2: x3 (2)  x4 (1)              └─ r4: x7 (1)  x8 (1)

No rack holds 10 pods (r3: 8); block b2 holds 10.
"""

from __future__ import annotations

from typing import Any

import pytest

from solver import SchedulerConf, schedule
from solver.decision import Decision
from solver.errors import ManifestError
from solver.kube import load_objects
from solver.kube.workloads import expand_workloads
from tests.builders import raw
from tests.features.topology.kueue.helpers import POOL, nodes_of, topology

BLOCK = "cloud.com/topology-block"
RACK = "cloud.com/topology-rack"
LEVELS = (BLOCK, RACK, "kubernetes.io/hostname")
RACKS = [
    "b1/r1/x1:3",
    "b1/r1/x2:3",
    "b1/r2/x3:2",
    "b1/r2/x4:1",
    "b2/r3/x5:4",
    "b2/r3/x6:4",
    "b2/r4/x7:1",
    "b2/r4/x8:1",
]
QUEUE = {"kueue.x-k8s.io/queue-name": "tas-user-queue"}
REQUIRED = "kueue.x-k8s.io/podset-required-topology"


def template(annotations: dict[str, str], cpu: str = "1") -> dict[str, Any]:
    return {
        "metadata": {"annotations": annotations},
        "spec": {
            "nodeSelector": dict(POOL),
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
            "restartPolicy": "Never",
        },
    }


def required_job(level: str, pods: int = 10, labels: dict[str, str] = QUEUE) -> dict[str, Any]:
    """kubernetes-sigs/kueue site/static/examples/tas/sample-job-required.yaml (generateName,
    an Indexed Job of 10 pods, each 1 cpu, required to share a rack)."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"generateName": "tas-sample-required", "labels": dict(labels)},
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "completionMode": "Indexed",
            "template": template({REQUIRED: level}),
        },
    }


def run(*objects: dict[str, Any], engine: str) -> Decision:
    cluster = load_objects(raw(*nodes_of(RACKS, LEVELS), *topology(LEVELS), *objects))
    conf = SchedulerConf.default()
    return schedule(cluster, conf, engine=engine, workers=1, seed=0, time_limit=10)


def rack_of(node: str) -> str:
    return node.split("-")[1]


ENGINES = ["greedy", "cpsat", "auto"]


@pytest.mark.parametrize("engine", ENGINES)
def test_required_rack_job_waits_whole_when_no_rack_holds_it(engine: str) -> None:
    """Kueue keeps the sample pending: no rack has 10 free. It was split over two racks,
    one pod set per pod, OPTIMAL with 10 assignments of count 1."""
    decision = run(required_job(RACK), engine=engine)
    assert not any(p.node for p in decision.placements.values())
    assert not decision.topology_assignments
    (reason,) = [g.reason for g in decision.podgroups.values() if g.reason]
    assert "allows to fit only 8 out of 10 pod(s)" in reason
    assert "fits on the cluster" not in reason


@pytest.mark.parametrize("engine", ENGINES)
def test_required_block_job_is_one_assignment_in_one_block(engine: str) -> None:
    decision = run(required_job(BLOCK), engine=engine)
    nodes = [p.node for p in decision.placements.values()]
    assert all(nodes) and {n.split("-")[0] for n in nodes if n} == {"b2"}
    (assignment,) = decision.topology_assignments
    assert assignment.pod_set == "main"
    assert sum(count for _, count in assignment.domains) == 10


def jobset(replicated: list[tuple[str, int, int, dict[str, str]]]) -> dict[str, Any]:
    """A JobSet of (name, replicas, parallelism, TAS annotations) replicated jobs, as Kueue's
    JobSet TAS docs write them (site/content/en/docs/tasks/run/jobsets.md)."""
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js", "labels": dict(QUEUE)},
        "spec": {
            "replicatedJobs": [
                {
                    "name": name,
                    "replicas": replicas,
                    "template": {
                        "spec": {
                            "parallelism": par,
                            "completions": par,
                            "template": template(annotations),
                        }
                    },
                }
                for name, replicas, par, annotations in replicated
            ]
        },
    }


@pytest.mark.parametrize("engine", ENGINES)
def test_jobset_pod_sets_are_its_replicated_jobs_with_slices(engine: str) -> None:
    """A pod set per replicated job (`jobset_controller.go` PodSets), count replicas x
    parallelism: 'workers' is 2 x 4 = 8 pods in slices of 4, each slice in one rack. It was
    refused: "slice size 4 is larger than the pod set's 1 pod(s)"."""
    sliced = {
        REQUIRED: BLOCK,
        "kueue.x-k8s.io/podset-slice-required-topology": RACK,
        "kueue.x-k8s.io/podset-slice-size": "4",
    }
    decision = run(
        jobset([("leader", 1, 1, {REQUIRED: BLOCK}), ("workers", 2, 4, sliced)]), engine=engine
    )
    assert all(p.node for p in decision.placements.values())
    by_set = {a.pod_set: a for a in decision.topology_assignments}
    assert set(by_set) == {"leader", "workers"}
    assert sum(c for _, c in by_set["workers"].domains) == 8
    workers = [p.node for k, p in decision.placements.items() if "workers" in k and p.node]
    per_rack: dict[str, int] = {}
    for n in workers:
        per_rack[rack_of(n)] = per_rack.get(rack_of(n), 0) + 1
    assert all(count % 4 == 0 for count in per_rack.values()), per_rack


def lws(replicas: int, size: int, annotations: dict[str, str]) -> dict[str, Any]:
    """Kueue's LeaderWorkerSet TAS task (site/content/en/docs/tasks/run/leaderworkerset.md):
    leader and worker templates in one pod-set group, required rack."""
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "infer", "labels": dict(QUEUE)},
        "spec": {
            "replicas": replicas,
            "leaderWorkerTemplate": {
                "size": size,
                "leaderTemplate": template(annotations),
                "workerTemplate": template(annotations),
            },
        },
    }


@pytest.mark.parametrize("engine", ENGINES)
def test_lws_group_is_one_workload_of_leader_and_worker_pod_sets(engine: str) -> None:
    """One Workload per group with pod sets `leader` (1) and `worker` (size-1)
    (`leaderworkerset_reconciler.go` podSets); the pod-set group puts a group in one rack.
    It was refused: "can only define groups of exactly 2 pod sets, got: 1"."""
    group = {REQUIRED: RACK, "kueue.x-k8s.io/podset-group-name": "g"}
    decision = run(lws(2, 4, group), engine=engine)
    placed = {k: p.node for k, p in decision.placements.items()}
    assert all(placed.values()), placed
    for i in range(2):
        racks = {
            rack_of(n) for pod, n in placed.items() if n and pod.startswith(f"default/infer-{i}")
        }
        assert len(racks) == 1, (i, placed)


def test_expansion_labels_pod_sets_and_makes_one_gang_per_workload() -> None:
    objects, _ = expand_workloads(raw(lws(2, 3, {REQUIRED: RACK})))
    groups = [o.body for o in objects if o.kind == "PodGroup"]
    assert [(g["metadata"]["name"], g["spec"]["minMember"]) for g in groups] == [
        ("leaderworkerset-infer-0", 3),
        ("leaderworkerset-infer-1", 3),
    ]
    pods = {
        o.body["metadata"]["name"]: o.body["metadata"]["labels"] for o in objects if o.kind == "Pod"
    }
    assert pods["infer-0"]["kueue.x-k8s.io/podset"] == "leader"
    assert pods["infer-0-1"]["kueue.x-k8s.io/podset"] == "worker"
    assert pods["infer-1-2"]["scheduling.x-k8s.io/pod-group"] == "leaderworkerset-infer-1"


def test_a_job_kueue_does_not_manage_is_unchanged() -> None:
    job = required_job(RACK, labels={})
    job["spec"]["template"]["metadata"]["annotations"] = {}
    objects, _ = expand_workloads(raw(job))
    assert not [o for o in objects if o.kind == "PodGroup"]
    assert all("kueue.x-k8s.io/podset" not in o.body["metadata"]["labels"] for o in objects)


def test_tas_annotations_without_a_queue_name_are_read_as_managed_with_a_note() -> None:
    objects, notes = expand_workloads(raw(required_job(RACK, labels={})))
    assert [o.body["spec"]["minMember"] for o in objects if o.kind == "PodGroup"] == [10]
    assert any("manageJobsWithoutQueueName" in n for n in notes)


def test_a_controller_gang_stands_with_a_note_where_it_differs() -> None:
    """A JobSet with `spec.scheduling` per child Job makes Workload API gangs finer than
    Kueue's Workload: they stand, and the note says so."""
    js = jobset([("workers", 2, 2, {REQUIRED: BLOCK})])
    js["spec"]["scheduling"] = {
        "replicatedJobs": [{"targetReplicatedJobs": ["workers"], "job": {}}]
    }
    objects, notes = expand_workloads(raw(js))
    labels = [o.body["metadata"]["labels"] for o in objects if o.kind == "Pod"]
    assert all(lb["kueue.x-k8s.io/podset"] == "workers" for lb in labels)
    assert all("scheduling.x-k8s.io/pod-group" not in lb for lb in labels)
    assert any("placed gang by gang" in n for n in notes)


def test_generate_name_is_stable_and_noted() -> None:
    """`kubectl create -f` accepts generateName (15 of Kueue's samples use it)."""
    first, notes = expand_workloads(raw(required_job(RACK)))
    again, _ = expand_workloads(raw(required_job(RACK)))
    names = [o.body["metadata"]["name"] for o in first]
    assert names == [o.body["metadata"]["name"] for o in again]
    assert names[1].startswith("tas-sample-required") and len(names[1]) > len("tas-sample-required")
    assert any("metadata.generateName 'tas-sample-required'" in n for n in notes)


def test_neither_name_nor_generate_name_is_still_an_error() -> None:
    job = required_job(RACK)
    del job["metadata"]["generateName"]
    with pytest.raises(ManifestError, match=r"metadata\.name"):
        load_objects(raw(job))
