"""A fake Kubernetes API server that speaks the real HTTP API, for the scheduler front end's
tests, its benchmark and the README's runnable walk-through (no API server installs on the
machines this project is built on).

    with FakeApiServer(default_resources()) as api:
        api.store.create("", "nodes", "", node)      # or load(api.store, objects)
        ...  # point a kubeconfig (kubeconfig_for(api.url)) or kubernetes.client at api.url

What it implements is listed in `clients.kubefake.http` and `clients.kubefake.store`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from clients.kubefake.http import FakeApiServer
from clients.kubefake.store import ApiError, Resource, Store
from clients.scheduler.kinds import KINDS, Kind

__all__ = [
    "ApiError",
    "FakeApiServer",
    "Resource",
    "Store",
    "default_resources",
    "kubeconfig_for",
    "load",
]

EVENTS = Kind("", ("v1",), "events", "Event", True)
CONFIG_MAPS = Kind("", ("v1",), "configmaps", "ConfigMap", True)
LEASES = Kind("coordination.k8s.io", ("v1",), "leases", "Lease", True)  # leader election
BUDGETS = Kind("policy", ("v1",), "poddisruptionbudgets", "PodDisruptionBudget", True)


def default_resources(groups: Iterable[str] | None = None) -> list[Resource]:
    """Core kinds and events, plus every kind gangplan reads whose group is in `groups`
    (None: all of them), each at its first listed version."""
    wanted = None if groups is None else set(groups) | {""}
    out = [Resource(k, "v1") for k in (EVENTS, CONFIG_MAPS, LEASES, BUDGETS)]
    for kind in KINDS:
        if (
            (
                kind.group == ""
                or (kind.group == "scheduling.k8s.io" and kind.plural == "priorityclasses")
            )
            or wanted is None
            or kind.group in wanted
        ):
            out.append(Resource(kind, kind.versions[0]))
    return out


def load(store: Store, objects: Iterable[dict[str, Any]]) -> list[str]:
    """Create each object in the store by its apiVersion and kind; returns notes for objects
    of kinds the fake does not serve."""
    by_kind = {(r.api_version, r.kind.kind): r for r in store.resources.values()}
    notes = []
    for obj in objects:
        res = by_kind.get((str(obj.get("apiVersion")), str(obj.get("kind"))))
        if res is None:
            notes.append(f"not served by the fake: {obj.get('apiVersion')} {obj.get('kind')}")
            continue
        ns = (obj.get("metadata") or {}).get("namespace") or "default"
        store.create(res.kind.group, res.kind.plural, ns if res.kind.namespaced else "", obj)
    return notes


def kubeconfig_for(url: str) -> dict[str, Any]:
    """A kubeconfig (as a dict) pointing at the fake."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "fake", "cluster": {"server": url}}],
        "users": [{"name": "fake", "user": {"token": "fake"}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
        "current-context": "fake",
    }
