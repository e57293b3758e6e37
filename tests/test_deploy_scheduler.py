"""deploy/scheduler/: `gangplan scheduler` as two replicas with leader election, and the
least privilege it needs. The manifests are valid against the Kubernetes schemas and agree
with each other and with the command line; the RBAC rules are compared, both ways, with
every request the scheduler makes against the fake API server in a scenario that takes
every path that writes (a bind, GPU-sharing annotations, a waiting pod's condition and
Events, the status of each kind of PodGroup that has one, a preemption's eviction and
nomination, the Lease): nothing it calls is
missing, nothing granted goes unused."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import typer
import yaml

from clients.cli import app
from clients.kubefake import FakeApiServer, default_resources, load
from clients.scheduler import CycleOptions, SchedulerService
from clients.scheduler.kinds import KINDS
from clients.scheduler.leader import LeaseOptions
from solver.kube import read_sources
from tests.clients.scheduler.conftest import Harness, gang, node, pod, wait_until

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy" / "scheduler"
KUBERNETES = ("1.30.0", kubernetes_validate.latest_version())
AGENT = "rbac-under-test"


def _docs() -> dict[str, dict[str, Any]]:
    listed = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())["resources"]
    assert set(listed) == {p.name for p in DEPLOY.glob("*.yaml")} - {"kustomization.yaml"}
    out = {}
    for name in listed:
        (doc,) = yaml.safe_load_all((DEPLOY / name).read_text())
        out[doc["kind"]] = doc
    return out


DOCS = _docs()
POD = DOCS["Deployment"]["spec"]["template"]["spec"]
(CONTAINER,) = POD["containers"]


@pytest.mark.parametrize("version", KUBERNETES)
@pytest.mark.parametrize("kind", sorted(DOCS))
def test_the_manifests_are_valid_kubernetes(kind: str, version: str) -> None:
    kubernetes_validate.validate(DOCS[kind], version, strict=True)


def test_the_names_agree() -> None:
    account = DOCS["ServiceAccount"]["metadata"]["name"]
    assert POD["serviceAccountName"] == account
    for binding, role in (("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")):
        assert DOCS[binding]["roleRef"]["name"] == DOCS[role]["metadata"]["name"]
        assert [s["name"] for s in DOCS[binding]["subjects"]] == [account]
    # the Lease the replicas hold is the one the Role names (the flag's default)
    named = [r for r in DOCS["Role"]["rules"] if r.get("resourceNames")]
    assert [r["resourceNames"] for r in named] == [[LeaseOptions().name]]
    assert DOCS["Deployment"]["spec"]["replicas"] >= 2
    for doc in DOCS.values():  # namespace-agnostic, as deploy/
        assert "namespace" not in doc["metadata"]


def test_the_container_runs_a_valid_scheduler_command_line_probed_on_its_port() -> None:
    assert CONTAINER["command"] == ["gangplan", "scheduler"]
    command = typer.main.get_command(app)
    scheduler = command.commands["scheduler"]  # type: ignore[attr-defined]
    ctx = scheduler.make_context("scheduler", list(CONTAINER["args"]))  # parses, runs nothing
    assert ctx.params["leader_elect"] is True
    assert ctx.params["http_host"] == "0.0.0.0"  # the kubelet probes the pod's IP
    (port,) = CONTAINER["ports"]
    assert port["containerPort"] == ctx.params["http_port"]
    for probe, path in (
        ("startupProbe", "/healthz"),
        ("livenessProbe", "/healthz"),
        ("readinessProbe", "/readyz"),
    ):
        assert CONTAINER[probe]["httpGet"] == {"path": path, "port": port["name"]}
    context = CONTAINER["securityContext"]
    assert context["readOnlyRootFilesystem"] and not context["allowPrivilegeEscalation"]


def _granted() -> set[tuple[str, str, str]]:
    out = set()
    for doc in (DOCS["ClusterRole"], DOCS["Role"]):
        for rule in doc["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    out.update((verb, group, resource) for verb in rule["verbs"])
    return out


def _scenario(api: FakeApiServer) -> set[tuple[str, str, str]]:
    """Every request the scheduler makes while it takes each writing path once."""
    harness = Harness(api)
    shares = [raw.body for raw in read_sources([str(ROOT / "examples/gpu-sharing/shares.yaml")])]
    volcano = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "vc", "namespace": "default"},
        "spec": {"minMember": 2},
    }
    too_big = [
        pod(f"vc-{i}", 16, annotations={"scheduling.k8s.io/group-name": "vc"}) for i in range(2)
    ]
    x_group = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "xg", "namespace": "default"},
        "spec": {"minMember": 1},
    }
    x_pod = pod("xg-0", labels={"scheduling.x-k8s.io/pod-group": "xg"})
    assert load(api.store, [*shares, node("n1"), node("n2")]) == []
    harness.create(gang("g", 2), volcano, *too_big, x_group, x_pod)
    return _run(harness, {"g-0", "g-1", "xg-0", "kai-0"}, statuses=True)


def _preemption(api: FakeApiServer) -> set[tuple[str, str, str]]:
    """A preemption: `high` fits only where `low` runs, and evicts it."""
    harness = Harness(api)
    low = pod("low", 8, scheduler="default-scheduler", node_name="big")
    high = pod("high", 8)
    low["spec"]["priority"], high["spec"]["priority"] = 0, 1000
    harness.create(node("big", gpus=8), low, high)
    return _run(harness, {"high"}, statuses=False)


def _run(harness: Harness, bound: set[str], *, statuses: bool) -> set[tuple[str, str, str]]:
    api = harness.api
    kube = harness.kube()
    kube.api_client.user_agent = AGENT
    lease = LeaseOptions(
        namespace="gangplan", lease_duration=3.0, renew_deadline=1.0, retry_period=0.2
    )
    service = SchedulerService(
        kube,
        CycleOptions(scheduler_names=frozenset({"gangplan", "default-scheduler"}), preempt=True),
        http_port=None,
        bind_workers=4,
        lease=lease,
        identity=AGENT,
    )
    service.start()
    try:
        wait_until(lambda: bound <= set(harness.bound()), what="binds")
        if not statuses:
            return _audited(api)
        wait_until(lambda: harness.condition("vc-0"), what="a waiting pod's condition")

        def written() -> bool:
            return all(
                (api.store.get(group, "podgroups", "default", name).get("status") or {})
                for group, name in (
                    ("scheduling.volcano.sh", "vc"),
                    ("scheduling.sigs.k8s.io", "g"),
                    ("scheduling.x-k8s.io", "xg"),
                )
            )

        wait_until(written, what="every PodGroup's status")
        time.sleep(2 * lease.retry_period)  # a renewal of the Lease
    finally:
        service.stop(timeout=5)  # a release of the Lease
    return _audited(api)


def _audited(api: FakeApiServer) -> set[tuple[str, str, str]]:
    return {
        (verb, group, resource)
        for (agent, verb, group, resource) in api.store.audit
        if agent == AGENT
    }


def test_the_rbac_grants_exactly_what_the_scheduler_calls() -> None:
    with FakeApiServer(default_resources()) as api:
        used = _scenario(api)
    with FakeApiServer(default_resources()) as api:
        used |= _preemption(api)
    granted = _granted()
    assert used - granted == set(), "called but not granted"
    assert granted - used == set(), "granted but never called"
    # every kind gangplan reads is listed and watched (the fake serves them all)
    for kind in KINDS:
        assert ("watch", kind.group, kind.plural) in used
