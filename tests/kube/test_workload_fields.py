"""Workload fields gangplan does not act on are named in a note with their path, and the
ones it does act on hold: LeaderWorkerSet exclusive topology (one group per domain)."""

from __future__ import annotations

import tempfile
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from clients.cli import app
from solver import SchedulerConf, schedule
from solver.kube import load_objects
from solver.kube.workloads import expand_workloads
from tests.builders import node, raw

HOST = "kubernetes.io/hostname"
CONTAINER = {"name": "c", "resources": {"requests": {"cpu": "1"}}}


def lws(replicas: int, size: int, annotations: dict[str, str]) -> dict[str, Any]:
    """LeaderWorkerSet's exclusive-placement sample (kubernetes-sigs/lws
    docs/examples/sample/lws-exclusive-placement.yaml), on hostnames here."""
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "lws", "annotations": annotations},
        "spec": {
            "replicas": replicas,
            "leaderWorkerTemplate": {
                "size": size,
                "workerTemplate": {"spec": {"containers": [CONTAINER]}},
            },
        },
    }


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_lws_exclusive_topology_puts_one_group_per_domain(engine: str) -> None:
    """3 groups of 4 one-cpu pods, 3 nodes of 16 cpu: all 12 fit on one node, but each group
    gets a node of its own. They were put on one node, the annotation ignored."""
    nodes = [node(f"n{i}").cpu("16").label(HOST, f"n{i}").obj() for i in range(3)]
    exclusive = {"leaderworkerset.sigs.k8s.io/exclusive-topology": HOST}
    cluster = load_objects(raw(*nodes, lws(3, 4, exclusive)))
    d = schedule(cluster, SchedulerConf.default(), engine=engine, workers=1, time_limit=10)
    by_group: dict[str, set[str | None]] = {}
    for key, p in d.placements.items():
        group = key.removeprefix("default/lws-").split("-")[0]
        by_group.setdefault(group, set()).add(p.node)
    assert all(len(nodes) == 1 and None not in nodes for nodes in by_group.values()), by_group
    assert len({n for nodes in by_group.values() for n in nodes}) == 3


def test_lws_subgroup_exclusive_is_noted() -> None:
    annotated = {"leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology": HOST}
    _, notes = expand_workloads(raw(lws(1, 2, annotated)))
    assert any("subgroup-exclusive-topology" in n and "not enforced" in n for n in notes)


def test_volcano_task_fields_not_acted_on_are_noted_with_their_path() -> None:
    """volcano-sh/volcano example/job-dependency (dependsOn) and the partition samples
    (partitionPolicy, now acted on: `tests/kube/test_volcano_partition.py`): 11 pods were
    placed at once with no word."""
    template = {"spec": {"containers": [CONTAINER]}}
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "dep"},
        "spec": {
            "tasks": [
                {"name": "master", "replicas": 1, "template": template},
                {
                    "name": "worker",
                    "replicas": 10,
                    "template": template,
                    "dependsOn": {"name": ["master"]},
                    "partitionPolicy": {"totalPartitions": 2, "partitionSize": 5},
                },
            ]
        },
    }
    objects, notes = expand_workloads(raw(job))
    assert not any("ignored partitionPolicy" in n for n in notes), notes
    assert not any("spec.tasks[0]" in n for n in notes)
    # dependsOn acts: the workers' pods come once the master runs (Volcano's job controller)
    assert [o.body["metadata"]["name"] for o in objects if o.kind == "Pod"] == ["dep-master-0"]
    (group,) = [o.body for o in objects if o.kind == "PodGroup"]
    assert group["spec"]["minMember"] == 1
    assert any("worker on master" in n and "not placed now" in n for n in notes)


def test_jobset_replicated_job_waits_for_what_it_depends_on() -> None:
    job_template = {"spec": {"template": {"spec": {"containers": [CONTAINER]}}}}
    js = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js"},
        "spec": {
            "replicatedJobs": [
                {"name": "init", "template": job_template},
                {
                    "name": "main",
                    "template": job_template,
                    "dependsOn": [{"name": "init", "status": "Complete"}],
                },
            ]
        },
    }
    objects, notes = expand_workloads(raw(js))
    pods = [o.body["metadata"]["name"] for o in objects if o.kind == "Pod"]
    assert pods == ["js-init-0-0"], pods
    assert any("replicated job main depends on init Complete" in n for n in notes), notes


def test_dra_claims_keep_a_pod_pending_with_a_note() -> None:
    """Volcano's, Kueue's, KAI's and JobSet's DRA samples (spec.resourceClaims): the pods
    were placed as if they claimed nothing."""
    claimer = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {
            "containers": [CONTAINER],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "single-gpu"}],
        },
    }
    cluster = load_objects(raw(node("n").cpu("4").obj(), claimer))
    d = schedule(cluster, SchedulerConf.default(), engine="auto", workers=1)
    assert d.placements["default/p"].node is None
    assert "resource.k8s.io/claims" in d.placements["default/p"].reason
    assert any("DRA" in n for n in cluster.notes)


def test_kueue_multi_layer_slices_are_noted_once_as_an_alpha_gate() -> None:
    """Multi-layer slices are acted on (tests/features/topology/kueue/test_multi_layer.py),
    as Kueue does with its alpha gate on; the note says so once, with the pod count."""
    multi = {
        "kueue.x-k8s.io/podset-required-topology": "rack",
        "kueue.x-k8s.io/podset-slice-required-topology-constraints": '[{"topology": "rack", "size": 1}]',
    }
    pods = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"p{i}", "annotations": multi},
            "spec": {"containers": [CONTAINER]},
        }
        for i in range(3)
    ]
    cluster = load_objects(raw(*pods))
    (note,) = [n for n in cluster.notes if "slice-required-topology-constraints" in n]
    assert "3 pending pod(s)" in note and "TASMultiLayerTopology" in note


@pytest.mark.parametrize(
    ("kind", "spec", "pods"),
    [
        ("apps/v1 ReplicaSet", {"replicas": 2, "template": {"spec": {"containers": [CONTAINER]}}}, 2),
        (
            "kubeflow.org/v1 JAXJob",
            {"jaxReplicaSpecs": {"Worker": {"replicas": 3, "template": {"spec": {"containers": [CONTAINER]}}}}},
            3,
        ),
    ],
)  # fmt: skip
def test_replica_sets_and_jax_jobs_are_expanded(kind: str, spec: dict[str, Any], pods: int) -> None:
    api_version, k = kind.split(" ")
    objects, _ = expand_workloads(
        raw({"apiVersion": api_version, "kind": k, "metadata": {"name": "w"}, "spec": spec})
    )
    assert sum(1 for o in objects if o.kind == "Pod") == pods


def test_expand_notes_the_kinds_it_skips() -> None:
    """`expand` printed an empty List for a CronJob, with no word (schedule noted it)."""
    cron = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "cj"},
        "spec": {"schedule": "* * * * *", "jobTemplate": {}},
    }
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump_all([cron, node("n").obj()], f)
    result = CliRunner().invoke(app, ["expand", "-f", f.name])
    assert result.exit_code == 0
    assert "skipped batch/v1 CronJob" in result.stderr
    assert "Node" not in result.stderr
