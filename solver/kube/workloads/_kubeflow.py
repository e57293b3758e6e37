"""Kubeflow training jobs -> their pods and PodGroup.

`kubeflow.org/v1` PyTorchJob, TFJob, XGBoostJob, PaddleJob, JAXJob (kubeflow/training-operator,
`pkg/controller.v1/common/pod.go` createNewPod, `util.go` GenGeneralName / GenLabels,
`scheduler.go` the Volcano and scheduler-plugins PodGroup controls):

- one pod per replica of each replica type, `<job>-<type lowercased>-<index>`, labelled
  `training.kubeflow.org/{job-name, operator-name, replica-type, replica-index}` and
  `training.kubeflow.org/job-role: master` for the master (PyTorch `Master`, or worker 0
  of a job without one; TF `Chief`);
- with gang scheduling, the PodGroup is named after the job: `minMember` =
  `runPolicy.schedulingPolicy.minAvailable`, else every replica; `queue` and
  `priorityClass` from the scheduling policy. Volcano's (`scheduling.volcano.sh`) joins
  pods by annotation `scheduling.k8s.io/group-name` (and `volcano.sh/task-spec` = the
  replica type); scheduler-plugins' (`scheduling.x-k8s.io`) by label
  `scheduling.x-k8s.io/pod-group`, with `scheduleTimeoutSeconds`.

MPIJob (training-operator `pkg/controller.v1/mpi/mpijob_controller.go`, its own
ReconcilePods): the launcher `<job>-launcher` (`replica-type: launcher`, `job-role:
master`, no index) and workers `<job>-worker-<index>`; its PodGroup counts the launcher
with the workers. (Read from training-operator release-1.9; mpi-operator's v2beta1 is
taken to name pods the same way, which was not checked.)

Whether a job is gang scheduled, and by whom, is the operator's start-up flag
(`--gang-scheduler-name`), which no manifest carries: the replica templates'
`schedulerName` says it here — `volcano` for Volcano, any other non-default name for
scheduler-plugins. Without one the pods are placed one by one, with a note.
"""

from __future__ import annotations

from typing import Any

from solver.kube.fields import ignored
from solver.kube.gangs import ANNOTATION_VOLCANO_GROUP, LABEL_POD_GROUP_X
from solver.kube.loader import RawObject
from solver.kube.workloads._template import Expansion, Fields, meta_value, pod_from_template

__all__ = ["KUBEFLOW_KINDS", "REPLICA_TYPE", "expand_kubeflow_job"]

JOB_NAME = "training.kubeflow.org/job-name"
OPERATOR = "training.kubeflow.org/operator-name"
REPLICA_TYPE = "training.kubeflow.org/replica-type"
REPLICA_INDEX = "training.kubeflow.org/replica-index"
JOB_ROLE = "training.kubeflow.org/job-role"
VOLCANO_TASK = "volcano.sh/task-spec"
DEFAULT_SCHEDULER = "default-scheduler"

# kind -> (the replica specs field, the master replica type, the operator's name)
KUBEFLOW_KINDS: dict[str, tuple[str, str, str]] = {
    "PyTorchJob": ("pytorchReplicaSpecs", "Master", "pytorchjob-controller"),
    "TFJob": ("tfReplicaSpecs", "Chief", "tfjob-controller"),
    "XGBoostJob": ("xgbReplicaSpecs", "Master", "xgboostjob-controller"),
    "PaddleJob": ("paddleReplicaSpecs", "Master", "paddlejob-controller"),
    "MPIJob": ("mpiReplicaSpecs", "Launcher", "mpi-operator"),
    "JAXJob": ("jaxReplicaSpecs", "Master", "jaxjob-controller"),  # Worker replicas only
}
READ = {"runPolicy", "mpiImplementation", "slotsPerWorker"} | {
    field for field, _, _ in KUBEFLOW_KINDS.values()
}  # elasticPolicy: noted (elastic replica counts are not acted on)
RUN_POLICY_READ = {"schedulingPolicy"} | ignored("kubeflow.org/PyTorchJob", "spec.runPolicy.")
SCHEDULING_READ = {"minAvailable", "queue", "priorityClass", "minResources"}


def expand_kubeflow_job(raw: RawObject) -> Expansion:
    f = Fields(raw)
    field, master, operator = KUBEFLOW_KINDS[raw.kind]
    spec = f.spec
    replica_specs = f.dict(spec.get(field) or {}, f"spec.{field}")
    out = Expansion(owns=lambda pod: meta_value(pod, "labels", JOB_NAME) == f.name)
    pods: list[tuple[str, dict[str, Any]]] = []  # (replica type, pod)
    for rtype, replica in sorted(replica_specs.items(), key=lambda kv: kv[0] != master):
        where = f"spec.{field}.{rtype}"
        replica = f.dict(replica, where)
        count = f.count(replica.get("replicas"), f"{where}.replicas", 1)
        if raw.kind == "MPIJob" and rtype == "Launcher" and count != 1:
            raise raw.error(  # ValidateV1MpiJobSpec
                f"there must be only 1 launcher replica, got {count}", field=f"{where}.replicas"
            )
        lower = str(rtype).lower()
        for index in range(count):
            labels = {JOB_NAME: f.name, OPERATOR: operator, REPLICA_TYPE: lower}
            if raw.kind == "MPIJob" and rtype == "Launcher":
                name = f"{f.name}-launcher"
                labels[JOB_ROLE] = "master"
            else:
                name = f"{f.name}-{lower}-{index}"
                labels[REPLICA_INDEX] = str(index)
                no_master = master not in replica_specs and rtype == "Worker" and index == 0
                if rtype == master or (raw.kind == "PyTorchJob" and no_master):
                    labels[JOB_ROLE] = "master"
            template = replica.get("template")
            pod = pod_from_template(f, template, f"{where}.template", name, labels=labels)
            pods.append((lower, pod))
    _gang(f, spec, pods, out)
    out.objects.extend(pod for _, pod in pods)
    out.notes += f.unread(READ)
    return out


def _gang(
    f: Fields, spec: dict[str, Any], pods: list[tuple[str, dict[str, Any]]], out: Expansion
) -> None:
    """The PodGroup of the gang scheduler the templates name, and the pods' link to it."""
    names = {p["spec"].get("schedulerName") or DEFAULT_SCHEDULER for _, p in pods}
    gang_names = sorted(names - {DEFAULT_SCHEDULER})
    run_policy = f.dict(spec.get("runPolicy") or {}, "spec.runPolicy")
    out.notes += f.unread(RUN_POLICY_READ, run_policy, "spec.runPolicy")
    policy = f.dict(run_policy.get("schedulingPolicy") or {}, "spec.runPolicy.schedulingPolicy")
    where = "spec.runPolicy.schedulingPolicy"
    if not gang_names:
        out.ungrouped = (
            f"{f.raw.kind} {f.namespace}/{f.name}: no gang scheduler named in its templates' "
            "schedulerName: pods placed one by one"
            + (f" ({where} is for a gang scheduler: not used)" if policy else "")
        )
        return
    volcano = gang_names == ["volcano"]
    read = SCHEDULING_READ | (set() if volcano else {"scheduleTimeoutSeconds"})
    out.notes += f.unread(read, policy, where)
    min_member = f.count(policy.get("minAvailable"), f"{where}.minAvailable", len(pods))
    group: dict[str, Any] = {"minMember": min_member}
    if policy.get("minResources") is not None:
        group["minResources"] = f.dict(policy["minResources"], f"{where}.minResources")
    if volcano:
        api = "scheduling.volcano.sh/v1beta1"
        group["queue"] = f.text(policy.get("queue"), f"{where}.queue") or "default"
        for rtype, pod in pods:
            pod["metadata"]["annotations"] |= {
                ANNOTATION_VOLCANO_GROUP: f.name,
                VOLCANO_TASK: rtype,
            }
    else:
        api = "scheduling.x-k8s.io/v1alpha1"
        timeout = policy.get("scheduleTimeoutSeconds")
        if timeout is not None:
            group["scheduleTimeoutSeconds"] = f.count(timeout, f"{where}.scheduleTimeoutSeconds", 0)
        for _, pod in pods:
            pod["metadata"]["labels"][LABEL_POD_GROUP_X] = f.name
    priority_class = f.text(policy.get("priorityClass"), f"{where}.priorityClass")
    if priority_class:
        group["priorityClassName"] = priority_class
    out.objects.append(
        {
            "apiVersion": api,
            "kind": "PodGroup",
            "metadata": {"name": f.name, "namespace": f.namespace},
            "spec": group,
        }
    )
