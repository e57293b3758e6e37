"""The scheduler as a service: bad objects from the cluster, gang object status, probes and
metrics, the conf from a ConfigMap, shadow mode, and a drain on SIGTERM that finishes the
binds in flight."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from clients.kubefake import FakeApiServer, default_resources, kubeconfig_for
from clients.scheduler import cycle as cycle_module
from tests.clients.scheduler.conftest import Harness, gang, node, pod, pod_group, wait_until


def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, ""


def test_a_bad_object_is_an_event_naming_its_field_and_the_rest_is_scheduled(
    cluster: Harness,
) -> None:
    bad = pod("bad", 1)
    bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    cluster.create(node("a"), bad, gang("g", 2))
    service = cluster.scheduler()
    wait_until(lambda: {"g-0", "g-1"} <= set(cluster.bound()), what="the good gang")
    events = wait_until(lambda: cluster.events("FailedValidation"), what="the event")
    assert [e["involvedObject"]["name"] for e in events] == ["bad"]
    assert "spec.containers[0].resources.requests.cpu" in events[0]["message"]
    assert "\n" not in events[0]["message"]
    assert service.metrics.refused._value.get() == 1


def test_a_volcano_pod_group_says_why_it_waits(cluster: Harness) -> None:
    group = pod_group("vc", 3)
    group["apiVersion"] = "scheduling.volcano.sh/v1beta1"
    group["spec"] = {"minMember": 3}
    pods = [pod(f"vc-{i}", 4, annotations={"scheduling.k8s.io/group-name": "vc"}) for i in range(3)]
    cluster.create(node("a"), group, *pods)
    cluster.scheduler()

    def status() -> dict[str, object] | None:
        got = cluster.api.store.get("scheduling.volcano.sh", "podgroups", "default", "vc")
        return got.get("status")

    got = wait_until(status, what="the PodGroup status")
    assert got["phase"] == "Pending"
    (condition,) = got["conditions"]
    assert condition["type"] == "Unschedulable" and condition["reason"] == "NotEnoughResources"
    assert "nvidia.com/gpu" in condition["message"]
    cluster.create(node("b"), node("c"))  # room for the gang: it binds, the status follows
    wait_until(lambda: (status() or {}).get("phase") == "Running", what="Running")
    assert len(cluster.bound()) == 3
    conditions = {c["type"]: c["status"] for c in status()["conditions"]}  # type: ignore[index]
    assert conditions == {"Unschedulable": "False", "Scheduled": "True"}


def test_probes_and_metrics(cluster: Harness) -> None:
    cluster.create(node("a"), gang("g", 2))
    service = cluster.scheduler()
    port = service.http_port
    assert port
    assert _get(port, "/healthz") == (200, "ok\n")
    assert _get(port, "/readyz") == (200, "ok\n")
    wait_until(lambda: len(cluster.bound()) == 2, what="bound")
    _, text = _get(port, "/metrics")
    assert "gangplan_scheduler_pods_bound_total 2.0" in text
    assert 'gangplan_scheduler_cycle_seconds_count{phase="decide"}' in text
    service.stop_event.set()
    assert _get(port, "/readyz")[0] == 503


def test_dry_run_writes_nothing_and_says_where_it_would_go(cluster: Harness) -> None:
    cluster.create(node("a"), gang("g", 2), gang("big", 5))
    service = cluster.scheduler(dry_run=True)
    shadow = wait_until(lambda: len(service.cycle.shadow) == 2 and service.cycle.shadow)
    assert shadow["default/g"]["placed"] is True
    assert set(shadow["default/g"]["pods"]) == {"default/g-0", "default/g-1"}
    assert shadow["default/big"]["placed"] is False and shadow["default/big"]["reason"]
    _, body = _get(service.http_port or 0, "/debug/decisions")
    assert "default/big" in body
    counts = cluster.api.store.counts
    assert counts.get("BIND", 0) == counts.get("POST", 0) == counts.get("PATCH", 0) == 0
    assert cluster.bound() == {}
    for i in range(5):  # the big gang goes away: so does its entry
        cluster.api.store.delete("", "pods", "default", f"big-{i}")
    wait_until(lambda: "default/big" not in service.cycle.shadow, what="pruned")  # type: ignore[union-attr]
    assert "default/g" in service.cycle.shadow  # type: ignore[union-attr]


def _start(tmp_path: Path, cluster: Harness, *args: str) -> subprocess.Popen[str]:
    config = tmp_path / "kubeconfig"
    config.write_text(yaml.safe_dump(kubeconfig_for(cluster.api.url)))
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gangplan",
            "scheduler",
            "--kubeconfig",
            str(config),
            "--http-port",
            "0",
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def test_sigterm_finishes_the_binds_in_flight(cluster: Harness, tmp_path: Path) -> None:
    cluster.create(node("a"), node("b"), gang("g", 6))
    cluster.api.store.faults.slow["/binding"] = 0.3  # one at a time: 1.8 s for the gang
    proc = _start(tmp_path, cluster, "--bind-workers", "1")
    try:
        assert proc.stdout is not None
        assert "gangplan scheduler: scheduling gangplan" in proc.stdout.readline()
        counts = cluster.api.store.counts
        wait_until(lambda: counts.get("BIND_STARTED", 0) >= 1, timeout=20, what="a bind")
        assert len(cluster.bound()) == 0  # SIGTERM lands while the gang's binds run
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err[-2000:]
    assert len(cluster.bound()) == 6  # the gang's binds were finished, not cut


def test_the_conf_comes_from_a_config_map(cluster: Harness, tmp_path: Path) -> None:
    cluster.create(node("a"))
    bad = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "conf", "namespace": "kube-system"},
        "data": {"volcano-scheduler.conf": "actions: enqueue, allocate\ntiers: 7\n"},
    }
    cluster.create(bad)
    proc = _start(tmp_path, cluster, "--config-map", "kube-system/conf")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert err.count("\n") == 1 and "--config-map kube-system/conf" in err and "tiers" in err


def test_kubectl_style_field_selectors_pick_one_pods_events(cluster: Harness) -> None:
    """`kubectl describe pod` lists the pod's Events by field selector: the fake filters
    them, so each pod shows its own reason."""
    cluster.create(node("a"), gang("big", 5))
    cluster.scheduler()
    wait_until(lambda: len(cluster.events("FailedScheduling")) >= 5, what="the events")
    kube = cluster.kube()
    picked = kube.request(
        "GET",
        "/api/v1/namespaces/default/events",
        query=[("fieldSelector", "involvedObject.name=big-3,involvedObject.namespace=default")],
    )
    assert {e["involvedObject"]["name"] for e in picked["items"]} == {"big-3"}
    labelled = kube.request(
        "GET", "/api/v1/pods", query=[("labelSelector", "pod-group.scheduling.sigs.k8s.io=big")]
    )
    assert len(labelled["items"]) == 5


def test_bad_start_up_input_is_one_line_naming_it(tmp_path: Path) -> None:
    conf = tmp_path / "bad.conf"
    conf.write_text("actions: x\n")
    runs = [
        (
            [sys.executable, "-m", "gangplan", "scheduler", "--kubeconfig", str(tmp_path / "none")],
            "--kubeconfig",
        ),
        ([sys.executable, "-m", "gangplan", "scheduler", "--config", str(conf)], "bad.conf"),
    ]
    for argv, named in runs:
        run = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        assert run.returncode == 2
        assert run.stderr.count("\n") == 1 and named in run.stderr, run.stderr


def test_what_was_said_is_forgotten_with_the_objects(cluster: Harness) -> None:
    """A long-running scheduler's memory follows what exists: the reasons it remembers
    (not to repeat them) go with their pods."""
    cluster.create(node("a", gpus=1), gang("big", 3))
    service = cluster.scheduler()
    wait_until(lambda: cluster.condition("big-0"), what="the reasons")
    assert service.cycle is not None
    reporter = service.cycle.reporter
    assert {k for k in reporter.last if k[0] == "pod"} == {
        ("pod", "default", f"big-{i}") for i in range(3)
    }
    for i in range(3):
        cluster.api.store.delete("", "pods", "default", f"big-{i}")
    cluster.create(pod("p", 1))  # a cycle runs, and reads the deletions
    wait_until(lambda: "p" in cluster.bound(), what="p bound")
    wait_until(lambda: not [k for k in reporter.last if k[0] == "pod"], what="forgotten")


def test_what_the_reader_skips_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="gangplan.scheduler")
    # a cluster without Volcano's CRDs: a pod naming a Volcano PodGroup is read as the
    # reader reads a dump without its PodGroups (a gang of its pods), and says so once
    with FakeApiServer(default_resources(groups=["scheduling.sigs.k8s.io"])) as api:
        cluster = Harness(api)
        volcano = {"scheduling.k8s.io/group-name": "vc"}
        cluster.create(node("a"), pod("vc-0", annotations=volcano))
        service = cluster.scheduler()
        try:
            wait_until(lambda: "vc-0" in cluster.bound(), what="bound")
        finally:
            service.stop(timeout=5)
    notes = [r.note for r in caplog.records if getattr(r, "note", None)]  # type: ignore[attr-defined]
    assert any("PodGroup 'default/vc' is not in the input" in n for n in notes), notes
    assert len(notes) == len(set(notes))


def test_a_pod_naming_a_pod_group_the_cluster_serves_but_lacks_waits(cluster: Harness) -> None:
    # Volcano's CRDs are there but not this PodGroup: upstream waits for it ("pod group not
    # found"), so does gangplan, until it comes
    volcano = {"scheduling.k8s.io/group-name": "vc"}
    cluster.create(node("a"), pod("vc-0", annotations=volcano))
    cluster.scheduler()
    time.sleep(0.8)
    assert cluster.bound() == {}
    group = pod_group("vc", 1)
    group["apiVersion"] = "scheduling.volcano.sh/v1beta1"
    cluster.create(group)
    wait_until(lambda: "vc-0" in cluster.bound(), what="bound once its PodGroup came")


def test_a_fault_inside_a_cycle_does_not_stop_the_scheduler(
    cluster: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = cycle_module.translate
    calls = {"n": 0}

    def flaky(*args: object, **kwargs: object) -> object:
        calls["n"] += 1
        if calls["n"] == 2:  # the first delta after the snapshot is put
            raise RuntimeError("a bug")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(cycle_module, "translate", flaky)
    cluster.create(node("a"))
    service = cluster.scheduler()
    cluster.create(gang("g", 2))
    wait_until(lambda: len(cluster.bound()) == 2, what="bound after the fault")
    errors = service.metrics.cycle_errors.labels(reason="INTERNAL")._value.get()
    assert errors == 1


def test_sigterm_while_the_api_server_is_unreachable_stops_cleanly(tmp_path: Path) -> None:
    """The scheduler waits for an API server that does not answer yet (with backoff, a
    warning each try); SIGTERM meanwhile ends it with exit 0, a line saying so and no
    traceback."""
    config = tmp_path / "kubeconfig"
    config.write_text(yaml.safe_dump(kubeconfig_for("http://127.0.0.1:1")))
    proc = subprocess.Popen(
        [sys.executable, "-m", "gangplan", "scheduler", "--kubeconfig", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stderr is not None
        assert "API server not reachable" in proc.stderr.readline()
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err[-2000:]
    assert "Traceback" not in err and "stopped before the API server answered" in err
