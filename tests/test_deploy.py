"""The deployment files: Kubernetes manifests valid against the API schemas and consistent
with each other and with the server's settings; the Dockerfile's promises, and its build and
entry commands run for real. No Docker engine runs on CI, so the image itself is not built:
the wheel is built from the files the Dockerfile copies, installed into a fresh virtual
environment, and the image's ENTRYPOINT and HEALTHCHECK run there with the environment the
Deployment gives the container. (deploy/grafana/: tests/server/test_dashboard.py.)"""

from __future__ import annotations

import json
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from pydantic import ValidationError

from server import Settings
from server.app import SERVICE_NAME

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
DOCKERFILE = (ROOT / "Dockerfile").read_text()
# the oldest minor still commonly run (gRPC probes are GA since 1.27) and the newest the
# validator knows: a field removed or renamed in between fails one of them
KUBERNETES = ("1.30.0", kubernetes_validate.latest_version())


def _manifests() -> dict[str, dict[str, Any]]:
    kustomization = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    out = {}
    for name in kustomization["resources"]:
        if (DEPLOY / name).is_dir():
            continue  # deploy/scheduler/: tests/test_deploy_scheduler.py
        (doc,) = yaml.safe_load_all((DEPLOY / name).read_text())
        out[doc["kind"]] = doc
    return out


MANIFESTS = _manifests()
CORE = [kind for kind in MANIFESTS if kind != "ServiceMonitor"]
POD = MANIFESTS["Deployment"]["spec"]["template"]["spec"]
(CONTAINER,) = POD["containers"]
PORTS = {p["name"]: p["containerPort"] for p in CONTAINER["ports"]}


def test_kustomization_lists_every_manifest() -> None:
    files = {p.name for p in DEPLOY.glob("*.yaml")} - {"kustomization.yaml"}
    listed = set(yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())["resources"])
    assert listed == files | {"scheduler"}  # a kustomization of its own (test_deploy_scheduler)
    assert set(MANIFESTS) == {
        "Secret", "Deployment", "Service", "NetworkPolicy", "ServiceMonitor",
    }  # fmt: skip
    for doc in MANIFESTS.values():  # namespace-agnostic: `kubectl apply -k` picks it
        assert "namespace" not in doc["metadata"]


@pytest.mark.parametrize("version", KUBERNETES)
@pytest.mark.parametrize("kind", CORE)
def test_core_manifests_are_valid_kubernetes(kind: str, version: str) -> None:
    kubernetes_validate.validate(MANIFESTS[kind], version, strict=True)


def test_a_broken_manifest_is_refused() -> None:  # the validator is really checking
    broken = json.loads(json.dumps(MANIFESTS["Deployment"]))
    container = broken["spec"]["template"]["spec"]["containers"][0]
    container["livenessProbe"]["grpc"]["port"] = "x"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES[0], strict=True)
    del container["livenessProbe"]
    container["readinessProbe"]["grpc"]["sevice"] = "typo"  # strict: unknown fields fail
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES[0], strict=True)


def test_the_pod_is_locked_down_and_probed_over_grpc_health() -> None:
    assert POD["securityContext"]["runAsNonRoot"] is True
    assert POD["securityContext"]["runAsUser"] == _image_user()[0]
    assert POD["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    assert POD["automountServiceAccountToken"] is False
    assert CONTAINER["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    # the only writable place is an emptyDir at /tmp
    assert [m["mountPath"] for m in CONTAINER["volumeMounts"]] == ["/tmp"]
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert CONTAINER[probe]["grpc"]["port"] == PORTS["grpc"]
    assert "service" not in CONTAINER["livenessProbe"]["grpc"]  # the whole server
    assert CONTAINER["readinessProbe"]["grpc"]["service"] == SERVICE_NAME


# ------------------------------------------------------------- the container's environment


def _image_env() -> dict[str, str]:
    """The final stage's ENV (`KEY=VALUE` pairs, `\\`-continued)."""
    final = DOCKERFILE.split("\nFROM ")[-1].replace("\\\n", " ")
    env: dict[str, str] = {}
    for line in re.findall(r"^ENV (.+)$", final, re.MULTILINE):
        env |= dict(pair.split("=", 1) for pair in line.split())
    return env


def _container_env() -> dict[str, str]:
    """The Deployment's env, the Secret's value put where `secretKeyRef` points."""
    secret = MANIFESTS["Secret"]
    out = {}
    for var in CONTAINER["env"]:
        if "valueFrom" in var:
            ref = var["valueFrom"]["secretKeyRef"]
            assert ref["name"] == secret["metadata"]["name"]
            out[var["name"]] = secret["stringData"][ref["key"]]
        else:
            out[var["name"]] = var["value"]
    return out


def _pod_env() -> dict[str, str]:
    """What the server reads in the pod: the Deployment's env over the image's."""
    return {**_image_env(), **_container_env()}


def _settings(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Settings:
    """Settings as `gangplan serve` without flags reads them from `env`."""
    for name in os.environ:
        if name.startswith("GANGPLAN_"):
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return Settings()


def test_the_pod_environment_is_a_valid_server_configuration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fields = {f"GANGPLAN_{name.upper()}" for name in Settings.model_fields}
    named = {name for name in _pod_env() if name.startswith("GANGPLAN_")}
    assert named <= fields, named - fields  # no misspelt variable silently ignored
    settings = _settings(_pod_env(), monkeypatch)
    # reachable from outside the pod, on the ports the probes, Service and policy name
    assert settings.host == settings.metrics_host == "0.0.0.0"
    assert (settings.port, settings.metrics_port) == (PORTS["grpc"], PORTS["metrics"])
    assert settings.token is not None
    assert settings.token.get_secret_value() == MANIFESTS["Secret"]["stringData"]["token"]
    # the drain outlasts a call without a deadline, and the kubelet waits for the drain
    assert settings.time_limit <= settings.grace < POD["terminationGracePeriodSeconds"]
    # `docker stop` sends SIGKILL after 10 s: the image's own drain fits in it
    assert float(_image_env()["GANGPLAN_GRACE"]) < 10
    # one core per CP-SAT thread (server/settings.py: workers x solver_workers <= cores)
    resources = CONTAINER["resources"]
    assert settings.workers * settings.solver_workers <= int(resources["requests"]["cpu"])
    assert "cpu" not in resources["limits"]  # a CPU limit would throttle solves mid-budget
    memory_mib = int(resources["limits"]["memory"].removesuffix("Gi")) * 1024
    assert settings.max_snapshot_mb < memory_mib


def _service_link_env(service: dict[str, Any], cluster_ip: str) -> dict[str, str]:
    """The variables the kubelet gives every container for `service` unless the pod sets
    `enableServiceLinks: false` (kubernetes pkg/kubelet/envvars/envvars.go FromServices)."""
    name = service["metadata"]["name"].upper().replace("-", "_")
    ports = service["spec"]["ports"]
    env = {f"{name}_SERVICE_HOST": cluster_ip, f"{name}_SERVICE_PORT": str(ports[0]["port"])}
    for port in ports:
        if "name" in port:
            port_name = port["name"].upper().replace("-", "_")
            env[f"{name}_SERVICE_PORT_{port_name}"] = str(port["port"])
    for i, port in enumerate(ports):  # makeLinkVariables: Docker-link style
        protocol = port.get("protocol", "TCP")
        url = f"{protocol.lower()}://{cluster_ip}:{port['port']}"
        prefix = f"{name}_PORT_{port['port']}_{protocol}"
        if i == 0:
            env[f"{name}_PORT"] = url
        env |= {
            prefix: url,
            f"{prefix}_PROTO": protocol.lower(),
            f"{prefix}_PORT": str(port["port"]),
            f"{prefix}_ADDR": cluster_ip,
        }
    return env


def test_service_links_are_off_because_they_would_break_the_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    links = _service_link_env(MANIFESTS["Service"], "10.96.0.10")
    assert links["GANGPLAN_PORT"] == "tcp://10.96.0.10:50051"
    # the kubelet's variables win over the image's ENV, the container's env over both
    with pytest.raises(ValidationError, match="port"):
        _settings({**_image_env(), **links, **_container_env()}, monkeypatch)
    assert POD["enableServiceLinks"] is False


# ------------------------------------------------------------------- names across manifests


def test_names_agree_across_the_manifests() -> None:
    labels = MANIFESTS["Deployment"]["spec"]["template"]["metadata"]["labels"]
    assert MANIFESTS["Deployment"]["spec"]["selector"]["matchLabels"].items() <= labels.items()
    service = MANIFESTS["Service"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert (
        MANIFESTS["NetworkPolicy"]["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
    )
    assert {p["targetPort"] for p in service["spec"]["ports"]} == set(PORTS)
    assert {p["name"]: p["port"] for p in service["spec"]["ports"]} == PORTS


def test_the_network_policy_admits_clients_to_grpc_and_monitoring_to_metrics() -> None:
    spec = MANIFESTS["NetworkPolicy"]["spec"]
    assert spec["policyTypes"] == ["Ingress", "Egress"] and spec["egress"] == []
    by_port = {rule["ports"][0]["port"]: rule["from"] for rule in spec["ingress"]}
    assert set(by_port) == set(PORTS)
    assert by_port["grpc"] == [
        {"namespaceSelector": {}, "podSelector": {"matchLabels": {"gangplan.io/client": "true"}}}
    ]
    assert by_port["metrics"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
    ]


def test_the_service_monitor_scrapes_the_metrics_port_with_the_token() -> None:
    # a Prometheus Operator CRD: kubernetes-validate knows only the built-in kinds, so its
    # structure is checked here against the Service and Secret it refers to
    monitor = MANIFESTS["ServiceMonitor"]
    assert (monitor["apiVersion"], monitor["kind"]) == (
        "monitoring.coreos.com/v1",
        "ServiceMonitor",
    )
    assert set(monitor["spec"]) == {"selector", "endpoints"}  # same namespace as the Service
    service = MANIFESTS["Service"]
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] == "metrics" and "metrics" in {
        p["name"] for p in service["spec"]["ports"]
    }
    assert endpoint["path"] == "/metrics"
    assert re.fullmatch(r"\d+s", endpoint["interval"])
    assert endpoint["authorization"] == {
        "type": "Bearer",
        "credentials": {"name": MANIFESTS["Secret"]["metadata"]["name"], "key": "token"},
    }


# ------------------------------------------------------------------------------ Dockerfile


def _stages() -> list[str]:
    return re.split(r"^(?=FROM )", DOCKERFILE, flags=re.MULTILINE)[1:]


def _image_user() -> tuple[int, int]:
    (user,) = re.findall(r"^USER (\d+):(\d+)$", _stages()[-1], re.MULTILINE)
    return int(user[0]), int(user[1])


def _exec_form(instruction: str) -> list[str]:
    (line,) = re.findall(rf"{instruction} (\[.*\])$", DOCKERFILE, re.MULTILINE)
    command: list[str] = json.loads(line)
    return command


def test_the_dockerfile_builds_a_small_non_root_image_with_a_health_check() -> None:
    build, final = _stages()
    base = re.search(r"^ARG PYTHON_IMAGE=(python:3\.11-slim\S*)$", DOCKERFILE, re.MULTILINE)
    assert base, "one pinned slim base, the Python CI runs"
    assert build.startswith("FROM ${PYTHON_IMAGE} AS build") and final.startswith(
        "FROM ${PYTHON_IMAGE}\n"
    )  # the same base: the environment's python link resolves in the final stage
    # multi-stage: the final image holds the environment only, root-owned (not writable by
    # the server's user), without pip
    assert re.findall(r"^COPY .*$", final, re.MULTILINE) == [
        "COPY --from=build /opt/gangplan /opt/gangplan"
    ]
    assert "venv --without-pip /opt/gangplan" in build and "RUN" not in final
    assert "pip wheel --no-deps --no-build-isolation -w /wheels ." in build
    assert "install -c constraints.txt /wheels/gangplan-*.whl" in build
    uid, gid = _image_user()
    assert uid != 0 and gid != 0
    env = _image_env()
    assert re.findall(r"^EXPOSE (.+)$", final, re.MULTILINE) == [
        f"{env['GANGPLAN_PORT']} {env['GANGPLAN_METRICS_PORT']}"
    ]
    assert [int(env["GANGPLAN_PORT"]), int(env["GANGPLAN_METRICS_PORT"])] == list(PORTS.values())
    assert _exec_form("CMD") == ["python", "-P", "-m", "gangplan.clients.probe"]
    assert re.search(r"^HEALTHCHECK --interval=\d+s --timeout=\d+s", final, re.MULTILINE)
    assert _exec_form("ENTRYPOINT") == ["gangplan", "serve"]


def _copied() -> list[str]:
    build = _stages()[0].replace("\\\n", " ")
    return [
        src.rstrip("/")
        for line in re.findall(r"^COPY (?!--)(.+)$", build, re.MULTILINE)
        for src in line.split()[:-1]
    ]


def _ignored(rel: Path, patterns: list[str]) -> bool:
    """.dockerignore: a path is left out when it or a folder above it matches (`**/` at any
    depth). fnmatch's `*` also crosses `/`, which no pattern here relies on."""
    prefixes = ["/".join(rel.parts[: i + 1]) for i in range(len(rel.parts))]
    for pattern in patterns:
        if pattern.startswith("**/"):
            if any(fnmatch(part, pattern.removeprefix("**/")) for part in rel.parts):
                return True
        elif any(fnmatch(prefix, pattern) for prefix in prefixes):
            return True
    return False


def test_the_build_context_leaves_out_what_the_image_does_not_need() -> None:
    patterns = _dockerignore()
    for needed in _copied():
        assert (ROOT / needed).exists(), needed
        assert not _ignored(Path(needed), patterns), needed
    for left_out in (".venv", ".git", "tests", "clients/node", "clients/go/go.mod"):
        assert _ignored(Path(left_out), patterns), left_out


def _dockerignore() -> list[str]:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


# ------------------------------------------- the image's commands, run in a fresh environment


@pytest.fixture(scope="module")
def image_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """/opt/gangplan as the build stage makes it: the wheel built from the files the
    Dockerfile copies (minus .dockerignore), installed into a new venv. Its dependencies
    come from this venv through a .pth line (as tests/test_wheel.py does: no network), so the
    checkout itself is not importable there."""
    context = tmp_path_factory.mktemp("context")
    patterns = _dockerignore()
    for name in _copied():
        source = ROOT / name
        files = [source] if source.is_file() else sorted(source.rglob("*"))
        for path in files:
            rel = path.relative_to(ROOT)
            if path.is_file() and not _ignored(rel, patterns):
                (context / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, context / rel)
    wheels = tmp_path_factory.mktemp("wheels")
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
          "--no-cache-dir", "-w", str(wheels), "."], cwd=context)  # fmt: skip
    (wheel,) = wheels.glob("gangplan-*.whl")
    venv = tmp_path_factory.mktemp("opt") / "gangplan"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=context)
    purelib = _run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ],
        cwd=context,
    ).strip()
    Path(purelib, "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
          "--no-deps", "--no-cache-dir", str(wheel)], cwd=context)  # fmt: skip
    return venv


def _run(command: list[str], cwd: Path) -> str:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _container(venv: Path, **overrides: str) -> dict[str, str]:
    """The pod's environment with /opt/gangplan standing for `venv`."""
    env = {**_pod_env(), **overrides}
    env["PATH"] = (
        env["PATH"].replace("/opt/gangplan", str(venv)).replace("$PATH", os.environ["PATH"])
    )
    return env


@pytest.fixture
def served(image_env: Path, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], int, int]]:
    """The image's ENTRYPOINT with the pod's environment, on free ports (a fixed port would
    collide with another suite); yields the process and its gRPC and /metrics ports."""
    env = _container(image_env, GANGPLAN_PORT="0", GANGPLAN_METRICS_PORT="0")
    command = _exec_form("ENTRYPOINT")
    command[0] = shutil.which(command[0], path=env["PATH"]) or command[0]
    assert command[0].startswith(str(image_env)), command  # the installed console script
    proc = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        line = _first_line(proc, timeout=60)
        found = re.search(
            r"listening on 0\.0\.0\.0:(\d+), metrics on http://0\.0\.0\.0:(\d+)/", line
        )
        assert found, line
        yield proc, int(found[1]), int(found[2])
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        proc.stderr.close()


def _first_line(proc: subprocess.Popen[str], timeout: float) -> str:
    assert proc.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            pytest.fail(f"no banner in {timeout} s")
    line = proc.stdout.readline()
    if not line:
        assert proc.stderr is not None
        pytest.fail(f"gangplan serve exited {proc.wait()}: {proc.stderr.read()}")
    return line


def _health_check(venv: Path, port: int, *extra: str) -> subprocess.CompletedProcess[str]:
    """The image's HEALTHCHECK, as Docker runs it: in the container's environment (from the
    checkout, whose own `gangplan/` must not shadow the installed package)."""
    env = _container(venv, GANGPLAN_PORT=str(port))
    command = _exec_form("CMD")
    command[0] = shutil.which(command[0], path=env["PATH"]) or command[0]
    assert command[0].startswith(str(venv)), command  # the environment's python
    return subprocess.run(
        [*command, *extra], cwd=ROOT, env=env, capture_output=True, text=True, timeout=30
    )


def test_the_images_entrypoint_serves_and_its_health_check_passes(
    image_env: Path, served: tuple[subprocess.Popen[str], int, int]
) -> None:
    proc, port, metrics_port = served
    healthy = _health_check(image_env, port)
    assert (healthy.returncode, healthy.stdout) == (0, "SERVING\n"), healthy.stderr
    ready = _health_check(
        image_env, port, "--service", CONTAINER["readinessProbe"]["grpc"]["service"]
    )
    assert (ready.returncode, ready.stdout) == (0, "SERVING\n"), ready.stderr
    # /metrics off loopback answers only the Secret's token (the ServiceMonitor sends it)
    url = f"http://127.0.0.1:{metrics_port}/metrics"
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(url, timeout=10)
    assert refused.value.code == 401
    refused.value.close()
    token = MANIFESTS["Secret"]["stringData"]["token"]
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert "grpc_server_handled_total" in response.read().decode()
    # SIGTERM, as the kubelet sends it: drained and gone well within the grace period
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(POD["terminationGracePeriodSeconds"]) == 0
    assert time.monotonic() - started < float(_container_env()["GANGPLAN_GRACE"])
    gone = _health_check(image_env, port)
    assert gone.returncode == 2 and "UNAVAILABLE" in gone.stderr
