"""Reading YAML as users have it: multi-document files, kind: List, typed lists, stdin, dirs."""

from __future__ import annotations

import io
import textwrap
from pathlib import Path
from typing import Any

import pytest

from solver.kube import load_manifests, read_sources
from tests.builders import model

NODE = """\
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi}}
"""


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_multi_document_with_empty_documents(tmp_path: Path) -> None:
    f = write(tmp_path, "a.yaml", "---\n" + NODE + "---\n---\n" + NODE.replace("n1", "n2"))
    model = load_manifests(f)
    assert [n.name for n in model.nodes] == ["n1", "n2"]


def test_kind_list_as_kubectl_prints_it(tmp_path: Path) -> None:
    f = write(
        tmp_path,
        "list.yaml",
        """\
        apiVersion: v1
        kind: List
        items:
        - apiVersion: v1
          kind: Node
          metadata: {name: n1}
          status: {allocatable: {cpu: "2"}}
        - apiVersion: v1
          kind: Pod
          metadata: {name: p, namespace: ns}
          spec: {containers: [{name: c, resources: {requests: {cpu: 500m}}}]}
        """,
    )
    model = load_manifests(f)
    assert [n.name for n in model.nodes] == ["n1"]
    assert model.pods[0].key == "ns/p"
    assert model.pods[0].requests == {"cpu": 500, "pods": 1}


def test_typed_list_items_without_kind(tmp_path: Path) -> None:
    f = write(
        tmp_path,
        "nodes.yaml",
        """\
        apiVersion: v1
        kind: NodeList
        items:
        - metadata: {name: a}
        - metadata: {name: b}
        """,
    )
    assert [n.name for n in load_manifests(f).nodes] == ["a", "b"]


def test_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(NODE))
    assert [n.name for n in load_manifests("-").nodes] == ["n1"]


def test_directory_reads_yaml_files_in_name_order(tmp_path: Path) -> None:
    write(tmp_path, "b.yaml", NODE.replace("n1", "nb"))
    write(tmp_path, "a.yml", NODE.replace("n1", "na"))
    write(tmp_path, "notes.txt", "not yaml: [")
    objects = read_sources([str(tmp_path)])
    assert [o.body["metadata"]["name"] for o in objects] == ["na", "nb"]


def test_unknown_kinds_are_skipped_with_a_note(tmp_path: Path) -> None:
    f = write(
        tmp_path,
        "mixed.yaml",
        NODE
        + "---\napiVersion: v1\nkind: Service\nmetadata: {name: d}\n"
        + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
    )
    model = load_manifests(f)
    assert len(model.nodes) == 1
    assert len(model.notes) == 2
    assert "document 2: skipped v1 Service" in model.notes[0]


def test_node_defaults_and_quantities(tmp_path: Path) -> None:
    f = write(
        tmp_path,
        "n.yaml",
        """\
        apiVersion: v1
        kind: Node
        metadata: {name: n1, labels: {gpu: 8, spot: true}}
        spec:
          unschedulable: true
          taints: [{key: k, effect: NoExecute}]
        status:
          capacity: {cpu: "64", memory: 1Ti, nvidia.com/gpu: "8"}
          conditions: [{type: Ready, status: Unknown}]
        """,
    )
    (n,) = load_manifests(f).nodes
    # allocatable falls back to capacity; pods defaults to kubelet's 110
    assert n.allocatable == {"cpu": 64000, "memory": 2**40, "nvidia.com/gpu": 8, "pods": 110}
    assert n.labels == {"gpu": "8", "spot": "true"}
    assert n.unschedulable and not n.ready
    assert n.taints[0].key == "k" and n.taints[0].value == ""


def test_pod_effective_requests() -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
                {"name": "b", "resources": {"limits": {"cpu": "500m", "nvidia.com/gpu": "2"}}},
            ],
            "initContainers": [
                {"name": "init", "resources": {"requests": {"cpu": "4"}}},
                {
                    "name": "side",
                    "restartPolicy": "Always",
                    "resources": {"requests": {"memory": "1Gi"}},
                },
            ],
            "overhead": {"cpu": "100m"},
        },
    }
    (p,) = model(body).pods
    # cpu: max(1 + 0.5, init 4) + overhead 0.1; memory: 1Gi + sidecar 1Gi; gpu from limits
    assert p.requests == {"cpu": 4100, "memory": 2 * 2**30, "nvidia.com/gpu": 2, "pods": 1}
    assert p.namespace == "default"


def _cpu(cores: int, sidecar: bool = False) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "resources": {"requests": {"cpu": str(cores)}}}
    if sidecar:
        container["restartPolicy"] = "Always"
    return container


# KEP-753's rule as component-helpers/resource `PodRequests` implements it, on the sidecar
# cases of its helpers_test.go (TestPodResourceRequests): a regular init container runs
# beside the restartable init containers declared before it, not the ones after it.
@pytest.mark.parametrize(
    ("init", "containers", "cores"),
    [
        pytest.param([_cpu(1, True)], [_cpu(1)], 2, id="restartable init container"),
        pytest.param(
            [_cpu(1, True), _cpu(2, True)], [_cpu(1)], 4, id="multiple restartable init containers"
        ),
        pytest.param(
            [_cpu(1, True), _cpu(5)], [_cpu(1)], 6, id="restartable-init, init and regular"
        ),
        pytest.param(
            [_cpu(5), _cpu(1, True)], [_cpu(1)], 5, id="init before restartable-init: alone"
        ),
        pytest.param(
            [_cpu(5), _cpu(1, True), _cpu(2, True), _cpu(3)],
            [_cpu(1)],
            6,
            id="multiple restartable and regular init containers",
        ),
        pytest.param(
            [_cpu(1, True), _cpu(1, True), _cpu(1)], [_cpu(10)], 12, id="app containers dominate"
        ),
    ],
)
def test_sidecars_count_for_the_init_containers_after_them(
    init: list[dict[str, Any]], containers: list[dict[str, Any]], cores: int
) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": containers, "initContainers": init},
    }
    (p,) = model(body).pods
    assert p.requests["cpu"] == cores * 1000
