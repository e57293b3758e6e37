"""Nothing dropped in silence: every field of the core objects gangplan reads, as the
Kubernetes API defines them (the OpenAPI schemas `kubernetes-validate` ships, newest
version), is read (the reader's pydantic model names it), noted when a pending pod carries
it, or listed as not scheduling input with why (`solver/kube/fields.py`). A field a new
Kubernetes release adds fails this test until it is classified."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from pydantic import BaseModel
from typer.testing import CliRunner

from clients.cli import app
from solver import SchedulerConf, schedule
from solver.codec import Violations, cluster_to_proto, pod_from_proto
from solver.kube import load_objects
from solver.kube.fields import IGNORED, NOTED
from solver.kube.objects import Container, NodeSpec, NodeStatus, PodSpec, PodStatus
from tests.builders import node, pod, raw

MODELS: dict[str, type[BaseModel]] = {
    "PodSpec": PodSpec,
    "Container": Container,
    "NodeSpec": NodeSpec,
    "NodeStatus": NodeStatus,
    "PodStatus": PodStatus,
}


def _upstream(kind: str) -> set[str]:
    version = kubernetes_validate.latest_version()
    root = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
    defs = json.loads((root / f"v{version}-local" / "_definitions.json").read_text())["$defs"]
    return set(defs[f"io.k8s.api.core.v1.{kind}"]["properties"])


def _read(model: type[BaseModel]) -> set[str]:
    return {f.alias or name for name, f in model.model_fields.items()}


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_every_upstream_field_is_read_noted_or_not_scheduling_input(kind: str) -> None:
    known = _read(MODELS[kind]) | set(NOTED.get(kind, {})) | set(IGNORED.get(kind, {}))
    assert not _upstream(kind) - known, f"{kind}: classify in solver/kube/fields.py"


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_a_field_is_classified_once(kind: str) -> None:
    read, noted, ignored = _read(MODELS[kind]), set(NOTED.get(kind, {})), set(IGNORED.get(kind, {}))
    assert not (read & noted) and not (read & ignored) and not (noted & ignored)


def test_a_pending_pod_with_an_unmodelled_field_is_noted_once() -> None:
    """A hostPort and a volume were dropped in silence."""
    pods: list[dict[str, Any]] = [pod(f"p{i}").requests(cpu="1").obj() for i in range(3)]
    for p in pods:
        p["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 80}]
        p["spec"]["volumes"] = [{"name": "d", "persistentVolumeClaim": {"claimName": "c"}}]
    notes = load_objects(raw(node("n").cpu("4").obj(), *pods)).notes
    assert any(n.startswith("3 pending pod(s) set spec.containers[].ports") for n in notes)
    assert any(n.startswith("3 pending pod(s) set spec.volumes") for n in notes)


def test_pod_level_resources_replace_the_containers_sum() -> None:
    """KEP-2837: spec.resources requests win for cpu and memory (then overhead)."""
    p = pod("p").requests(cpu="1", memory="1Gi").obj()
    p["spec"]["resources"] = {"requests": {"cpu": "3"}, "limits": {"memory": "2Gi"}}
    p["spec"]["overhead"] = {"cpu": "100m"}
    (read,) = load_objects(raw(p)).pods
    assert read.requests["cpu"] == 3100 and read.requests["memory"] == 2 * 1024**3


def test_a_gated_pod_waits_for_its_gates_on_every_path() -> None:
    """kube-scheduler's SchedulingGates: a pod with spec.schedulingGates is not placed until
    they are removed; it was placed. Over gRPC the gates travel (Pod field 23)."""
    gated = pod("g").requests(cpu="1").obj()
    gated["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
    cluster = load_objects(
        raw(node("n").cpu("4").obj(), gated, pod("free").requests(cpu="1").obj())
    )
    for engine in ("greedy", "cpsat"):
        d = schedule(cluster, SchedulerConf.default(), engine=engine, workers=1)
        assert d.placements["default/g"].node is None and d.placements["default/free"].node
        assert "scheduling gates (example.com/wait)" in d.placements["default/g"].reason
    (msg,) = [p for p in cluster_to_proto(cluster).pods if p.name == "g"]
    again = pod_from_proto(msg, "cluster.pods[0]", Violations())
    assert again is not None and again.scheduling_gates == ("example.com/wait",)


def test_explain_says_why_a_gated_pod_is_not_placed(tmp_path: Path) -> None:
    """It said the pod was not in the input."""
    gated = pod("g").requests(cpu="1").obj()
    gated["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
    path = tmp_path / "gated.yaml"
    path.write_text(yaml.safe_dump_all([node("n").cpu("4").obj(), gated]))
    result = CliRunner().invoke(app, ["explain", "-f", str(path), "--pod", "default/g"])
    assert result.exit_code == 2
    assert "left pending, not placed by gangplan: scheduling gates example.com/wait" in (
        result.output + result.stderr
    )
