"""`leaderworkerset.x-k8s.io/v1` LeaderWorkerSet -> its groups' pods, and the Volcano
PodGroup of each group.

Pods (kubernetes-sigs/lws `pkg/controllers/leaderworkerset_controller.go`
constructLeaderStatefulSetApplyConfiguration, `pkg/controllers/pod_controller.go`
constructWorkerStatefulSetApplyConfiguration, `pkg/webhooks/pod_webhook.go` Default):
`replicas` groups (default 1) of `leaderWorkerTemplate.size` pods (default 1):

- the leader `<lws>-<group>` from `leaderTemplate` (else `workerTemplate`), labels
  `leaderworkerset.sigs.k8s.io/{name, group-index, worker-index: 0, group-key,
  template-revision-hash}`, annotation `.../size`;
- workers `<lws>-<group>-<j>`, j = 1 .. size-1 (the group's worker StatefulSet starts its
  ordinals at 1), from `workerTemplate`, the same labels with `worker-index: j`, and
  annotations `.../size` and `.../leader-name`;
- with the annotation `leaderworkerset.sigs.k8s.io/exclusive-topology: <key>` on the LWS,
  every pod gets the webhook's exclusive terms (`_exclusive`): one group per `<key>` domain;
- `group-key` is sha1("<namespace>/<leader>"); the revision hash (an FNV hash of the
  controller revision upstream) stands in as the first 10 hex digits of the SHA-1 of the
  LWS spec.

Gang (`pkg/schedulerprovider/volcano_provider.go`): with the Volcano provider, every pod
of group i carries `scheduling.k8s.io/group-name: <lws>-<i>-<revision>` and that PodGroup
has `minMember` = size (1 with `startupPolicy: LeaderReady`, which starts workers only
once the leader runs) and the queue of the LWS annotation `scheduling.volcano.sh/queue-name`.
The provider is the LWS controller's configuration, which no manifest carries: the
templates' `schedulerName: volcano` stands for it, as for Kubeflow jobs. Otherwise no gang
is made (noted).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from solver.kube.gangs import ANNOTATION_VOLCANO_GROUP
from solver.kube.loader import RawObject
from solver.kube.workloads._apps import POD_INDEX, POD_NAME
from solver.kube.workloads._template import Expansion, Fields, meta_value, pod_from_template

__all__ = ["GROUP_INDEX", "WORKER_INDEX", "expand_leader_worker_set"]

PREFIX = "leaderworkerset.sigs.k8s.io/"
GROUP_INDEX = f"{PREFIX}group-index"
WORKER_INDEX = f"{PREFIX}worker-index"
SET_NAME = f"{PREFIX}name"
QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
EXCLUSIVE = f"{PREFIX}exclusive-topology"
SUBGROUP_EXCLUSIVE = f"{PREFIX}subgroup-exclusive-topology"
GROUP_KEY = f"{PREFIX}group-key"
READ = {"replicas", "leaderWorkerTemplate", "startupPolicy", "rolloutStrategy", "networkConfig"}


@dataclass(frozen=True)
class _GroupMember:
    """Makes the pods of one group: the labels and annotations they all share."""

    f: Fields
    lwt: dict[str, Any]
    where: str
    size: int
    common: dict[str, str]

    def __call__(self, field: str, name: str, worker: int, ordinal: int, **notes: str) -> Any:
        """A pod from template `field`, worker index `worker`, StatefulSet ordinal `ordinal`."""
        labels = {**self.common, WORKER_INDEX: str(worker)}
        labels |= {POD_NAME: name, POD_INDEX: str(ordinal)}
        annotations = {f"{PREFIX}size": str(self.size)}
        annotations |= {f"{PREFIX}{key}": value for key, value in notes.items()}
        path = f"{self.where}.{field}"
        template = self.lwt.get(field)
        return pod_from_template(
            self.f, template, path, name, labels=labels, annotations=annotations
        )


def _exclusive(pod: dict[str, Any], key: str, group: str) -> None:
    """LWS's exclusive placement (`pkg/webhooks/pod_webhook.go` SetExclusiveAffinities): the
    group's pods share a `key` domain (required affinity to their group key) that no other
    group's pod is in (required anti-affinity to every other group key)."""
    pod["metadata"]["annotations"][EXCLUSIVE] = key
    affinity = pod["spec"]["affinity"] = dict(pod["spec"].get("affinity") or {})
    same = {"matchExpressions": [{"key": GROUP_KEY, "operator": "In", "values": [group]}]}
    others = {
        "matchExpressions": [
            {"key": GROUP_KEY, "operator": "Exists"},
            {"key": GROUP_KEY, "operator": "NotIn", "values": [group]},
        ]
    }
    for field, selector in (("podAffinity", same), ("podAntiAffinity", others)):
        part = affinity[field] = dict(affinity.get(field) or {})
        required = "requiredDuringSchedulingIgnoredDuringExecution"
        part[required] = [
            *(part.get(required) or []),
            {"labelSelector": selector, "topologyKey": key},
        ]


def expand_leader_worker_set(raw: RawObject) -> Expansion:
    f = Fields(raw)
    spec = f.spec
    where = "spec.leaderWorkerTemplate"
    lwt = f.dict(spec.get("leaderWorkerTemplate") or {}, where)
    replicas = f.count(spec.get("replicas"), "spec.replicas", 1)
    size = f.count(lwt.get("size"), f"{where}.size", 1)
    if size < 1:
        raise raw.error("must be at least 1", field=f"{where}.size")
    leader_field = "leaderTemplate" if lwt.get("leaderTemplate") is not None else "workerTemplate"
    revision = hashlib.sha1(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()[:10]
    startup = f.text(spec.get("startupPolicy"), "spec.startupPolicy", "LeaderCreated")
    meta = f.dict(raw.body.get("metadata") or {}, "metadata")
    lws_annotations = f.map(meta, "metadata.annotations")
    out = Expansion(owns=lambda pod: meta_value(pod, "labels", SET_NAME) == f.name)
    exclusive = lws_annotations.get(EXCLUSIVE, "")
    if SUBGROUP_EXCLUSIVE in lws_annotations:
        out.notes.append(
            f"LeaderWorkerSet {f.namespace}/{f.name}: {SUBGROUP_EXCLUSIVE} (sub-groups, "
            "spec.leaderWorkerTemplate.subGroupPolicy) is not enforced"
        )
    groups: list[list[dict[str, Any]]] = []
    for i in range(replicas):
        leader = f"{f.name}-{i}"
        common = {
            SET_NAME: f.name,
            GROUP_INDEX: str(i),
            f"{PREFIX}group-key": hashlib.sha1(f"{f.namespace}/{leader}".encode()).hexdigest(),
            f"{PREFIX}template-revision-hash": revision,
        }
        member = _GroupMember(f, lwt, where, size, common)
        pods = [member(leader_field, leader, 0, i)]
        pods += [
            member("workerTemplate", f"{leader}-{j}", j, j, **{"leader-name": leader})
            for j in range(1, size)
        ]
        if exclusive:
            for p in pods:
                _exclusive(p, exclusive, common[GROUP_KEY])
        groups.append(pods)
    if any(p["spec"].get("schedulerName") == "volcano" for pods in groups for p in pods):
        min_member = 1 if startup == "LeaderReady" else size
        queue = lws_annotations.get(QUEUE_ANNOTATION)
        for i, pods in enumerate(groups):
            group = f"{f.name}-{i}-{revision}"
            for p in pods:
                p["metadata"]["annotations"][ANNOTATION_VOLCANO_GROUP] = group
            pg_spec: dict[str, Any] = {"minMember": min_member}
            if queue:
                pg_spec["queue"] = queue
            out.objects.append(
                {
                    "apiVersion": "scheduling.volcano.sh/v1beta1",
                    "kind": "PodGroup",
                    "metadata": {
                        "name": group,
                        "namespace": f.namespace,
                        "annotations": {
                            k: v for k, v in lws_annotations.items() if k.startswith("volcano.sh/")
                        },
                    },
                    "spec": pg_spec,
                }
            )
    else:
        out.ungrouped = (
            f"LeaderWorkerSet {f.namespace}/{f.name}: no gang scheduler named in its templates' "
            "schedulerName: pods placed one by one"
        )
    out.objects.extend(p for pods in groups for p in pods)
    out.notes += f.unread(READ)
    return out
