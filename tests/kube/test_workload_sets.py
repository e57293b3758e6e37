"""JobSet and LeaderWorkerSet expanded into the pods and gangs their controllers make, and
placed. Every expected name, label and count below was worked out by hand from the
controller code cited in `_jobset.py` and `_lws.py`:

            rack-a                          rack-b
    a1 [8 GPU]  a2 [8 GPU]           b1 [8 GPU]  b2 [8 GPU]
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from solver import schedule, verify
from solver.config import SchedulerConf
from solver.errors import ManifestError
from solver.kube import build_model
from solver.kube.workloads import expand_workloads
from tests.builders import node, raw

RACK = "topology.kubernetes.io/rack"
JS = "jobset.sigs.k8s.io/"
LWS = "leaderworkerset.sigs.k8s.io/"


def racks() -> list[dict[str, Any]]:
    return [
        node(n).cpu(32).gpu(8).label(RACK, rack).obj()
        for n, rack in (("a1", "rack-a"), ("a2", "rack-a"), ("b1", "rack-b"), ("b2", "rack-b"))
    ]


def template(gpu: int, **spec: Any) -> dict[str, Any]:
    return {
        "spec": {
            "containers": [
                {"name": "c", "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": str(gpu)}}}
            ],
            **spec,
        }
    }


def jobset(scheduling: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "llm", "namespace": "ml"},
        "spec": {
            "replicatedJobs": [
                {"name": "driver", "template": {"spec": {"template": template(0)}}},
                {
                    "name": "workers",
                    "replicas": 2,
                    "groupName": "train",
                    "template": {
                        "spec": {"parallelism": 4, "completions": 4, "template": template(4)}
                    },
                },
            ],
            **spec,
        },
    }
    if scheduling is not None:
        body["spec"]["scheduling"] = scheduling
    return body


def by_kind(objects: list[Any], kind: str) -> list[dict[str, Any]]:
    return [o.body for o in objects if o.body["kind"] == kind]


def place(*objects: dict[str, Any], engine: str = "greedy") -> Any:
    expanded, _ = expand_workloads(raw(*racks(), *objects))
    cluster = build_model(expanded)
    decision = schedule(cluster, engine=engine, workers=1, seed=0)
    assert verify(cluster, SchedulerConf.default(), decision) == []
    return decision


# ----------------------------------------------------------------------------- JobSet


def test_jobset_pods_carry_the_controllers_names_labels_and_indexes() -> None:
    objects, notes = expand_workloads(raw(jobset()))
    pods = by_kind(objects, "Pod")
    assert [p["metadata"]["name"] for p in pods] == [
        "llm-driver-0-0",
        *(f"llm-workers-{j}-{i}" for j in range(2) for i in range(4)),
    ]
    worker = next(p for p in pods if p["metadata"]["name"] == "llm-workers-1-2")
    labels = worker["metadata"]["labels"]
    assert labels[f"{JS}jobset-name"] == "llm"
    assert labels[f"{JS}replicatedjob-name"] == "workers"
    assert labels[f"{JS}replicatedjob-replicas"] == "2"
    assert labels[f"{JS}global-replicas"] == "3"  # 1 driver job + 2 worker jobs
    assert labels[f"{JS}job-index"] == "1"
    assert labels[f"{JS}job-global-index"] == "2"  # after the driver's one job
    assert labels[f"{JS}group-name"] == "train"
    assert labels[f"{JS}group-replicas"] == "2"
    assert labels[f"{JS}job-group-index"] == "1"
    assert labels[f"{JS}job-key"] == hashlib.sha1(b"ml/llm-workers-1").hexdigest()
    assert labels["batch.kubernetes.io/job-name"] == "llm-workers-1"
    # the webhook defaults completionMode to Indexed
    assert labels["batch.kubernetes.io/job-completion-index"] == "2"
    assert worker["metadata"]["annotations"][f"{JS}job-index"] == "1"
    assert "schedulingGroup" not in worker["spec"]
    assert notes == [
        "JobSet ml/llm: no spec.scheduling: no gang is made, its pods are placed one by one "
        "unless their templates name one"
    ]


def test_jobset_top_level_gang_is_one_podgroup_of_every_pod() -> None:
    objects, _ = expand_workloads(raw(jobset({"schedulingPolicy": {"gang": {}}})))
    (workload,) = by_kind(objects, "Workload")
    (group,) = by_kind(objects, "PodGroup")
    assert group["metadata"]["name"] == workload["metadata"]["name"]
    assert group["metadata"]["name"].startswith("llm-") and len(group["metadata"]["name"]) == 14
    assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 9}}  # 1 + 2 x 4
    assert {p["spec"]["schedulingGroup"]["podGroupName"] for p in by_kind(objects, "Pod")} == {
        group["metadata"]["name"]
    }


def test_jobset_sequenced_startup_makes_one_gang_per_replicated_job() -> None:
    js = jobset({"schedulingPolicy": {"gang": {}}}, startupPolicy={"startupPolicyOrder": "InOrder"})
    groups = by_kind(expand_workloads(raw(js))[0], "PodGroup")
    assert [g["spec"]["schedulingPolicy"] for g in groups] == [
        {"gang": {"minCount": 1}},
        {"gang": {"minCount": 8}},
    ]
    assert [g["metadata"]["name"].rsplit("-", 1)[0] for g in groups] == [
        "llm-driver",
        "llm-workers",
    ]


def test_jobset_one_gang_per_worker_job_in_one_rack() -> None:
    scheduling = {
        "replicatedJobs": [
            {"targetReplicatedJobs": ["driver"], "schedulingPolicy": {"basic": {}}},
            {
                "targetReplicatedJobs": ["workers"],
                "job": {
                    "schedulingConstraints": {"topology": [{"key": RACK}]},
                    "disruptionMode": {"all": {}},
                },
            },
        ]
    }
    objects, _ = expand_workloads(raw(jobset(scheduling)))
    groups = {g["spec"]["workloadRef"]["templateName"]: g for g in by_kind(objects, "PodGroup")}
    assert sorted(groups) == ["driver", "workers-0", "workers-1"]
    assert groups["driver"]["spec"]["schedulingPolicy"] == {"basic": {}}
    assert groups["workers-1"]["spec"]["schedulingPolicy"] == {"gang": {"minCount": 4}}
    assert groups["workers-1"]["spec"]["schedulingConstraints"] == {"topology": [{"key": RACK}]}
    # 2 jobs x 4 pods x 4 GPU: each job needs 16 GPUs, exactly one rack; they take one each
    d = place(jobset(scheduling))
    assert len(d.placed) == 9
    for j in range(2):
        nodes = {n for k, n in d.placed.items() if k.startswith(f"ml/llm-workers-{j}-")}
        assert len({n[0] for n in nodes}) == 1, nodes
    assert {d.placed[f"ml/llm-workers-{j}-0"][0] for j in range(2)} == {"a", "b"}


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_jobset_gang_that_no_rack_holds_stays_pending(engine: str) -> None:
    scheduling = {
        "schedulingPolicy": {"gang": {}},
        "schedulingConstraints": {"topology": [{"key": RACK}]},
    }
    d = place(jobset(scheduling), engine=engine)  # 32 GPUs wanted, a rack has 16
    assert d.placed == {}


def test_jobset_past_eight_podgroups_is_refused_as_its_webhook_does() -> None:
    js = jobset({"replicatedJobs": [
        {"targetReplicatedJobs": ["driver"]},
        {"targetReplicatedJobs": ["workers"], "job": {}},
    ]})  # fmt: skip
    js["spec"]["replicatedJobs"][1]["replicas"] = 8  # 1 + 8 PodGroups
    with pytest.raises(ManifestError, match=r"\): spec.scheduling: makes 9 PodGroups"):
        expand_workloads(raw(js))


def test_jobset_exclusive_placement_is_noted_not_guessed() -> None:
    js = jobset()
    js["metadata"]["annotations"] = {"alpha.jobset.sigs.k8s.io/exclusive-topology": RACK}
    _, notes = expand_workloads(raw(js))
    assert any("exclusive-topology" in n and "not enforced" in n for n in notes)


@pytest.mark.parametrize(
    ("scheduling", "field"),
    [
        (
            {
                "schedulingPolicy": {"gang": {}},
                "replicatedJobs": [{"targetReplicatedJobs": ["driver"]}],
            },
            "spec.scheduling.replicatedJobs",
        ),
        (
            {"replicatedJobs": [{"targetReplicatedJobs": ["driver"]}]},
            "spec.scheduling.replicatedJobs",
        ),
        (
            {"replicatedJobs": [{"targetReplicatedJobs": ["nope"]}]},
            "spec.scheduling.replicatedJobs[0].targetReplicatedJobs",
        ),
        (
            {"schedulingPolicy": {"gang": {"minCount": 10}}},
            "spec.scheduling.schedulingPolicy.gang.minCount",
        ),
        (
            {"schedulingPolicy": {"gang": {"minCount": "all"}}},
            "spec.scheduling.schedulingPolicy.gang.minCount",
        ),
        ({"replicatedJobs": "all"}, "spec.scheduling.replicatedJobs"),
    ],
)
def test_bad_jobset_scheduling_names_the_field(scheduling: dict[str, Any], field: str) -> None:
    with pytest.raises(ManifestError) as err:
        expand_workloads(raw(jobset(scheduling)))
    assert f"): {field}: " in str(err.value), err.value


# ----------------------------------------------------------------------------- LeaderWorkerSet


def lws(scheduler: str | None = "volcano", **spec: Any) -> dict[str, Any]:
    extra = {"schedulerName": scheduler} if scheduler else {}
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {
            "name": "vllm",
            "namespace": "serve",
            "annotations": {"scheduling.volcano.sh/queue-name": "inference"},
        },
        "spec": {
            "replicas": 2,
            "leaderWorkerTemplate": {
                "size": 3,
                "leaderTemplate": template(2, **extra),
                "workerTemplate": template(4, **extra),
            },
            **spec,
        },
    }


def test_lws_leaders_workers_and_one_volcano_gang_per_group() -> None:
    objects, notes = expand_workloads(raw(lws()))
    pods = by_kind(objects, "Pod")
    assert [p["metadata"]["name"] for p in pods] == [
        "vllm-0", "vllm-0-1", "vllm-0-2", "vllm-1", "vllm-1-1", "vllm-1-2",
    ]  # fmt: skip
    leader, worker = pods[3], pods[5]
    assert leader["metadata"]["labels"][f"{LWS}worker-index"] == "0"
    assert leader["metadata"]["labels"][f"{LWS}group-index"] == "1"
    assert leader["metadata"]["annotations"][f"{LWS}size"] == "3"
    assert leader["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] == "2"
    assert worker["metadata"]["labels"][f"{LWS}worker-index"] == "2"
    assert worker["metadata"]["annotations"][f"{LWS}leader-name"] == "vllm-1"
    key = hashlib.sha1(b"serve/vllm-1").hexdigest()
    assert (
        leader["metadata"]["labels"][f"{LWS}group-key"]
        == worker["metadata"]["labels"][f"{LWS}group-key"]
        == key
    )
    groups = by_kind(objects, "PodGroup")
    assert [g["spec"] for g in groups] == [{"minMember": 3, "queue": "inference"}] * 2
    assert (
        worker["metadata"]["annotations"]["scheduling.k8s.io/group-name"]
        == groups[1]["metadata"]["name"]
    )
    assert groups[1]["metadata"]["name"].startswith("vllm-1-")
    assert notes == []


def test_lws_podgroups_inherit_the_volcano_annotations() -> None:
    # volcano_provider.go inheritVolcanoAnnotations: the LWS's `volcano.sh/` annotations
    body = lws()
    body["metadata"]["annotations"]["volcano.sh/preemptable"] = "false"
    groups = by_kind(expand_workloads(raw(body))[0], "PodGroup")
    assert [g["metadata"]["annotations"] for g in groups] == [
        {"volcano.sh/preemptable": "false"}
    ] * 2


def test_lws_leader_ready_startup_needs_only_the_leader() -> None:
    objects, _ = expand_workloads(raw(lws(startupPolicy="LeaderReady")))
    assert {g["spec"]["minMember"] for g in by_kind(objects, "PodGroup")} == {1}


def test_lws_without_a_gang_scheduler_is_noted() -> None:
    objects, notes = expand_workloads(raw(lws(scheduler=None)))
    assert by_kind(objects, "PodGroup") == []
    assert notes == [
        "LeaderWorkerSet serve/vllm: no gang scheduler named in its templates' schedulerName: "
        "pods placed one by one"
    ]


def test_lws_groups_are_placed_whole() -> None:
    # each group: 2 + 4 + 4 = 10 GPUs; 32 GPUs hold three groups, so of 4 groups one waits whole
    d = place(lws(replicas=4))
    assert len(d.placed) == 9
    placed_groups = {k.split("-")[1] for k in d.placed}
    assert len(placed_groups) == 3
    assert sum(o.placed for o in d.podgroups.values()) == 3
