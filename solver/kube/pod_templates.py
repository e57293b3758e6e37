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

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from solver.kube.kueue import check_kueue_pod
from solver.kube.loader import RawObject
from solver.kube.objects import K8sPod, Metadata
from solver.kube.validate import validate
from solver.model import Pod

__all__ = ["PodTemplates", "TemplateKey"]

VOLATILE = frozenset(
    {"name", "uid", "creationTimestamp", "resourceVersion", "generateName", "managedFields"}
)
"""Metadata a controller's pods do not share, and gangplan reads only name and creation time of."""


TemplateKey = tuple[str, str]


def template_keys(body: Any) -> tuple[TemplateKey, str] | None:
    """(the pod's content but its `VOLATILE` metadata, its content but its metadata); None:
    not a mapping with metadata. `repr` of the items in their order: equal keys are equal
    content (a body in another key order is merely read in full)."""
    meta = body.get("metadata") if isinstance(body, dict) else None
    if not isinstance(meta, dict):
        return None
    rest = repr([(k, v) for k, v in body.items() if k != "metadata"])
    own = repr([(k, v) for k, v in meta.items() if k not in VOLATILE])
    return (own, rest), rest


class PodTemplates:
    """The templates of one read (`build_model`)."""

    def __init__(self) -> None:
        self._parsed: dict[TemplateKey, K8sPod] = {}  # by the content but volatile metadata
        self._specs: dict[str, K8sPod] = {}  # by the content but the metadata
        self._pods: dict[tuple[TemplateKey, str], Pod] = {}

    def parse(self, raw: RawObject) -> tuple[K8sPod, TemplateKey | None]:
        """The pod validated (or its template's copy), and its template key. Pods that share
        all but their metadata (an Indexed Job's, a StatefulSet's: an index label each)
        share the validated spec, their metadata validated one by one."""
        keys = template_keys(raw.body)
        if keys is None:
            return self._validate(raw), None
        key, rest = keys
        meta = raw.body["metadata"]
        name, created = meta.get("name"), meta.get("creationTimestamp")
        found = self._parsed.get(key)
        named = isinstance(name, str) and bool(name)
        if found is not None and named and (created is None or isinstance(created, str)):
            own = found.metadata.model_copy(update={"name": name, "creation_timestamp": created})
            return found.model_copy(update={"metadata": own}), key
        spec = self._specs.get(rest)
        parsed = None
        if spec is not None:
            try:
                metadata = Metadata.model_validate(meta)
            except ValidationError:
                pass  # read in full below, for the error's words and field
            else:
                parsed = spec.model_copy(update={"metadata": metadata})
                check_kueue_pod(raw, metadata.annotations)
        if parsed is None:
            parsed = self._validate(raw)
            self._specs[rest] = parsed
        self._parsed[key] = parsed
        return parsed, key

    @staticmethod
    def _validate(raw: RawObject) -> K8sPod:
        parsed = validate(K8sPod, raw)
        check_kueue_pod(raw, parsed.metadata.annotations)
        return parsed

    def pod(
        self, key: TemplateKey | None, gang_id: str, k8s: K8sPod, convert: Callable[[], Pod]
    ) -> Pod:
        """The model Pod: `convert()`'s, or the template's under this pod's name and time."""
        if key is None:
            return convert()
        found = self._pods.get((key, gang_id))
        if found is not None:
            return found.replaced(name=k8s.metadata.name, created=k8s.metadata.creation_timestamp)
        pod = self._pods[(key, gang_id)] = convert()
        return pod
