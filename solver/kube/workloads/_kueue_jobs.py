"""Jobs Kueue manages -> the Workloads Kueue's integrations make of them: one gang per
Workload (Kueue admits a Workload whole) whose pods carry the `kueue.x-k8s.io/podset` label
of their pod set, so a pod set's topology request (the template's TAS annotations) applies
to the pod set, not to each pod.

Kueue manages a job that carries the label `kueue.x-k8s.io/queue-name`
(`jobframework.WorkloadShouldBeSuspended`). A job without it whose templates carry Kueue's
TAS annotations is read as managed too, with a note: Kueue's `manageJobsWithoutQueueName`
is the controller's configuration, which no manifest carries, and without Kueue the
annotations mean nothing.

Workloads and pod sets, per integration (kubernetes-sigs/kueue `pkg/controller/jobs/...`):

| kind | Workloads | pod sets (name: count) |
| --- | --- | --- |
| batch Job (`job/job_controller.go` PodSets) | one | `main`: the pods running at once |
| JobSet (`jobset/jobset_controller.go` PodSets) | one | one per replicated job, its name |
| LeaderWorkerSet (`leaderworkerset/leaderworkerset_reconciler.go` podSets) | one per group | `leader`: 1 and `worker`: size-1; without a leader template `main`: size |
| Kubeflow jobs (`kubeflow/jobs/*` PodSets) | one | one per replica type, lowercased |
| StatefulSet (`statefulset/`, a pod group) | one | `main` |
| Deployment (`pod/`, every pod its own Workload) | one per pod | `main` |

The Workload's gang is a coscheduling PodGroup named after it, all pods required, unless
the pods already name a gang (a Volcano or Workload API PodGroup of the job's own
controller): then that gang stands and a note says where it differs from Kueue's Workload.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from solver.kube.gangs import LABEL_POD_GROUP_X, api_group, gang_link
from solver.kube.loader import RawObject
from solver.kube.workloads._jobset import REPLICATED_JOB
from solver.kube.workloads._kubeflow import KUBEFLOW_KINDS, REPLICA_TYPE
from solver.kube.workloads._kueue import PODSET_LABEL, WORKLOAD_LABEL
from solver.kube.workloads._lws import GROUP_INDEX, WORKER_INDEX
from solver.kube.workloads._template import Expansion, meta_value
from solver.model import KUEUE_ANNOTATIONS

__all__ = ["QUEUE_LABEL", "kueue_workloads"]

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"

# (Workload suffix, pod set name) of an expanded pod, per integration.
PodSetOf = Callable[[dict[str, Any], dict[str, Any]], tuple[str, str]]


def _label(pod: dict[str, Any], key: str) -> str:
    value = meta_value(pod, "labels", key)
    return value if isinstance(value, str) else ""


def _lws(body: dict[str, Any], pod: dict[str, Any]) -> tuple[str, str]:
    spec = body.get("spec") or {}
    lwt = spec.get("leaderWorkerTemplate") or {}
    group = _label(pod, GROUP_INDEX)
    if lwt.get("leaderTemplate") is None:
        return group, "main"
    return group, "leader" if _label(pod, WORKER_INDEX) == "0" else "worker"


def _one(_body: dict[str, Any], _pod: dict[str, Any]) -> tuple[str, str]:
    return "", "main"


INTEGRATIONS: dict[tuple[str, str], PodSetOf] = {
    ("batch", "Job"): _one,
    ("apps", "StatefulSet"): _one,
    ("apps", "Deployment"): lambda _b, pod: (str(pod["metadata"]["name"]), "main"),
    ("apps", "ReplicaSet"): lambda _b, pod: (str(pod["metadata"]["name"]), "main"),
    ("jobset.x-k8s.io", "JobSet"): lambda _b, pod: ("", _label(pod, REPLICATED_JOB)),
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): _lws,
    **{
        ("kubeflow.org", kind): (lambda _b, pod: ("", _label(pod, REPLICA_TYPE)))
        for kind in KUBEFLOW_KINDS
    },
}


def _has_tas(pod: dict[str, Any]) -> bool:
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    return any(key.startswith(KUEUE_ANNOTATIONS.PREFIX) for key in annotations)


def kueue_workloads(raw: RawObject, expansion: Expansion) -> None:
    """Groups the pods of a Kueue-managed workload into Kueue's Workloads (module
    docstring), in place; a workload Kueue does not manage is left as it is."""
    pod_set_of = INTEGRATIONS.get((api_group(raw.api_version), raw.kind))
    if pod_set_of is None:
        return
    pods = [o for o in expansion.objects if o.get("kind") == "Pod"]
    queue = meta_value(raw.body, "labels", QUEUE_LABEL)
    if not queue and not any(_has_tas(p) for p in pods):
        return
    meta = raw.body["metadata"]
    name, namespace = str(meta["name"]), str(meta.get("namespace") or "default")
    if not queue:
        expansion.notes.append(
            f"{raw.kind} {namespace}/{name}: Kueue TAS annotations ({KUEUE_ANNOTATIONS.REQUIRED} "
            f"and friends) without a {QUEUE_LABEL} label: read as managed by Kueue "
            "(manageJobsWithoutQueueName), one Workload as Kueue makes it"
        )
    units: dict[str, list[dict[str, Any]]] = {}
    for pod in pods:
        suffix, pod_set = pod_set_of(raw.body, pod)
        labels = pod["metadata"].setdefault("labels", {})
        labels.setdefault(PODSET_LABEL, pod_set)
        if queue:  # the LocalQueue of the Workload Kueue makes (`spec.queueName`)
            labels.setdefault(QUEUE_LABEL, queue)
        units.setdefault(suffix, []).append(pod)
    for suffix, members in units.items():
        workload = "-".join(p for p in (raw.kind.lower(), name, suffix) if p)
        for pod in members:
            pod["metadata"]["labels"][WORKLOAD_LABEL] = workload
        linked = [p for p in members if gang_link(p)]
        if linked:
            if len(linked) < len(members) or len({gang_link(p) for p in linked}) > 1:
                expansion.notes.append(
                    f"{raw.kind} {namespace}/{name}: Kueue admits Workload {workload!r} "
                    f"({len(members)} pods) whole, but its pods name their controller's "
                    "gangs, which stand: its pod sets are placed gang by gang"
                )
            continue
        if len(members) == 1:
            continue  # a gang of one, as it stands
        expansion.ungrouped = ""
        for pod in members:
            pod["metadata"]["labels"][LABEL_POD_GROUP_X] = workload
        expansion.objects.append(
            {
                "apiVersion": "scheduling.x-k8s.io/v1alpha1",
                "kind": "PodGroup",
                "metadata": {
                    "name": workload,
                    "namespace": namespace,
                    # Kueue's Workload is made when the job is: its FIFO order is the job's
                    **(
                        {"creationTimestamp": meta["creationTimestamp"]}
                        if meta.get("creationTimestamp")
                        else {}
                    ),
                },
                "spec": {"minMember": len(members)},
            }
        )
