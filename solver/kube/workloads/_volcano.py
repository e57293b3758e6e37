"""Volcano `batch.volcano.sh/v1alpha1` Job -> its pods and PodGroup, as the job controller
and the admission webhook make them (volcano-sh/volcano `pkg/controllers/job/
job_controller_util.go` createJobPod and `job_controller_actions.go` createOrUpdatePodGroup;
defaults from `pkg/webhooks/admission/jobs/mutate`):

- pod `<job>-<task>-<index>` for every task replica (a task without a name is
  `default<i>`), with annotations `scheduling.k8s.io/group-name` (the PodGroup),
  `volcano.sh/job-name`, `volcano.sh/task-spec`, `volcano.sh/task-index`,
  `volcano.sh/queue-name`, and labels `volcano.sh/job-name`, `volcano.sh/job-namespace`,
  `volcano.sh/task-spec`, `volcano.sh/task-index`, `volcano.sh/queue-name`;
  `schedulerName` and `priorityClassName` from the job (`volcano` by default) unless the
  task template names its own;
- PodGroup `<job>-<uid>` (Volcano >= v1.6; `<job>` for a job without a uid yet, as
  submitted, and in older releases): `minMember` = `spec.minAvailable` (default, webhook
  patchDefaultMinAvailable: the sum of the tasks' `minAvailable`, each defaulting to its
  replicas), `minTaskMember` = each task's `minAvailable`, `queue` (`default`),
  `priorityClassName`, `networkTopology` (mode; `highestTierAllowed`, else
  `highestTierName`: HyperNode tiers, which gangplan does not enforce yet, so a hard one
  keeps the job pending with that reason). A task with `dependsOn` gets no pods: the
  controller creates them once the tasks it depends on run (`docs/design/
  task-launch-order-within-job.md`, `task-minavailable-and-dependson.md`), so nothing of
  it is placed now, and the PodGroup counts the created tasks, as Volcano's gang check
  skips tasks not created yet (noted). Pod and task fields the controller sets for other plugins
  (job-version, template-uid, retry count) are not modelled.
- a task's `partitionPolicy` (`totalPartitions`, `partitionSize`, `minPartitions`,
  `networkTopology`), checked as the webhook's `validatePartitionPolicy` checks it: each pod
  gets the label `volcano.sh/partition-id` = its index ÷ `partitionSize`
  (`createJobPod`), the task's `minAvailable` defaults to `minPartitions × partitionSize`
  when `minPartitions` > 0 (`mutate_job.go`), and the PodGroup gets the task's
  `subGroupPolicy` (`getSubGroupPolicy`: the task's pods by `volcano.sh/task-spec`, one
  sub-group per partition id, `subGroupSize` = `partitionSize`, `minSubGroups` =
  `minPartitions`, the partition's `networkTopology`), which the HyperNode feature places.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from solver.kube.convert import effective_requests
from solver.kube.gangs import ANNOTATION_VOLCANO_GROUP
from solver.kube.loader import RawObject
from solver.kube.objects import K8sPod
from solver.kube.workloads._template import Expansion, Fields, meta_value, pod_from_template
from solver.quantity import CPU, PODS

__all__ = ["expand_volcano_job"]

JOB_NAME = "volcano.sh/job-name"
JOB_NAMESPACE = "volcano.sh/job-namespace"
TASK_SPEC = "volcano.sh/task-spec"
TASK_INDEX = "volcano.sh/task-index"
QUEUE_NAME = "volcano.sh/queue-name"
PARTITION_ID = "volcano.sh/partition-id"  # batch.TaskPartitionID
READ = {"tasks", "minAvailable", "queue", "schedulerName", "priorityClassName", "networkTopology"}
TASK_READ = {"name", "replicas", "minAvailable", "template", "dependsOn", "partitionPolicy"}
#   topologyPolicy, policies, maxRetry: noted, not acted on
PARTITION_READ = {"totalPartitions", "partitionSize", "minPartitions", "networkTopology"}


def expand_volcano_job(raw: RawObject) -> Expansion:
    f = Fields(raw)
    spec = f.spec
    tasks = f.list(spec.get("tasks"), "spec.tasks")
    queue = f.text(spec.get("queue"), "spec.queue", "default") or "default"
    scheduler = f.text(spec.get("schedulerName"), "spec.schedulerName", "volcano") or "volcano"
    group = f"{f.name}-{f.uid}" if f.uid else f.name
    priority_class = f.text(spec.get("priorityClassName"), "spec.priorityClassName")
    out = Expansion(owns=lambda pod: meta_value(pod, "annotations", JOB_NAME) == f.name)
    min_task: dict[str, int] = {}
    shapes: list[_TaskShape] = []  # per created task: replicas, minAvailable, one pod's requests
    sub_groups: list[dict[str, Any]] = []
    deferred: dict[str, list[str]] = {}  # task -> the tasks it depends on
    for i, task in enumerate(tasks):
        where = f"spec.tasks[{i}]"
        task = f.dict(task, where)
        task_name = f.text(task.get("name"), f"{where}.name") or f"default{i}"
        replicas = f.count(task.get("replicas"), f"{where}.replicas", 1)
        out.notes += f.unread(TASK_READ, task, where)
        partition = _partition(f, task, f"{where}.partitionPolicy", replicas)
        if task.get("dependsOn") is not None:
            depends = f.dict(task["dependsOn"], f"{where}.dependsOn")
            deferred[task_name] = f.texts(depends.get("name"), f"{where}.dependsOn.name")
            continue  # created once what it depends on runs: nothing to place yet
        default_min = replicas
        if partition is not None:
            out.notes += f.unread(PARTITION_READ, partition.body, f"{where}.partitionPolicy")
            sub_groups.append(partition.sub_group_policy(task_name))
            default_min = partition.minimum or replicas
        min_task[task_name] = f.count(
            task.get("minAvailable"), f"{where}.minAvailable", default_min
        )
        if min_task[task_name] > replicas:  # admit_job.go
            raise f.raw.error(
                f"'minAvailable' ({min_task[task_name]}) is greater than 'replicas' ({replicas})",
                field=f"{where}.minAvailable",
            )
        for index in range(replicas):
            common = {JOB_NAME: f.name, TASK_SPEC: task_name, QUEUE_NAME: queue}
            common[TASK_INDEX] = str(index)
            labels = {**common, JOB_NAMESPACE: f.namespace}
            if partition is not None:
                labels[PARTITION_ID] = str(index // partition.size)
            pod = pod_from_template(
                f,
                task.get("template"),
                f"{where}.template",
                f"{f.name}-{task_name}-{index}",
                labels=labels,
                annotations={**common, ANNOTATION_VOLCANO_GROUP: group},
                scheduler_name=scheduler,
            )
            if priority_class and not pod["spec"].get("priorityClassName"):
                pod["spec"]["priorityClassName"] = priority_class
            out.objects.append(pod)
            if index == 0:
                shapes.append(_TaskShape(replicas, min_task[task_name], _requests(pod)))
    if deferred:
        waits = "; ".join(f"{t} on {', '.join(d) or '-'}" for t, d in sorted(deferred.items()))
        out.notes.append(
            f"Volcano Job {f.namespace}/{f.name}: tasks depend on others ({waits}): the job "
            "controller creates their pods once those run, so they are not placed now; the "
            f"PodGroup counts the created tasks (minMember {sum(min_task.values())}), as "
            "Volcano's gang check skips tasks not created yet"
        )
    pod_group: dict[str, Any] = {
        "minMember": (0 if deferred else f.count(spec.get("minAvailable"), "spec.minAvailable", 0))
        or sum(min_task.values()),
        "minTaskMember": min_task,
        "queue": queue,
    }
    if priority_class:
        pod_group["priorityClassName"] = priority_class
    if not deferred and (minimum := _min_resources(shapes, pod_group["minMember"])):
        pod_group["minResources"] = minimum
    if topology := _network_topology(f, spec.get("networkTopology"), "spec.networkTopology"):
        pod_group["networkTopology"] = topology
    if sub_groups:
        pod_group["subGroupPolicy"] = sub_groups
    out.objects.insert(
        0,
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": group, "namespace": f.namespace},
            "spec": pod_group,
        },
    )
    out.notes += f.unread(READ)
    return out


@dataclass(frozen=True)
class _TaskShape:
    replicas: int
    min_available: int
    requests: dict[str, int] | None  # one pod's (None: its template does not read)


def _requests(pod: dict[str, Any]) -> dict[str, int] | None:
    """One pod's requests as the scheduler counts them; None when the template does not
    parse (the pod itself is refused later, with its field)."""
    try:
        k8s = K8sPod.model_validate(pod)
    except ValidationError:
        return None
    return {r: v for r, v in effective_requests(k8s).items() if r != PODS}


def _min_resources(shapes: list[_TaskShape], min_member: int) -> dict[str, str]:
    """The PodGroup's `minResources` as the job controller computes it
    (`calcPGMinResources`): with minAvailable below the tasks' minAvailable sum, the
    requests of the first minAvailable pods; else each task's minAvailable pods, filled up
    to minAvailable from the tasks' other replicas. Tasks in spec order (upstream sorts by
    the template's PriorityClass value, higher first; templates here rarely differ)."""
    if any(t.requests is None for t in shapes):
        return {}
    total: dict[str, int] = {}

    def add(shape: _TaskShape, count: int) -> None:
        for r, v in (shape.requests or {}).items():
            total[r] = total.get(r, 0) + v * count

    if min_member < sum(t.min_available for t in shapes):
        left = min_member
        for t in shapes:
            add(t, min(left, t.replicas))
            left -= min(left, t.replicas)
            if left <= 0:
                break
    else:
        counted = 0
        for t in shapes:
            take = min(t.min_available, min_member - counted)
            add(t, take)
            counted += take
        for t in shapes:
            if counted >= min_member:
                break
            take = min(t.replicas - t.min_available, min_member - counted)
            add(t, take)
            counted += take
    return {r: (f"{v}m" if r == CPU else str(v)) for r, v in sorted(total.items()) if v}


def _network_topology(f: Fields, value: Any, path: str) -> dict[str, Any]:
    """A job's or partition's `networkTopology` as the controller copies it to the PodGroup:
    mode (default hard), then `highestTierAllowed`, else `highestTierName`; {} when absent.
    Both tiers given is refused, as the webhook's `validateNetworkTopology` refuses it."""
    topology = f.dict(value or {}, path)
    if not topology:
        return {}
    if topology.get("highestTierAllowed") is not None and topology.get("highestTierName"):
        raise f.raw.error(
            "must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology "
            "simultaneously",
            field=path,
        )
    copied: dict[str, Any] = {"mode": f.text(topology.get("mode"), f"{path}.mode", "hard")}
    if topology.get("highestTierAllowed") is not None:
        copied["highestTierAllowed"] = topology["highestTierAllowed"]
    elif topology.get("highestTierName"):
        copied["highestTierName"] = topology["highestTierName"]
    return copied


@dataclass(frozen=True)
class _Partition:
    body: dict[str, Any]
    size: int
    minimum: int  # minPartitions × partitionSize; 0 when minPartitions is not set
    min_partitions: int
    topology: dict[str, Any]

    def sub_group_policy(self, task: str) -> dict[str, Any]:
        """`getSubGroupPolicy`: the task's pods, one sub-group per partition id."""
        policy: dict[str, Any] = {
            "name": task,
            "subGroupSize": self.size,
            "minSubGroups": self.min_partitions,
            "labelSelector": {"matchLabels": {TASK_SPEC: task}},
            "matchLabelKeys": [PARTITION_ID],
        }
        if self.topology:
            policy["networkTopology"] = self.topology
        return policy


def _partition(f: Fields, task: dict[str, Any], path: str, replicas: int) -> _Partition | None:
    """A task's `partitionPolicy`, refused as the webhook's `validatePartitionPolicy` refuses
    it (the first failing rule, named by its field)."""
    if task.get("partitionPolicy") is None:
        return None
    body = f.dict(task["partitionPolicy"], path)
    total = f.count(body.get("totalPartitions"), f"{path}.totalPartitions", 0)
    size = f.count(body.get("partitionSize"), f"{path}.partitionSize", 0)
    min_partitions = f.count(body.get("minPartitions"), f"{path}.minPartitions", 0)
    if total <= 0:
        raise f.raw.error(
            "'TotalPartitions' must be greater than 0", field=f"{path}.totalPartitions"
        )
    if size <= 0:
        raise f.raw.error("'PartitionSize' must be greater than 0", field=f"{path}.partitionSize")
    if replicas != total * size:
        raise f.raw.error(
            f"'Replicas' ({replicas}) are not equal to TotalPartitions*PartitionSize "
            f"({total}*{size})",
            field=path,
        )
    given = task.get("minAvailable")
    if given is not None and min_partitions > 0 and given != min_partitions * size:
        raise f.raw.error(
            f"'MinAvailable' ({given}) is not equal to MinPartitions*PartitionSize "
            f"({min_partitions}*{size})",
            field=path,
        )
    topology = _network_topology(f, body.get("networkTopology"), f"{path}.networkTopology")
    return _Partition(body, size, min_partitions * size, min_partitions, topology)
