"""The live cluster, read once: what `gangplan scheduler` would watch, as one `List`.

`gangplan dump --kubeconfig F` writes it (the file a user attaches to a bug report, or
replays offline with `-f`); `schedule`, `explain` and `plan` with `--kubeconfig` read it and
add the files given with `-f` on top, so "would this job fit, where, with whom evicted?" is
answered against the cluster's current state without submitting anything. Read-only: one
list per kind the cluster serves (found through discovery, as the scheduler finds them),
nothing written.

A file's object that the cluster already has (same group, kind, namespace and name)
replaces the cluster's, as `kubectl apply` would, and is noted.
"""

from __future__ import annotations

from typing import Any

from clients.scheduler.kinds import KINDS, Kind
from clients.scheduler.kube import ApiException, KubeApi, connect, path_of
from clients.scheduler.reflector import discover_kinds
from solver.errors import InputError
from solver.kube import RawObject, read_sources

__all__ = ["LIST_SOURCE", "cluster_list", "merged_sources", "read_cluster"]

Obj = dict[str, Any]
LIST_SOURCE = "cluster"
# server-kept bookkeeping gangplan never reads: left out of a dump (kubectl's own
# `get -o yaml` shows managedFields only on request)
_DROPPED_METADATA = ("managedFields",)


def read_cluster(kubeconfig: str | None, context: str | None = None) -> tuple[list[Obj], list[str]]:
    """Every object gangplan reads from the cluster (each with its apiVersion and kind) and
    notes for the kinds it does not serve or lets this user read; InputError when the API
    server cannot be reached or the kubeconfig is unusable."""
    try:
        api = connect(kubeconfig, context=context, pool=4)
    except Exception as err:  # the config loaders raise several types: one line for all
        raise InputError(f"--kubeconfig: {_first_line(err)}") from None
    try:
        return _read(api)
    finally:
        api.close()


def _read(api: KubeApi) -> tuple[list[Obj], list[str]]:
    try:
        served, notes = discover_kinds(api, KINDS)
    except ApiException as err:
        raise InputError(f"the API server refused discovery: {err.status} {err.reason}") from None
    except Exception as err:  # connection refused, DNS, TLS
        raise InputError(f"the API server cannot be reached: {_first_line(err)}") from None
    out: list[Obj] = []
    for kind, version in served.items():
        try:
            body = api.request("GET", path_of(kind, version), timeout=120.0)
        except ApiException as err:
            if err.status in (401, 403, 404):
                notes.append(f"{kind.label}: not readable ({err.status}): left out")
                continue
            raise InputError(f"listing {kind.label}: {err.status} {err.reason}") from None
        out.extend(_item(kind, version, o) for o in body.get("items") or [])
    return out, notes


def _item(kind: Kind, version: str, obj: Obj) -> Obj:
    """A list item as a standalone object: the API server leaves apiVersion and kind off
    the items of a list."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _DROPPED_METADATA}
    return {"apiVersion": kind.api_version(version), "kind": kind.kind, **obj, "metadata": meta}


def cluster_list(objects: list[Obj]) -> Obj:
    """The objects as one `v1 List` (what `gangplan dump` writes; `-f` reads it back)."""
    return {"apiVersion": "v1", "kind": "List", "metadata": {}, "items": objects}


def merged_sources(objects: list[Obj], files: list[str]) -> tuple[list[RawObject], list[str]]:
    """The cluster's objects, then the files' objects; a file object naming one the cluster
    has replaces it (noted)."""

    def key(raw: RawObject) -> tuple[str, str, str, str]:
        meta = raw.body.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        group = raw.api_version.rpartition("/")[0]
        return (group, raw.kind, str(meta.get("namespace") or "default"), str(meta.get("name")))

    cluster = [
        RawObject(
            source=LIST_SOURCE,
            document=f"{o['kind']}/{(o.get('metadata') or {}).get('namespace') or ''}/"
            f"{(o.get('metadata') or {}).get('name') or ''}",
            body=o,
        )
        for o in objects
    ]
    from_files = read_sources(files) if files else []
    replaced = {key(r) for r in from_files}
    kept = [r for r in cluster if key(r) not in replaced]
    dropped = {key(r) for r in cluster} & replaced
    notes = [
        f"{r.source}: {r.kind} {k[2]}/{k[3]} replaces the cluster's"
        for r in from_files
        if (k := key(r)) in dropped
    ]
    return [*kept, *from_files], notes


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0][:300] if text else type(err).__name__
