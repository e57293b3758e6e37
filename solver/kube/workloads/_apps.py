"""`apps/v1` StatefulSet and Deployment -> their pods.

- StatefulSet (kubernetes/kubernetes `pkg/controller/statefulset/stateful_set_utils.go`
  newStatefulSetPod, getPodName, initIdentity, updateIdentity): `spec.replicas` (default
  1) pods `<sts>-<ordinal>` from `spec.ordinals.start` (default 0), each labelled
  `statefulset.kubernetes.io/pod-name` and `apps.kubernetes.io/pod-index`.
- Deployment (`pkg/controller/deployment/sync.go` getNewReplicaSet, then the ReplicaSet
  controller): `spec.replicas` (default 1) pods of one ReplicaSet, named
  `<deployment>-<template hash>-<random>` upstream; here `<deployment>-<i>`, standing in.

Neither creates a gang; a template label or annotation can make its pods one. A dump
holding pods that match the workload's `spec.selector.matchLabels` keeps those instead.
"""

from __future__ import annotations

from typing import Any

from solver.kube.kai import KAI_PRIORITY_LABEL, KAI_SCHEDULER
from solver.kube.loader import RawObject
from solver.kube.workloads._template import Expansion, Fields, pod_from_template

__all__ = ["POD_INDEX", "POD_NAME", "expand_deployment", "expand_stateful_set"]

POD_NAME = "statefulset.kubernetes.io/pod-name"
POD_INDEX = "apps.kubernetes.io/pod-index"
READ = {"replicas", "template", "selector", "ordinals", "serviceName"}


def _selected_by(f: Fields, spec: dict[str, Any]) -> Expansion:
    selector = f.dict(spec.get("selector") or {}, "spec.selector")
    wanted = f.map(selector, "spec.selector.matchLabels")

    def owns(pod: dict[str, Any]) -> bool:
        meta = pod.get("metadata")
        labels = meta.get("labels") if isinstance(meta, dict) else None
        return bool(wanted) and isinstance(labels, dict) and wanted.items() <= labels.items()

    return Expansion(owns=owns)


def expand_stateful_set(raw: RawObject) -> Expansion:
    f = Fields(raw)
    spec = f.spec
    replicas = f.count(spec.get("replicas"), "spec.replicas", 1)
    ordinals = f.dict(spec.get("ordinals") or {}, "spec.ordinals")
    start = f.count(ordinals.get("start"), "spec.ordinals.start", 0)
    out = _selected_by(f, spec)
    for ordinal in range(start, start + replicas):
        name = f"{f.name}-{ordinal}"
        out.objects.append(
            pod_from_template(
                f,
                spec.get("template"),
                "spec.template",
                name,
                labels={POD_NAME: name, POD_INDEX: str(ordinal)},
            )
        )
    out.notes += f.unread(READ)
    return out


def expand_deployment(raw: RawObject) -> Expansion:
    f = Fields(raw)
    spec = f.spec
    replicas = f.count(spec.get("replicas"), "spec.replicas", 1)
    out = _selected_by(f, spec)
    labels = _kai_class(f, spec.get("template"), out)
    for i in range(replicas):
        out.objects.append(
            pod_from_template(
                f, spec.get("template"), "spec.template", f"{f.name}-{i}", labels=labels
            )
        )
    out.notes += f.unread(READ)
    return out


KAI_DEPLOYMENT_CLASS = "inference"
"""KAI's default priority class for a Deployment's pods (docs/priority/README.md, "Workload
Default Priority"): inference, non-preemptible."""


def _kai_class(f: Fields, template: Any, out: Expansion) -> dict[str, str]:
    """For a Deployment KAI schedules (template `schedulerName: kai-scheduler`), the pod
    label its pod-grouper's priority comes from: the Deployment's own `priorityClassName`
    label (`calcPodGroupPriorityClass`: the owner's first), else, with neither a pod label
    nor `spec.priorityClassName`, KAI's default for a Deployment (noted)."""
    body: dict[str, Any] = template if isinstance(template, dict) else {}
    pod_spec: dict[str, Any] = body["spec"] if isinstance(body.get("spec"), dict) else {}
    if pod_spec.get("schedulerName") != KAI_SCHEDULER:
        return {}
    owner = f.map(f.raw.body.get("metadata") or {}, "metadata.labels")
    if owner.get(KAI_PRIORITY_LABEL):
        return {KAI_PRIORITY_LABEL: owner[KAI_PRIORITY_LABEL]}
    meta: dict[str, Any] = body["metadata"] if isinstance(body.get("metadata"), dict) else {}
    own: dict[str, Any] = meta["labels"] if isinstance(meta.get("labels"), dict) else {}
    if own.get(KAI_PRIORITY_LABEL) or pod_spec.get("priorityClassName"):
        return {}
    out.notes.append(
        f"Deployment {f.namespace}/{f.name}: no priority class; KAI's default for a Deployment "
        f"is {KAI_DEPLOYMENT_CLASS!r} (non-preemptible: its pods run within their queues' quotas)"
    )
    return {KAI_PRIORITY_LABEL: KAI_DEPLOYMENT_CLASS}
