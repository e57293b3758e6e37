"""Kueue's ClusterQueue, Cohort and LocalQueue (`kueue.x-k8s.io` v1beta1 / v1beta2; Cohort
also v1alpha1), read as Kueue's cache reads them (`pkg/cache/scheduler/clusterqueue.go`,
`cohort.go`, `localqueue.go`) into `Queue`s with `kueue` set (`solver.model._kueue_queues`).

Checked as the CRDs' validation and Kueue's webhooks check them: a resource group's
flavors each name every covered resource, in the same order; a resource is covered by one
group only; a `borrowingLimit` or `lendingLimit` needs a cohort (a Cohort's: a parent); a
ClusterQueue's `lendingLimit` is at most its `nominalQuota`; quantities are Kubernetes
quantities. A flavor's nodes
are its ResourceFlavor's `nodeLabels` (a flavor without a ResourceFlavor in the input is an
error naming the field). Fields gangplan does not act on (`preemption`, `admissionChecks`,
`namespaceSelector`, `flavorFungibility`, ...) are noted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from solver.kube.fields import spec_note
from solver.kube.kueue import K8sKueueFlavor
from solver.kube.loader import RawObject
from solver.model import (
    KueueFlavorQuota,
    KueueQueue,
    KueueQuota,
    KueueResourceGroup,
    Queue,
)
from solver.quantity import QuantityError, to_int

__all__ = ["KUEUE_QUEUE_KINDS", "kueue_queue"]

KUEUE_QUEUE_KINDS = ("ClusterQueue", "Cohort", "LocalQueue")

_STRATEGIES = ("BestEffortFIFO", "StrictFIFO")


def _mapping(raw: RawObject, value: object, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise raw.error("must be a mapping", field=where)
    return value


def _name(raw: RawObject, value: object, where: str) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > 253:
        raise raw.error("must be a name (a string of at most 253 characters)", field=where)
    return value


def _amount(raw: RawObject, resource: str, value: object, where: str) -> int:
    try:
        return to_int(resource, value)
    except QuantityError as exc:
        raise raw.error(str(exc), field=where) from None


def _groups(
    raw: RawObject, groups: object, labels: Mapping[str, dict[str, str]], cohort: bool
) -> tuple[KueueResourceGroup, ...]:
    if groups is None:
        return ()
    if not isinstance(groups, list):
        raise raw.error("must be a list", field="spec.resourceGroups")
    out: list[KueueResourceGroup] = []
    covered_by: dict[str, int] = {}
    for gi, group in enumerate(groups):
        where = f"spec.resourceGroups[{gi}]"
        body = _mapping(raw, group, where)
        covered = body.get("coveredResources") or []
        if not isinstance(covered, list) or not all(isinstance(r, str) and r for r in covered):
            raise raw.error("must be a list of resource names", field=f"{where}.coveredResources")
        for r in covered:
            if r in covered_by:
                raise raw.error(
                    f"resource {r!r} is covered by resource groups {covered_by[r]} and {gi}",
                    field=f"{where}.coveredResources",
                )
            covered_by[r] = gi
        flavors = body.get("flavors") or []
        if not isinstance(flavors, list):
            raise raw.error("must be a list", field=f"{where}.flavors")
        read = []
        for fi, flavor in enumerate(flavors):
            fwhere = f"{where}.flavors[{fi}]"
            fbody = _mapping(raw, flavor, fwhere)
            name = _name(raw, fbody.get("name"), f"{fwhere}.name")
            if name is None:
                raise raw.error("missing required field", field=f"{fwhere}.name")
            if name not in labels:
                raise raw.error(f"ResourceFlavor {name!r} is not in the input", f"{fwhere}.name")
            resources = fbody.get("resources") or []
            if not isinstance(resources, list):
                raise raw.error("must be a list", field=f"{fwhere}.resources")
            names = [r.get("name") if isinstance(r, dict) else None for r in resources]
            if names != covered:  # the CRD: each flavor lists the covered resources, in order
                raise raw.error(
                    f"must name the covered resources {covered} in that order (names {names})",
                    field=f"{fwhere}.resources",
                )
            quotas = {}
            for ri, res in enumerate(resources):
                rwhere = f"{fwhere}.resources[{ri}]"
                r = str(res["name"])
                limits: dict[str, int | None] = {}
                for key in ("borrowingLimit", "lendingLimit"):
                    value = res.get(key)
                    limits[key] = (
                        None if value is None else _amount(raw, r, value, f"{rwhere}.{key}")
                    )
                parent = "parent" if raw.kind == "Cohort" else "cohort"
                for key, value in limits.items():  # the webhook's validateLimit
                    if value is not None and not cohort:
                        raise raw.error(f"must be nil when {parent} is empty", f"{rwhere}.{key}")
                nominal = _amount(raw, r, res.get("nominalQuota", 0), f"{rwhere}.nominalQuota")
                lend = limits["lendingLimit"]
                if raw.kind == "ClusterQueue" and lend is not None and lend > nominal:
                    raise raw.error(  # the webhook's validateLendingLimit
                        "must be less than or equal to the nominalQuota", f"{rwhere}.lendingLimit"
                    )
                quotas[r] = KueueQuota(
                    nominal=nominal,
                    borrowing_limit=limits["borrowingLimit"],
                    lending_limit=limits["lendingLimit"],
                )
            read.append(KueueFlavorQuota(name=name, node_labels=labels[name], resources=quotas))
        try:
            out.append(KueueResourceGroup(covered=tuple(covered), flavors=tuple(read)))
        except ValueError as exc:
            message = str(exc).splitlines()[-1].removeprefix("  Value error, ")
            raise raw.error(message, field=f"{where}.flavors") from None
    return tuple(out)


def _weight(raw: RawObject, spec: Mapping[str, Any]) -> float:
    fair = _mapping(raw, spec.get("fairSharing"), "spec.fairSharing")
    weight = fair.get("weight")
    if weight is None:
        return 1.0
    try:
        milli = to_int("cpu", weight)  # a quantity: "0.5", "2", "500m"
    except QuantityError as exc:
        raise raw.error(str(exc), field="spec.fairSharing.weight") from None
    if milli > 10**12:
        raise raw.error("must be at most 1e9", field="spec.fairSharing.weight")
    return milli / 1000


def kueue_queue(raw: RawObject, labels: Mapping[str, dict[str, str]], notes: list[str]) -> Queue:
    """One ClusterQueue, Cohort or LocalQueue as a `Queue`; `labels`: each ResourceFlavor's
    `nodeLabels`. A ClusterQueue or LocalQueue with a `stopPolicy` other than `None` is
    Closed (Kueue admits nothing into it)."""
    kind = raw.kind
    meta = _mapping(raw, raw.body.get("metadata"), "metadata")
    name = _name(raw, meta.get("name"), "metadata.name")
    if name is None:
        raise raw.error("missing required field", field="metadata.name")
    spec = _mapping(raw, raw.body.get("spec"), "spec")
    where = f"{raw.source}: document {raw.document}: {kind} {name}"
    if note := spec_note(f"kueue.x-k8s.io/{kind}", where, dict(spec)):
        notes.append(note)
    stop = spec.get("stopPolicy") or "None"
    state = "Open" if stop == "None" else "Closed"
    if kind == "LocalQueue":
        namespace = str(meta.get("namespace") or "default")
        cq = _name(raw, spec.get("clusterQueue"), "spec.clusterQueue")
        if cq is None:
            raise raw.error("missing required field", field="spec.clusterQueue")
        return Queue(
            name=f"{namespace}/{name}", parent=cq, state=state,
            kueue=KueueQueue(kind="LocalQueue"),
        )  # fmt: skip
    if kind == "ClusterQueue":
        parent_key = "cohortName" if "cohortName" in spec else "cohort"
    else:
        parent_key = "parentName" if "parentName" in spec else "parent"
    parent = _name(raw, spec.get(parent_key), f"spec.{parent_key}")
    strategy = spec.get("queueingStrategy") or "BestEffortFIFO"
    if strategy not in _STRATEGIES:
        raise raw.error(f"must be one of {', '.join(_STRATEGIES)}", field="spec.queueingStrategy")
    groups = _groups(raw, spec.get("resourceGroups"), labels, parent is not None)
    return Queue(
        name=name, parent=parent, state=state,
        kueue=KueueQueue(kind=kind, groups=groups, fair_weight=_weight(raw, spec), strategy=strategy),
    )  # fmt: skip


def kueue_ident(raw: RawObject) -> str:
    """The name an object is known by in duplicate checks: `<namespace>/<name>` for a
    LocalQueue, the name for the cluster-scoped kinds."""
    meta = raw.body.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    name = str(meta.get("name") or "")
    return f"{meta.get('namespace') or 'default'}/{name}" if raw.kind == "LocalQueue" else name


def kueue_tree(
    raws: list[RawObject], objects: list[tuple[RawObject, Any]], notes: list[str]
) -> tuple[dict[str, Queue], dict[str, RawObject]]:
    """Every ClusterQueue, Cohort and LocalQueue as a `Queue` (by name), and the object
    each came from; a cohort named but not given is added, empty, as Kueue makes it. A
    ClusterQueue and a Cohort may not share a name (one queue tree names both)."""
    labels: dict[str, dict[str, str]] = {}
    tainted: set[str] = set()  # quota flavors whose taints or tolerations are not read
    for _, k8s in objects:
        if isinstance(k8s, K8sKueueFlavor):
            labels[k8s.metadata.name] = dict(k8s.spec.node_labels)
            if not k8s.spec.topology_name and (k8s.spec.node_taints or k8s.spec.tolerations):
                tainted.add(k8s.metadata.name)
    queues: dict[str, Queue] = {}
    where: dict[str, RawObject] = {}
    named: set[str] = set()
    for raw in raws:
        queue = kueue_queue(raw, labels, notes)
        if queue.kueue is not None:
            named |= {f.name for g in queue.kueue.groups for f in g.flavors}
        if queue.name in queues:
            first = where[queue.name]
            raise raw.error(
                f"{raw.kind} {queue.name!r} has the name of {first.kind} {queue.name!r} "
                f"({first.source}: document {first.document}); gangplan's queue tree names both",
                field="metadata.name",
            )
        queues[queue.name], where[queue.name] = queue, raw
    for name, queue in sorted(queues.items()):
        parent = queue.parent
        assert queue.kueue is not None
        if parent is not None and parent not in queues:
            if queue.kueue.kind == "LocalQueue":
                notes.append(
                    f"LocalQueue {name}: ClusterQueue {parent} is not in the input; its jobs "
                    "wait, as Kueue's do"
                )
                del queues[name]
                continue
            queues[parent] = Queue(name=parent, kueue=KueueQueue(kind="Cohort"))
        elif parent is not None and (queues[parent].kueue or KueueQueue(kind="Cohort")).kind != (
            "ClusterQueue" if queue.kueue.kind == "LocalQueue" else "Cohort"
        ):
            wanted = "ClusterQueue" if queue.kueue.kind == "LocalQueue" else "Cohort"
            found = queues[parent].kueue
            raise where[name].error(
                f"{parent!r} is a {found.kind if found is not None else 'Volcano Queue'}, "
                f"not a {wanted}",
                field="spec.clusterQueue" if queue.kueue.kind == "LocalQueue" else "spec",
            )
    for flavor in sorted(tainted & named):
        notes.append(
            f"ResourceFlavor {flavor}: nodeTaints and tolerations not acted on for quota (Kueue "
            "passes over a flavor whose taints a pod does not tolerate; gangplan assigns it by "
            "node labels and quota; the nodes' own taints still apply)"
        )
    return dict(sorted(queues.items())), where
