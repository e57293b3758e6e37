"""Bind a placed gang: annotations first, then `pods/binding` for each member, concurrently.

A gang binds only as a whole: before any write, every member must still be pending in the
mirror and every target node still there (a node deleted between decision and bind stops
the gang: the API server would accept a binding to a missing node, and PodGC would then
delete the pod). When one bind fails (`409`: the pod is gone, already bound or terminating;
`404`: it is deleted), the members not yet started are not bound; those already bound stay
bound and count as running members next cycle, as Volcano and coscheduling count them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from clients.scheduler.kube import STRATEGIC_PATCH, ApiException, KubeApi
from clients.scheduler.mirror import Mirror, ObjKey

__all__ = ["Assignment", "BindResult", "Binder"]


@dataclass(frozen=True)
class Assignment:
    pod: ObjKey
    node: str
    annotations: dict[str, str] = field(default_factory=dict)


@dataclass
class BindResult:
    bound: list[Assignment] = field(default_factory=list)
    failed: list[tuple[Assignment, str]] = field(default_factory=list)  # (what, reason)
    skipped: list[Assignment] = field(default_factory=list)
    refused: str = ""  # why the gang was not started at all


class Binder:
    def __init__(self, api: KubeApi, mirror: Mirror, workers: int = 16) -> None:
        self.api = api
        self.mirror = mirror
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bind")

    def close(self) -> None:
        self.pool.shutdown(wait=True)

    def precheck(self, gang: list[Assignment]) -> str:
        """Why this gang must not be bound now ("" when it may)."""
        nodes = self.mirror.node_names()
        for a in gang:
            if a.node not in nodes:
                return f"node {a.node} is gone"
            pod = self.mirror.pod(a.pod)
            if pod is None:
                return f"pod {a.pod[0]}/{a.pod[1]} is gone"
            if (pod.get("spec") or {}).get("nodeName") or (pod.get("metadata") or {}).get(
                "deletionTimestamp"
            ):
                return f"pod {a.pod[0]}/{a.pod[1]} is no longer pending"
        return ""

    def bind_gangs(
        self, gangs: list[list[Assignment]], on_bound: Callable[[Assignment], None]
    ) -> list[BindResult]:
        """Bind every gang (each all-or-stop); results in order."""
        results = [BindResult() for _ in gangs]
        futures = []
        stops = [threading.Event() for _ in gangs]
        lock = threading.Lock()
        for i, gang in enumerate(gangs):
            results[i].refused = self.precheck(gang)
            if results[i].refused:
                continue
            for a in gang:
                futures.append(self.pool.submit(self._one, a, stops[i], results[i], lock, on_bound))
        for f in futures:
            f.result()
        return results

    def _one(
        self,
        a: Assignment,
        stop: threading.Event,
        result: BindResult,
        lock: threading.Lock,
        on_bound: Callable[[Assignment], None],
    ) -> None:
        if stop.is_set():
            with lock:
                result.skipped.append(a)
            return
        ns, name = a.pod
        base = f"/api/v1/namespaces/{ns}/pods/{name}"
        try:
            if a.annotations:
                patch = {"metadata": {"annotations": a.annotations}}
                self.api.request("PATCH", base, body=patch, content_type=STRATEGIC_PATCH)
            body = {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": name, "namespace": ns},
                "target": {"apiVersion": "v1", "kind": "Node", "name": a.node},
            }
            self.api.request("POST", f"{base}/binding", body=body)
        except ApiException as err:
            stop.set()
            with lock:
                result.failed.append((a, _reason(err.status)))
            return
        except Exception:
            stop.set()
            with lock:
                result.failed.append((a, "error"))
            return
        on_bound(a)
        with lock:
            result.bound.append(a)


def _reason(status: int | None) -> str:
    return {409: "conflict", 404: "not_found", 429: "throttled"}.get(status or 0, f"http_{status}")
