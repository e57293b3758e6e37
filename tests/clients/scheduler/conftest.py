"""The front end against the fake API server: a fluent builder for cluster objects, a
running fake, and a started `SchedulerService` (embedded gangplan) pointed at it."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config as kc

from clients.kubefake import FakeApiServer, default_resources, kubeconfig_for, load
from clients.scheduler import CycleOptions, KubeApi, SchedulerService

Obj = dict[str, Any]
GPU = "nvidia.com/gpu"


def node(name: str, gpus: int = 4, cpu: str = "32", **labels: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {
            "allocatable": {"cpu": cpu, "memory": "256Gi", GPU: str(gpus), "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(
    name: str,
    gpus: int = 1,
    *,
    scheduler: str = "gangplan",
    gang: str | None = None,
    node_name: str | None = None,
    ns: str = "default",
    cpu: str = "1",
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    terminating: bool = False,
) -> Obj:
    meta: Obj = {"name": name, "namespace": ns, "labels": dict(labels or {})}
    if gang:
        meta["labels"]["pod-group.scheduling.sigs.k8s.io"] = gang
    if annotations:
        meta["annotations"] = annotations
    if terminating:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    requests = {"cpu": cpu}
    if gpus:
        requests[GPU] = str(gpus)
    spec: Obj = {
        "schedulerName": scheduler,
        "containers": [
            {
                "name": "c",
                "image": "x",
                "resources": {"requests": requests, "limits": {GPU: str(gpus)} if gpus else {}},
            }
        ],
    }
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": "Running" if node_name else "Pending"},
    }


def pod_group(name: str, min_member: int, ns: str = "default") -> Obj:
    return {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"minMember": min_member},
    }


def gang(name: str, size: int, gpus: int = 1, **kw: Any) -> list[Obj]:
    return [
        pod_group(name, size),
        *(pod(f"{name}-{i}", gpus, gang=name, **kw) for i in range(size)),
    ]


def wait_until(check: Callable[[], Any], timeout: float = 10.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what or check}")


@dataclass
class Harness:
    api: FakeApiServer
    services: list[SchedulerService] = field(default_factory=list)

    def create(self, *objs: Obj | list[Obj]) -> None:
        flat: list[Obj] = []
        for o in objs:
            flat.extend(o if isinstance(o, list) else [o])
        assert load(self.api.store, flat) == []

    def kube(self) -> KubeApi:
        conf = k8s.Configuration()
        kc.load_kube_config_from_dict(kubeconfig_for(self.api.url), client_configuration=conf)
        conf.connection_pool_maxsize = 64
        return KubeApi(k8s.ApiClient(conf))

    def scheduler(self, **options: Any) -> SchedulerService:
        service = SchedulerService(
            self.kube(), CycleOptions(**options), http_port=0, bind_workers=8
        )
        service.start()
        self.services.append(service)
        wait_until(service.ready.is_set, what="scheduler ready")
        return service

    def pods(self) -> dict[str, Obj]:
        items, _ = self.api.store.list_objects("", "pods", None)
        return {p["metadata"]["name"]: p for p in items}

    def bound(self) -> dict[str, str]:
        return {
            n: p["spec"]["nodeName"] for n, p in self.pods().items() if p["spec"].get("nodeName")
        }

    def condition(self, name: str) -> Obj | None:
        conditions = self.pods()[name].get("status", {}).get("conditions") or []
        return next((c for c in conditions if c["type"] == "PodScheduled"), None)

    def events(self, reason: str | None = None) -> list[Obj]:
        items, _ = self.api.store.list_objects("", "events", None)
        return [e for e in items if reason is None or e["reason"] == reason]

    def successful_binds(self) -> list[str]:
        return [p for p, _, code, _ in self.api.store.binds if code == 201]


@pytest.fixture
def cluster() -> Iterator[Harness]:
    api = FakeApiServer(default_resources()).start()
    harness = Harness(api)
    yield harness
    for s in harness.services:
        s.stop(timeout=5)
    api.stop()
