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
    for i in range(replicas):
        out.objects.append(
            pod_from_template(f, spec.get("template"), "spec.template", f"{f.name}-{i}")
        )
    out.notes += f.unread(READ)
    return out
