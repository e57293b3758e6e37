"""NodeResourcesFit's filter, from kube-scheduler's own table test, on both engines.

pkg/scheduler/framework/plugins/noderesources/fit_test.go, TestEnoughRequests and
TestNotEnoughRequests: one node (allocatable 10m CPU, 20 bytes of memory, 32 pods, 5
example.com/aaa, 20 ephemeral-storage, 5 hugepages-2Mi) already running one pod, and a pod
that fits or lacks the named resources. The pod's request is kube-scheduler's
(`solver/kube/convert.py` `effective_requests`: containers, init containers, sidecars,
overhead), the running pod's too.
"""

from __future__ import annotations

from typing import Any

import pytest

from solver import schedule
from tests.builders import model

ENGINES = ("greedy", "cpsat")
AAA, BBB = "example.com/aaa", "example.com/bbb"
K8S_A, K8S_B = "kubernetes.io/something", "subdomain.kubernetes.io/something"
HUGE = "hugepages-2Mi"
ALLOCATABLE = {
    "cpu": "10m",
    "memory": "20",
    "pods": "32",
    AAA: "5",
    "ephemeral-storage": "20",
    HUGE: "5",
}

Requests = dict[str, Any]


def r(cpu: int = 0, memory: int = 0, **scalar: int) -> Requests:
    """A container's requests as `framework.Resource{MilliCPU, Memory, ScalarResources}`;
    scalar names: aaa, bbb, k8s_a, k8s_b, huge."""
    names = {"aaa": AAA, "bbb": BBB, "k8s_a": K8S_A, "k8s_b": K8S_B, "huge": HUGE}
    out: Requests = {"cpu": f"{cpu}m", "memory": str(memory)}
    out.update({names[k]: str(v) for k, v in scalar.items()})
    return out


def containers(*requests: Requests, sidecar: bool = False) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, req in enumerate(requests):
        container: dict[str, Any] = {"name": f"c{i}", "resources": {"requests": req}}
        if sidecar:
            container["restartPolicy"] = "Always"
        out.append(container)
    return out


def pod_of(name: str, spec: dict[str, Any], node: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "main"}], **spec},
    }
    if node:
        body["spec"]["nodeName"] = node
        body["status"] = {"phase": "Running"}
    return body


def app(*requests: Requests) -> dict[str, Any]:
    return {"containers": containers(*requests)}


def init(regular: list[Requests], *inits: Requests) -> dict[str, Any]:
    return {"containers": containers(*regular), "initContainers": containers(*inits)}


# (pod spec, running pod's spec, the resources the pod lacks)
Case = tuple[dict[str, Any], dict[str, Any], list[str]]
ENOUGH: dict[str, Case] = {
    # TestEnoughRequests
    "no resources requested always fits": ({}, app(r(10, 20)), []),
    "too many resources fails": (app(r(1, 1)), app(r(10, 20)), ["cpu", "memory"]),
    "too many resources fails due to init container cpu": (
        init([r(1, 1)], r(3, 1)), app(r(8, 19)), ["cpu"],
    ),
    "too many resources fails due to highest init container cpu": (
        init([r(1, 1)], r(3, 1), r(2, 1)), app(r(8, 19)), ["cpu"],
    ),
    "too many resources fails due to init container memory": (
        init([r(1, 1)], r(1, 3)), app(r(9, 19)), ["memory"],
    ),
    "too many resources fails due to highest init container memory": (
        init([r(1, 1)], r(1, 3), r(1, 2)), app(r(9, 19)), ["memory"],
    ),
    "init container fits because it's the max, not sum, of containers and init containers": (
        init([r(1, 1)], r(1, 1)), app(r(9, 19)), [],
    ),
    "multiple init containers fit because it's the max, not sum, of containers and init "
    "containers": (init([r(1, 1)], r(1, 1), r(1, 1)), app(r(9, 19)), []),
    "both resources fit": (app(r(1, 1)), app(r(5, 5)), []),
    "one resource memory fits": (app(r(2, 1)), app(r(9, 5)), ["cpu"]),
    "one resource cpu fits": (app(r(1, 2)), app(r(5, 19)), ["memory"]),
    "equal edge case": (app(r(5, 1)), app(r(5, 19)), []),
    "equal edge case for init container": (init([r(4, 1)], r(5, 1)), app(r(5, 19)), []),
    "extended resource fits": (app(r(aaa=1)), app(r()), []),
    "extended resource fits for init container": (init([r()], r(aaa=1)), app(r()), []),
    "extended resource capacity enforced": (app(r(1, 1, aaa=10)), app(r(aaa=0)), [AAA]),
    "extended resource capacity enforced for init container": (
        init([r()], r(1, 1, aaa=10)), app(r(aaa=0)), [AAA],
    ),
    "extended resource allocatable enforced": (app(r(1, 1, aaa=1)), app(r(aaa=5)), [AAA]),
    "extended resource allocatable enforced for init container": (
        init([r()], r(1, 1, aaa=1)), app(r(aaa=5)), [AAA],
    ),
    "extended resource allocatable enforced for multiple containers": (
        app(r(1, 1, aaa=3), r(1, 1, aaa=3)), app(r(aaa=2)), [AAA],
    ),
    "extended resource allocatable admits multiple init containers": (
        init([r()], r(1, 1, aaa=3), r(1, 1, aaa=3)), app(r(aaa=2)), [],
    ),
    "extended resource allocatable enforced for multiple init containers": (
        init([r()], r(1, 1, aaa=6), r(1, 1, aaa=3)), app(r(aaa=2)), [AAA],
    ),
    "extended resource allocatable enforced for unknown resource": (
        app(r(1, 1, bbb=1)), app(r()), [BBB],
    ),
    "extended resource allocatable enforced for unknown resource for init container": (
        init([r()], r(1, 1, bbb=1)), app(r()), [BBB],
    ),
    "kubernetes.io resource capacity enforced": (app(r(1, 1, k8s_a=10)), app(r()), [K8S_A]),
    "kubernetes.io resource capacity enforced for init container": (
        init([r()], r(1, 1, k8s_b=10)), app(r()), [K8S_B],
    ),
    "hugepages resource capacity enforced": (app(r(1, 1, huge=10)), app(r(huge=0)), [HUGE]),
    "hugepages resource capacity enforced for init container": (
        init([r()], r(1, 1, huge=10)), app(r(huge=0)), [HUGE],
    ),
    "hugepages resource allocatable enforced for multiple containers": (
        app(r(1, 1, huge=3), r(1, 1, huge=3)), app(r(huge=2)), [HUGE],
    ),
    "resources + pod overhead fits": (
        {**app(r(1, 1)), "overhead": {"cpu": "3m", "memory": "13"}}, app(r(5, 5)), [],
    ),
    "requests + overhead does not fit for memory": (
        {**app(r(1, 1)), "overhead": {"cpu": "1m", "memory": "15"}}, app(r(5, 5)), ["memory"],
    ),
    "skip checking extended resource request with quantity zero via resource groups": (
        app(r(1, 1, aaa=0)), app(r(aaa=6)), [],
    ),
    "skip checking resource request with quantity zero": (
        app(r(aaa=1)), app(r(20, 30, aaa=1)), [],
    ),
    # Not translated: "skip checking ignored extended resource" and "... via resource
    # groups" (NodeResourcesFitArgs.ignoredResources/ignoredResourceGroups, a kube-scheduler
    # profile argument Volcano does not set).
    #
    # Sidecars (KEP-753, component-helpers PodRequests; TestPodResourceRequests in
    # tests/kube/test_loader.py checks the sums): a sidecar keeps running beside the app
    # containers and beside the init containers declared after it.
    "gangplan: a sidecar adds to the app containers": (
        {"containers": containers(r(3, 1)), "initContainers": containers(r(3, 1), sidecar=True)},
        app(r(5, 5)), ["cpu"],
    ),
    "gangplan: an init container after a sidecar runs beside it": (
        {
            "containers": containers(r(1, 1)),
            "initContainers": [*containers(r(2, 1), sidecar=True), *containers(r(3, 1))],
        },
        app(r(6, 5)), ["cpu"],
    ),
    "gangplan: an init container before a sidecar runs alone": (
        {
            "containers": containers(r(1, 1)),
            "initContainers": [*containers(r(3, 1)), *containers(r(2, 1), sidecar=True)],
        },
        app(r(7, 5)), [],
    ),
}  # fmt: skip


def assert_fit(spec: dict[str, Any], running: dict[str, Any], lacking: list[str]) -> None:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "node"},
        "status": {"allocatable": ALLOCATABLE},
    }
    cluster = model(node, pod_of("existing", running, node="node"), pod_of("p", spec))
    for engine in ENGINES:
        placement = schedule(cluster, engine=engine, workers=1).placements["default/p"]
        if not lacking:
            assert placement.node == "node", (engine, placement.reason)
        else:
            assert placement.node is None, engine
            for resource in lacking:
                assert f"Insufficient {resource}" in placement.reason, (engine, placement.reason)


@pytest.mark.parametrize("case", ENOUGH.values(), ids=ENOUGH.keys())
def test_kube_enough_requests(case: Case) -> None:
    assert_fit(*case)


def test_kube_not_enough_requests_too_many_pods() -> None:
    # TestNotEnoughRequests: "even for equal edge case, predicate fails when there's no
    # space for additional pod due to init container" (allocatable pods 1, one running)
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "node"},
        "status": {"allocatable": {"cpu": "10m", "memory": "20", "pods": "1"}},
    }
    running = pod_of("existing", app(r(5, 19)), node="node")
    cluster = model(node, running, pod_of("p", init([r(5, 1)], r(5, 1))))
    for engine in ENGINES:
        placement = schedule(cluster, engine=engine, workers=1).placements["default/p"]
        # upstream's reason reads "Too many pods"; gangplan counts it as "Insufficient pods"
        assert placement.node is None and " pods" in placement.reason, engine
