"""What every expansion shares: reading a workload's fields with errors that name them, and
a Pod made from a pod template the way a controller makes it."""

from __future__ import annotations

import builtins
import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from solver.kube.gangs import DEFAULT_NAMESPACE
from solver.kube.loader import RawObject

__all__ = ["Expansion", "Fields", "meta_value", "pod_from_template"]

MAX_REPLICAS = 100_000  # pods of one workload: a larger count is a typo, not a job


@dataclass
class Expansion:
    """The objects a workload's controller would create, and what was ignored."""

    objects: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    owns: Callable[[dict[str, Any]], bool] = lambda _pod: False  # a pod already made from it
    ungrouped: str = ""  # the note that its pods make no gang (dropped when Kueue makes one)


class Fields:
    """Typed reads of one workload's body; a wrong type is an error naming the field."""

    def __init__(self, raw: RawObject) -> None:
        self.raw = raw
        meta = raw.body.get("metadata")
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
            raise raw.error("missing required field", field="metadata.name")
        self.name: str = meta["name"]
        namespace = meta.get("namespace") or DEFAULT_NAMESPACE
        if not isinstance(namespace, str):
            raise raw.error("must be a string", field="metadata.namespace")
        self.namespace: str = namespace
        self.uid: str = str(meta.get("uid") or "")
        self.spec: dict[str, Any] = self.dict(raw.body.get("spec") or {}, "spec")

    def unread(
        self, read: set[str], item: builtins.dict[str, Any] | None = None, path: str = ""
    ) -> builtins.list[str]:
        """A note naming the fields an expansion does not read: of the spec, or of `item`
        at `path` (a task, a replicated job); none: no note."""
        ignored = sorted(set(self.spec if item is None else item) - read)
        if not ignored:
            return []
        where = f"{self.raw.api_version} {self.raw.kind} {self.namespace}/{self.name}"
        at = f" {path}:" if path else ""
        return [f"{where}:{at} ignored {', '.join(ignored)}"]

    def map(self, parent: dict[str, Any], path: str) -> dict[str, str]:
        value = parent.get(path.rsplit(".", 1)[-1]) or {}
        if not isinstance(value, dict):
            raise self.raw.error("must be a mapping", field=path)
        return {str(k): str(v) for k, v in value.items()}

    def dict(self, value: Any, path: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.raw.error("must be a mapping", field=path)
        return value

    def list(self, value: Any, path: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.raw.error("must be a list", field=path)
        return value

    def dicts(self, value: Any, path: str) -> builtins.list[builtins.dict[str, Any]]:
        """A list of mappings; each wrong item named by its index."""
        return [self.dict(v, f"{path}[{i}]") for i, v in enumerate(self.list(value, path))]

    def texts(self, value: Any, path: str) -> builtins.list[str]:
        return [self.text(v, f"{path}[{i}]") for i, v in enumerate(self.list(value, path))]

    def count(self, value: Any, path: str, default: int) -> int:
        """A replica count: a non-negative int32, at most MAX_REPLICAS."""
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.raw.error(f"must be an integer, got {value!r}", field=path)
        if not 0 <= value <= MAX_REPLICAS:
            raise self.raw.error(f"must be between 0 and {MAX_REPLICAS}, got {value}", field=path)
        return value

    def text(self, value: Any, path: str, default: str = "") -> str:
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.raw.error(f"must be a string, got {value!r}", field=path)
        return value


def pod_from_template(
    fields: Fields,
    template: Any,
    path: str,
    name: str,
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    scheduler_name: str = "",
) -> dict[str, Any]:
    """A pending Pod from `template` (at `path` in the workload): the template's labels and
    annotations with the controller's added, its spec as written, the workload's namespace,
    and `scheduler_name` unless the template names one."""
    if template is None:
        raise fields.raw.error("missing required field", field=path)
    template = fields.dict(template, path)
    meta = fields.dict(template.get("metadata") or {}, f"{path}.metadata")
    spec = fields.dict(template.get("spec"), f"{path}.spec")
    fields.text(spec.get("schedulerName"), f"{path}.spec.schedulerName")  # expanders read it
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": fields.namespace,
            "labels": {**fields.map(meta, f"{path}.metadata.labels"), **(labels or {})},
            "annotations": {
                **fields.map(meta, f"{path}.metadata.annotations"),
                **(annotations or {}),
            },
        },
        "spec": copy.deepcopy(spec),
    }
    if scheduler_name and not body["spec"].get("schedulerName"):
        body["spec"]["schedulerName"] = scheduler_name
    return body


def meta_value(body: dict[str, Any], where: str, key: str) -> object:
    """`metadata.<where>[key]` of an object as read (`where`: labels or annotations)."""
    meta = body.get("metadata")
    values = meta.get(where) if isinstance(meta, dict) else None
    return values.get(key) if isinstance(values, dict) else None
