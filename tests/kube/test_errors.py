"""Bad input gets one clear error naming the file, the document and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from solver.errors import ManifestError
from solver.kube import load_manifests

POD = """\
apiVersion: v1
kind: Pod
metadata: {{name: p, namespace: ns}}
spec:
  containers:
  - name: c
    resources: {{requests: {{cpu: {cpu}}}}}
"""

NODE = "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"


CASES: dict[str, tuple[str, dict[str, str | None]]] = {
    "malformed-yaml": (
        NODE + "---\nkind: Pod\nmetadata: {name: [unclosed\n",
        {"document": "2", "field": None, "message": "malformed YAML"},
    ),
    "not-a-mapping": (
        "- just\n- a list\n",
        {"document": "1", "message": "expected a Kubernetes object"},
    ),
    "missing-kind": ("apiVersion: v1\nmetadata: {name: x}\n", {"document": "1", "field": "kind"}),
    "missing-apiVersion": ("kind: Node\nmetadata: {name: x}\n", {"field": "apiVersion"}),
    "missing-name": (
        "apiVersion: v1\nkind: Node\nmetadata: {}\n",
        {"field": "metadata.name", "message": "missing required field"},
    ),
    "missing-containers": (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {}\n",
        {"field": "spec.containers", "message": "missing required field"},
    ),
    "negative-quantity": (
        NODE + "---\n" + POD.format(cpu='"-1"'),
        {
            "document": "2",
            "obj": "Pod ns/p",
            "field": "spec.containers[0].resources.requests.cpu",
            "message": "quantity '-1': must not be negative",
        },
    ),
    "unparsable-quantity": (
        POD.format(cpu="lots"),
        {
            "field": "spec.containers[0].resources.requests.cpu",
            "message": "invalid quantity 'lots'",
        },
    ),
    "negative-allocatable": (
        "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {allocatable: {nvidia.com/gpu: '-8'}}\n",
        {"obj": "Node n", "field": "status.allocatable.nvidia.com/gpu"},
    ),
    "annotation-way-without-min": (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: {gang.scheduling.koordinator.sh/name: g}}\n"
        "spec: {containers: [{name: c}]}\n",
        {
            "field": "metadata.annotations.gang.scheduling.koordinator.sh/name",
            "message": "names gang 'default/g'",
        },
    ),
    "bad-min-available": (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: {gang.scheduling.koordinator.sh/name: g,"
        " gang.scheduling.koordinator.sh/min-available: two}}\nspec: {containers: [{name: c}]}\n",
        {
            "field": "metadata.annotations.gang.scheduling.koordinator.sh/min-available",
            "message": "not an integer",
        },
    ),
    "negative-minMember": (
        "apiVersion: scheduling.sigs.k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {name: g}\nspec: {minMember: -2}\n",
        {"obj": "PodGroup g", "field": "spec.minMember"},
    ),
    "missing-priority-class": (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {priorityClassName: gold, containers: [{name: c}]}\n",
        {"field": "spec.priorityClassName", "message": "PriorityClass 'gold' is not in the input"},
    ),
    "bad-taint-effect": (
        "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nspec: {taints: [{key: k, effect: Sometimes}]}\n",
        {"field": "spec.taints[0].effect"},
    ),
    "bad-affinity-operator-values": (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c}]\n  affinity:\n"
        "    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n"
        "        - matchExpressions: [{key: gpu, operator: Gt, values: [many]}]\n",
        {
            "field": "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values"
        },
    ),
    "duplicate-node": (
        NODE + "---\n" + NODE,
        {"document": "2", "field": "metadata.name", "message": "duplicate Node 'n'"},
    ),
    "list-items-not-a-list": ("apiVersion: v1\nkind: List\nitems: {a: 1}\n", {"field": "items"}),
    "bad-item-in-list": (
        "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Node, metadata: {name: a}}\n"
        "- {apiVersion: v1, kind: Node, metadata: {}}\n",
        {"document": "1.items[1]", "field": "metadata.name"},
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_bad_input_names_file_document_field(
    tmp_path: Path, case: tuple[str, dict[str, str | None]]
) -> None:
    text, expected = case
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ManifestError) as info:
        load_manifests(str(path))
    err = info.value
    assert err.source == str(path)
    assert str(path) in str(err)
    for attr, value in expected.items():
        if attr == "message":
            assert value in err.message, err
        else:
            assert getattr(err, attr) == value, str(err)


def test_missing_file() -> None:
    with pytest.raises(ManifestError, match="cannot read file"):
        load_manifests("/nonexistent/cluster.yaml")
