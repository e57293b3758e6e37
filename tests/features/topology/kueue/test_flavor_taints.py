"""A TAS flavor's `nodeTaints` must be tolerated by the pod set, with the flavor's own
`tolerations` counted (Kueue's flavor assigner, `FindMatchingUntoleratedTaint` over the
NoSchedule/NoExecute taints in flavorassigner.go): otherwise the flavor is skipped and the
next one by name is tried; with none left the pod set stays pending, saying why.

    a-flavor (nodeTaints dedicated=ml:NoSchedule) -> pool a: b1/r1/x1, b1/r1/x2
    z-flavor (no taints)                          -> pool z: b2/r1/x3, b2/r1/x4
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import model, node, pod, podgroup
from tests.features.topology.kueue.helpers import BLOCK, HOST, RACK, REQUIRED, run

ENGINES = ("greedy", "cpsat")
TAINT = {"key": "dedicated", "value": "ml", "effect": "NoSchedule"}


def flavor(name: str, pool: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": {"nodeLabels": {"pool": pool}, "topologyName": "default", **spec},
    }


def objects(a_spec: dict[str, Any], toleration: bool, with_z: bool = True) -> list[Any]:
    nodes = [
        node(n).cpu("4").label(BLOCK, b).label(RACK, "r1").label(HOST, n).label("pool", p).obj()
        for n, b, p in (("x1", "b1", "a"), ("x2", "b1", "a"), ("x3", "b2", "z"), ("x4", "b2", "z"))
    ]
    topology = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Topology",
        "metadata": {"name": "default"},
        "spec": {"levels": [{"nodeLabel": lv} for lv in (BLOCK, RACK, HOST)]},
    }
    pods = []
    for i in range(2):
        builder = pod(f"job-{i}").requests(cpu="1").group("job").annotate(REQUIRED, BLOCK)
        if toleration:
            builder = builder.tolerate("dedicated", "ml", "NoSchedule")
        pods.append(builder.obj())
    flavors = [flavor("a-flavor", "a", a_spec)] + ([flavor("z-flavor", "z", {})] if with_z else [])
    return [*nodes, topology, *flavors, podgroup("job", 2), *pods]


def blocks(decision: Any) -> set[str | None]:
    return {
        (p.node and ("b1" if p.node in ("x1", "x2") else "b2"))
        for p in decision.placements.values()
    }


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("a_spec", "toleration", "expected"),
    [
        ({}, False, {"b1"}),  # no taint: the first flavor by name
        ({"nodeTaints": [TAINT]}, False, {"b2"}),  # untolerated: a-flavor skipped
        ({"nodeTaints": [TAINT]}, True, {"b1"}),  # the pods tolerate it
        ({"nodeTaints": [TAINT], "tolerations": [{**TAINT, "operator": "Equal"}]}, False, {"b1"}),
        ({"nodeTaints": [{**TAINT, "effect": "PreferNoSchedule"}]}, False, {"b1"}),  # soft
    ],
)
def test_flavor_node_taints_choose_the_flavor(
    engine: str, a_spec: dict[str, Any], toleration: bool, expected: set[str]
) -> None:
    assert blocks(run(model(*objects(a_spec, toleration)), engine)) == expected


@pytest.mark.parametrize("engine", ENGINES)
def test_no_tolerated_flavor_leaves_the_pod_set_pending(engine: str) -> None:
    d = run(model(*objects({"nodeTaints": [TAINT]}, False, with_z=False)), engine)
    assert all(p.node is None for p in d.placements.values())
    assert any("nodeTaints the pods tolerate" in (p.reason or "") for p in d.placements.values())
