"""Kueue `Workload` (`kueue.x-k8s.io`) -> its pods: `spec.podSets[]` (`name`, `count`,
`template`, `topologyRequest`) expanded to the pending pods of one gang needing all of them
(Kueue admits a workload whole). Each pod set's `topologyRequest` is written as the
pod-template annotations Kueue's job integrations write (`jobframework/tas.go` reads them
back), so one parser (`parse_kueue_request`) checks both; each pod carries Kueue's
`kueue.x-k8s.io/podset` label naming its pod set.
"""

from __future__ import annotations

import json
from typing import Any

from solver.kube.loader import RawObject
from solver.kube.workloads._template import Expansion, Fields, meta_value, pod_from_template
from solver.model import (
    KUEUE_ANNOTATIONS,
    KUEUE_PODSET_LABEL,
    KUEUE_QUEUE_LABEL,
    KueueRequest,
    KueueRequestError,
    parse_kueue_request,
    pod_set_group_error,
)

__all__ = ["PODSET_LABEL", "WORKLOAD_LABEL", "expand_kueue_workload"]

GANG_LABEL = "scheduling.x-k8s.io/pod-group"  # coscheduling: the expanded pods' one gang
WORKLOAD_LABEL = "kueue.x-k8s.io/workload-name"
PODSET_LABEL = KUEUE_PODSET_LABEL


def _request_annotations(f: Fields, request: Any, path: str, notes: list[str]) -> dict[str, str]:
    """`topologyRequest` as the pod-template annotations that ask for the same; the fields
    it does not act on (multi-layer slices, rank-ordering labels) noted."""
    if request is None:
        return {}
    request = f.dict(request, path)
    notes += f.unread(set(_FIELD_OF_ANNOTATION), request, path)
    a = KUEUE_ANNOTATIONS
    out: dict[str, str] = {}
    for name, key in (
        ("required", a.REQUIRED),
        ("preferred", a.PREFERRED),
        ("podSetSliceRequiredTopology", a.SLICE_REQUIRED),
        ("podSetGroupName", a.GROUP_NAME),
    ):
        if (value := f.text(request.get(name), f"{path}.{name}")) or request.get(name) == "":
            out[key] = value
    unconstrained = request.get("unconstrained")
    if unconstrained is not None:
        if not isinstance(unconstrained, bool):
            raise f.raw.error("must be a boolean", field=f"{path}.unconstrained")
        out[a.UNCONSTRAINED] = "true" if unconstrained else "false"
    size = request.get("podSetSliceSize")
    if size is not None:
        out[a.SLICE_SIZE] = str(f.count(size, f"{path}.podSetSliceSize", 1))
    layers = request.get("podsetSliceRequiredTopologyConstraints")
    if layers is not None:
        where = f"{path}.podsetSliceRequiredTopologyConstraints"
        out[a.SLICE_CONSTRAINTS] = json.dumps(f.dicts(layers, where))
    try:
        parse_kueue_request(out)
    except KueueRequestError as err:
        key, _, rest = err.field.removeprefix("metadata.annotations[").partition("]")
        field = {v: k for k, v in _FIELD_OF_ANNOTATION.items()}.get(key, "")
        raise f.raw.error(err.message, field=f"{path}.{field}{rest}".rstrip(".")) from None
    return out


_FIELD_OF_ANNOTATION = {
    "required": KUEUE_ANNOTATIONS.REQUIRED,
    "preferred": KUEUE_ANNOTATIONS.PREFERRED,
    "unconstrained": KUEUE_ANNOTATIONS.UNCONSTRAINED,
    "podSetSliceRequiredTopology": KUEUE_ANNOTATIONS.SLICE_REQUIRED,
    "podSetSliceSize": KUEUE_ANNOTATIONS.SLICE_SIZE,
    "podSetGroupName": KUEUE_ANNOTATIONS.GROUP_NAME,
    "podsetSliceRequiredTopologyConstraints": KUEUE_ANNOTATIONS.SLICE_CONSTRAINTS,
}


def expand_kueue_workload(raw: RawObject) -> Expansion:
    """A Kueue `Workload`: one gang of every pod of its pod sets (all required)."""
    f = Fields(raw)
    out = Expansion(owns=lambda pod: meta_value(pod, "labels", WORKLOAD_LABEL) == f.name)
    queue = f.text(f.spec.get("queueName"), "spec.queueName", "")  # its LocalQueue
    total = 0
    pods: list[dict[str, Any]] = []
    groups: dict[str, list[tuple[int, str, int, KueueRequest]]] = {}
    for i, ps in enumerate(f.dicts(f.spec.get("podSets"), "spec.podSets")):
        path = f"spec.podSets[{i}]"
        name = f.text(ps.get("name"), f"{path}.name", "main")
        count = f.count(ps.get("count"), f"{path}.count", 1)
        annotations = _request_annotations(
            f, ps.get("topologyRequest"), f"{path}.topologyRequest", out.notes
        )
        out.notes += f.unread({"name", "count", "template", "topologyRequest"}, ps, path)
        request = parse_kueue_request(annotations)
        if request is not None and request.group is not None:
            groups.setdefault(request.group, []).append((i, name, count, request))
        size = int(annotations.get(KUEUE_ANNOTATIONS.SLICE_SIZE, "1"))
        if size > count and count:
            raise f.raw.error(
                f"slice size {size} is larger than the pod set count {count}",
                field=f"{path}.topologyRequest.podSetSliceSize",
            )
        for j in range(count):
            pods.append(
                pod_from_template(
                    f,
                    ps.get("template"),
                    f"{path}.template",
                    f"{f.name}-{name}-{j}",
                    labels={
                        GANG_LABEL: f.name,
                        WORKLOAD_LABEL: f.name,
                        PODSET_LABEL: name,
                        **({KUEUE_QUEUE_LABEL: queue} if queue else {}),
                    },
                    annotations=annotations,
                )
            )
        total += count
    if not pods:
        raise raw.error("a Workload needs at least one pod", field="spec.podSets")
    for group, members in groups.items():
        why = pod_set_group_error(group, [m[1:] for m in members])
        if why:
            field = f"spec.podSets[{members[0][0]}].topologyRequest.podSetGroupName"
            raise raw.error(why, field=field)
    out.objects.append(
        {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {
                "name": f.name,
                "namespace": f.namespace,
                **({"creationTimestamp": created} if (created := _created(raw)) else {}),
            },
            "spec": {"minMember": total},
        }
    )
    out.objects.extend(pods)
    out.notes += f.unread({"podSets", "queueName"})  # priority, active, ...: noted
    return out


def _created(raw: RawObject) -> str | None:
    """The Workload's creationTimestamp (its FIFO order in its ClusterQueue), as text."""
    meta = raw.body.get("metadata") or {}
    value = meta.get("creationTimestamp") if isinstance(meta, dict) else None
    if isinstance(value, str):
        return value
    return value.isoformat() if value is not None and hasattr(value, "isoformat") else None
