"""`queues validate`: one row per admission rule, with its message."""

from __future__ import annotations

from typing import Any

import pytest

from solver.features.queues import validate_queues
from solver.schedule import snapshot_of
from tests.builders import model, node, queue, volcano_job

GPU = "nvidia.com/gpu"

CASES: dict[str, tuple[list[dict[str, Any]], str, str, str]] = {
    "guarantee without deserved": (
        [queue("a", guarantee={GPU: 2})],
        "a",
        "spec.guarantee.resource.nvidia.com/gpu",
        "guarantee[nvidia.com/gpu] is set but deserved[nvidia.com/gpu] is not",
    ),
    "deserved below guarantee": (
        [queue("a", deserved={GPU: 1}, guarantee={GPU: 2})],
        "a",
        "spec.deserved.nvidia.com/gpu",
        "deserved[nvidia.com/gpu]=1 is less than guarantee[nvidia.com/gpu]=2",
    ),
    "deserved above capability": (
        [queue("a", capability={"cpu": 2}, deserved={"cpu": 3})],
        "a",
        "spec.deserved.cpu",
        "deserved[cpu]=3 exceeds capability[cpu]=2",
    ),
    "state": (
        [queue("a", state="Sleeping")],
        "a",
        "status.state",
        "state 'Sleeping' is not Open or Closed",
    ),
    "missing parent": (
        [queue("a", "nowhere")],
        "a",
        "spec.parent",
        "parent queue nowhere does not exist",
    ),
    # A cycle never gets here: it is an input error (tests/model/test_parent_cycles.py).
    "depth": (
        [queue("l1"), queue("l2", "l1"), queue("l3", "l2")],
        "l3",
        "spec.parent",
        "depth 3 exceeds the maximum queue depth 2",
    ),
    "child capability above ancestor": (
        [queue("p", capability={"cpu": 10}), queue("c", "p", capability={"cpu": 20})],
        "c",
        "spec.capability.cpu",
        "capability[cpu]=20 exceeds its ancestor's capability=10",
    ),
    "nearest ancestor defining the resource": (
        [
            queue("g", capability={"cpu": 10}),
            queue("p", "g", capability={GPU: 4}),
            queue("c", "p", capability={"cpu": 12}),
        ],
        "c",
        "spec.capability.cpu",
        "capability[cpu]=12 exceeds its ancestor's capability=10",
    ),
    "children guarantee above parent": (
        [
            queue("p", deserved={GPU: 8}, guarantee={GPU: 4}),
            queue("a", "p", deserved={GPU: 3}, guarantee={GPU: 3}),
            queue("b", "p", deserved={GPU: 2}, guarantee={GPU: 2}),
        ],
        "a",
        "spec.guarantee.resource",
        "sum of children's guarantee {nvidia.com/gpu: 5} exceeds parent's guarantee limit {nvidia.com/gpu: 4}",
    ),
    "children deserved where the parent has none": (
        [queue("p"), queue("a", "p", deserved={"cpu": 1})],
        "a",
        "spec.deserved",
        "exceeds parent's deserved limit {}",
    ),
    "parent smaller than a descendant": (
        [
            queue("p", capability={"cpu": 4}),
            queue("a", "p"),
            queue("b", "a", capability={"cpu": 6}),
        ],
        "p",
        "spec.capability.cpu",
        "capability[cpu]=4 is smaller than its descendants' max capability=6",
    ),
    "parent already runs pods": (
        [queue("p"), queue("c", "p"), *volcano_job("j", "p", 1, bound_on="n")],
        "c",
        "spec.parent",
        "queue p cannot be the parent queue of queue c because it has allocated Pods: 1",
    ),
    "parent with allocated pods in status": (
        [queue("p", allocated_pods=3), queue("c", "p")],
        "c",
        "spec.parent",
        "because it has allocated Pods: 3",
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_rule(case: tuple[list[dict[str, Any]], str, str, str]) -> None:
    objects, name, field_path, message = case
    verdicts = validate_queues(snapshot_of(model(node("n").obj(), *objects)), max_depth=2)
    v = verdicts[name]
    assert not v.valid
    assert any(f == field_path and message in m for f, m in v.problems), v.problems


def test_children_of_root_are_exempt_from_sums_and_valid_tree_passes() -> None:
    objs = [
        queue("root", capability={"cpu": 4}),
        queue("a", deserved={"cpu": 10}, guarantee={"cpu": 5}),
        queue("b", "a", deserved={"cpu": 4}, guarantee={"cpu": 2}),
    ]
    verdicts = validate_queues(snapshot_of(model(*objs)))
    assert all(v.valid for v in verdicts.values()), {n: v.reason for n, v in verdicts.items()}


def test_delete_rules() -> None:
    objs = [queue("default"), queue("p"), queue("c", "p")]
    m = model(*objs)
    assert (
        "cannot be deleted" in validate_queues(snapshot_of(m), delete="default")["default"].reason
    )
    assert "it has child queues c" in validate_queues(snapshot_of(m), delete="p")["p"].reason
    assert validate_queues(snapshot_of(m), delete="c")["c"].valid


def test_nodegroup_risk_is_a_warning() -> None:
    objs = [
        node("g1").label("volcano.sh/nodegroup-name", "ng").gpu(8).obj(),
        queue("q", capability={GPU: 16}, affinity={"required": ["ng"]}),
    ]
    v = validate_queues(snapshot_of(model(*objs)))["q"]
    assert v.valid
    assert v.warnings == [
        "capability[nvidia.com/gpu]=16 exceeds what its node groups (ng) can offer: 8"
    ]
