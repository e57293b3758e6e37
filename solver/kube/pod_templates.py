"""Pods read once per template within one read: a controller's pods (a gang's members, a
Deployment's replicas) differ only in their names, uids and creation times, so each
distinct rest of a pod is validated and converted once, and the others are copies of it
under their own name and creation time.

A copy is taken only when its own name is a non-empty string and its creation time a
string (or absent): anything else is read in full, so every error names the pod that has
it. The converted Pod is shared per template *and* gang, since the gang a pod joins can
depend on its name (a pod without a gang is a gang of its own).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from solver.kube.kueue import check_kueue_pod
from solver.kube.loader import RawObject
from solver.kube.objects import K8sPod
from solver.kube.validate import validate
from solver.model import Pod

__all__ = ["PodTemplates"]

VOLATILE = frozenset(
    {"name", "uid", "creationTimestamp", "resourceVersion", "generateName", "managedFields"}
)
"""Metadata a controller's pods do not share, and gangplan reads only name and creation time of."""


def template_key(body: Any) -> str | None:
    """The pod's content but its `VOLATILE` metadata (None: not a mapping with metadata)."""
    meta = body.get("metadata") if isinstance(body, dict) else None
    if not isinstance(meta, dict):
        return None
    rest = {k: v for k, v in meta.items() if k not in VOLATILE}
    others = {k: v for k, v in body.items() if k != "metadata"}
    try:
        return json.dumps([rest, others], sort_keys=True, default=repr)
    except (TypeError, ValueError):  # keys of mixed types: read in full
        return None


class PodTemplates:
    """The templates of one read (`build_model`)."""

    def __init__(self) -> None:
        self._parsed: dict[str, K8sPod] = {}
        self._pods: dict[tuple[str, str], Pod] = {}

    def parse(self, raw: RawObject) -> tuple[K8sPod, str | None]:
        """The pod validated (or its template's copy), and its template key."""
        key = template_key(raw.body)
        found = self._parsed.get(key) if key is not None else None
        meta = raw.body["metadata"] if key is not None else {}
        name, created = meta.get("name"), meta.get("creationTimestamp")
        named = isinstance(name, str) and bool(name)
        if found is not None and named and (created is None or isinstance(created, str)):
            own = found.metadata.model_copy(update={"name": name, "creation_timestamp": created})
            return found.model_copy(update={"metadata": own}), key
        parsed = validate(K8sPod, raw)
        check_kueue_pod(raw, parsed.metadata.annotations)
        if key is not None:
            self._parsed[key] = parsed
        return parsed, key

    def pod(self, key: str | None, gang_id: str, k8s: K8sPod, convert: Callable[[], Pod]) -> Pod:
        """The model Pod: `convert()`'s, or the template's under this pod's name and time."""
        if key is None:
            return convert()
        found = self._pods.get((key, gang_id))
        if found is not None:
            return found.replaced(name=k8s.metadata.name, created=k8s.metadata.creation_timestamp)
        pod = self._pods[(key, gang_id)] = convert()
        return pod
