"""The deployment files: Kubernetes manifests valid against the API schemas and consistent
with each other and with the server's settings; the Dockerfile's promises; the Grafana
dashboard asks only for metrics the server exports. (No Docker engine runs on CI, so the
image itself is not built here.)"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from prometheus_client import generate_latest

from server import Settings
from server.app import SERVICE_NAME
from server.metrics import Metrics

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
KUBERNETES = "1.30.0"  # the oldest supported minor with gRPC probes GA (1.27+)


def _manifests() -> dict[str, dict[str, Any]]:
    kustomization = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    out = {}
    for name in kustomization["resources"]:
        (doc,) = yaml.safe_load_all((DEPLOY / name).read_text())
        out[doc["kind"]] = doc
    return out


MANIFESTS = _manifests()
CORE = [kind for kind in MANIFESTS if kind != "ServiceMonitor"]


def test_kustomization_lists_every_manifest() -> None:
    files = {p.name for p in DEPLOY.glob("*.yaml")} - {"kustomization.yaml"}
    listed = set(yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())["resources"])
    assert listed == files
    assert set(MANIFESTS) == {
        "Secret", "Deployment", "Service", "NetworkPolicy", "ServiceMonitor",
    }  # fmt: skip


@pytest.mark.parametrize("kind", CORE)
def test_core_manifests_are_valid_kubernetes(kind: str) -> None:
    kubernetes_validate.validate(MANIFESTS[kind], KUBERNETES, strict=True)


def test_a_broken_manifest_is_refused() -> None:  # the validator is really checking
    broken = json.loads(json.dumps(MANIFESTS["Deployment"]))
    broken["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["grpc"]["port"] = "x"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES, strict=True)


def _container() -> dict[str, Any]:
    (container,) = MANIFESTS["Deployment"]["spec"]["template"]["spec"]["containers"]
    return container


def test_the_deployment_is_locked_down_and_probed_over_grpc_health() -> None:
    pod = MANIFESTS["Deployment"]["spec"]["template"]["spec"]
    container = _container()
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    grpc_port = {p["name"]: p["containerPort"] for p in container["ports"]}["grpc"]
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert container[probe]["grpc"]["port"] == grpc_port == Settings().port
    assert container["readinessProbe"]["grpc"]["service"] == SERVICE_NAME
    # the pod outlives the server's drain
    assert pod["terminationGracePeriodSeconds"] > float(_env()["GANGPLAN_GRACE"])


def _env() -> dict[str, str]:
    return {e["name"]: e.get("value", "<secret>") for e in _container()["env"]}


def test_every_environment_variable_is_a_server_setting() -> None:
    fields = {f"GANGPLAN_{name.upper()}" for name in Settings.model_fields}
    assert set(_env()) <= fields
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert set(re.findall(r"\b(GANGPLAN_[A-Z_]+)=", dockerfile)) <= fields
    memory = _container()["resources"]["limits"]["memory"]
    assert int(_env()["GANGPLAN_MAX_SNAPSHOT_MB"]) < int(memory.removesuffix("Gi")) * 1024


def test_names_agree_across_the_manifests() -> None:
    labels = MANIFESTS["Deployment"]["spec"]["template"]["metadata"]["labels"]
    service = MANIFESTS["Service"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert (
        MANIFESTS["NetworkPolicy"]["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
    )
    ports = {p["name"] for p in _container()["ports"]}
    assert {p["targetPort"] for p in service["spec"]["ports"]} <= ports
    for rule in MANIFESTS["NetworkPolicy"]["spec"]["ingress"]:
        assert {p["port"] for p in rule["ports"]} <= ports
    secret = MANIFESTS["Secret"]
    (token,) = [e for e in _container()["env"] if e["name"] == "GANGPLAN_TOKEN"]
    assert token["valueFrom"]["secretKeyRef"] == {
        "name": secret["metadata"]["name"],
        "key": next(iter(secret["stringData"])),
    }


def test_the_service_monitor_scrapes_the_metrics_port_with_the_token() -> None:
    # a Prometheus Operator CRD: the Kubernetes schemas do not know it, so its structure
    # is checked here against the Service and Secret it refers to
    monitor = MANIFESTS["ServiceMonitor"]
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    service = MANIFESTS["Service"]
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    assert endpoint["path"] == "/metrics"
    credentials = endpoint["authorization"]["credentials"]
    assert credentials == {"name": MANIFESTS["Secret"]["metadata"]["name"], "key": "token"}


def test_the_dockerfile_builds_a_small_non_root_image_with_a_health_check() -> None:
    text = (ROOT / "Dockerfile").read_text()
    stages = re.findall(r"^FROM (\S+)(?: AS (\w+))?", text, re.MULTILINE)
    assert len(stages) == 2 and "--from=build" in text  # multi-stage: no build tools shipped
    (user,) = re.findall(r"^USER (\d+):(\d+)$", text, re.MULTILINE)
    assert int(user[0]) != 0 and int(user[1]) != 0
    assert re.search(r'CMD \["gangplan", "health", "--server", "127.0.0.1:50051"\]', text)
    assert re.findall(r"^EXPOSE (.+)$", text, re.MULTILINE) == ["50051 9464"]
    assert 'ENTRYPOINT ["gangplan", "serve"]' in text
    for copied in re.findall(r"^COPY (?!--)(\S+)", text, re.MULTILINE):
        assert (ROOT / copied.rstrip("/")).exists(), copied
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert ".venv" in ignored and "tests" in ignored


def test_the_dashboard_queries_only_exported_metrics() -> None:
    dashboard = json.loads((DEPLOY / "grafana" / "gangplan-dashboard.json").read_text())
    exported = {_family(n) for n in re.findall(r"^# TYPE (\S+)", _exposition(), re.MULTILINE)}
    asked = set()
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            asked |= set(
                re.findall(
                    r"\b((?:grpc_server|gangplan|volcano_queue_card|process)_\w+)", target["expr"]
                )
            )
    assert asked and len(dashboard["panels"]) >= 10
    families = {_family(name) for name in asked}
    assert families <= exported, families - exported


def _family(name: str) -> str:
    return re.sub(r"_(total|bucket|sum|count)$", "", name)


def _exposition() -> str:
    text: str = generate_latest(Metrics().registry).decode()
    return text
