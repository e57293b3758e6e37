"""Node fit rules, one row per rule (kube-scheduler's wording for each reason)."""

from __future__ import annotations

from typing import Any

import pytest

from solver.features.predicates import (
    REASON_AFFINITY,
    REASON_NOT_READY,
    REASON_UNSCHEDULABLE,
    node_fit_reason,
)
from tests.builders import NodeBuilder, PodBuilder, model, node, pod


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, "values": list(values)}


CASES: dict[str, tuple[NodeBuilder, PodBuilder, str | None]] = {
    "plain fits": (node("n"), pod("p"), None),
    "cordoned": (node("n").cordon(), pod("p"), REASON_UNSCHEDULABLE),
    "cordoned tolerated": (
        node("n").cordon(),
        pod("p").tolerate(
            "node.kubernetes.io/unschedulable", effect="NoSchedule", operator="Exists"
        ),
        None,
    ),
    "not ready": (node("n").not_ready(), pod("p"), REASON_NOT_READY),
    "not ready tolerated by wildcard": (
        node("n").not_ready(),
        pod("p").tolerate(operator="Exists"),
        None,
    ),
    "NoSchedule taint": (
        node("n").taint("gpu", "yes"),
        pod("p"),
        "node(s) had untolerated taint {gpu: yes}",
    ),
    "NoExecute taint": (
        node("n").taint("gpu", "yes", "NoExecute"),
        pod("p"),
        "node(s) had untolerated taint {gpu: yes}",
    ),
    "PreferNoSchedule ignored": (node("n").taint("gpu", "yes", "PreferNoSchedule"), pod("p"), None),
    "Equal toleration": (
        node("n").taint("gpu", "yes"),
        pod("p").tolerate("gpu", "yes", "NoSchedule"),
        None,
    ),
    "Equal toleration wrong value": (
        node("n").taint("gpu", "yes"),
        pod("p").tolerate("gpu", "no", "NoSchedule"),
        "node(s) had untolerated taint {gpu: yes}",
    ),
    "toleration wrong effect": (
        node("n").taint("gpu", "yes", "NoExecute"),
        pod("p").tolerate("gpu", "yes", "NoSchedule"),
        "node(s) had untolerated taint {gpu: yes}",
    ),
    "Exists toleration any value, any effect": (
        node("n").taint("gpu", "x", "NoExecute"),
        pod("p").tolerate("gpu", operator="Exists"),
        None,
    ),
    "nodeSelector match": (node("n").label("zone", "a"), pod("p").selector(zone="a"), None),
    "nodeSelector mismatch": (
        node("n").label("zone", "b"),
        pod("p").selector(zone="a"),
        REASON_AFFINITY,
    ),
    "nodeSelector missing label": (node("n"), pod("p").selector(zone="a"), REASON_AFFINITY),
    "affinity In": (
        node("n").label("gpu", "a100"),
        pod("p").affinity([expr("gpu", "In", "a100", "h100")]),
        None,
    ),
    "affinity In mismatch": (
        node("n").label("gpu", "v100"),
        pod("p").affinity([expr("gpu", "In", "a100")]),
        REASON_AFFINITY,
    ),
    "affinity NotIn absent label": (
        node("n"),
        pod("p").affinity([expr("gpu", "NotIn", "a100")]),
        None,
    ),
    "affinity Exists": (
        node("n").label("gpu", ""),
        pod("p").affinity([expr("gpu", "Exists")]),
        None,
    ),
    "affinity DoesNotExist": (
        node("n").label("gpu", "x"),
        pod("p").affinity([expr("gpu", "DoesNotExist")]),
        REASON_AFFINITY,
    ),
    "affinity Gt": (
        node("n").label("cores", "64"),
        pod("p").affinity([expr("cores", "Gt", "32")]),
        None,
    ),
    "affinity Lt fails": (
        node("n").label("cores", "64"),
        pod("p").affinity([expr("cores", "Lt", "32")]),
        REASON_AFFINITY,
    ),
    "affinity Gt non-integer label": (
        node("n").label("cores", "many"),
        pod("p").affinity([expr("cores", "Gt", "1")]),
        REASON_AFFINITY,
    ),
    "affinity terms are ORed": (
        node("n").label("zone", "b"),
        pod("p").affinity([expr("zone", "In", "a")], [expr("zone", "In", "b")]),
        None,
    ),
    "affinity expressions are ANDed": (
        node("n").label("zone", "a"),
        pod("p").affinity([expr("zone", "In", "a"), expr("gpu", "Exists")]),
        REASON_AFFINITY,
    ),
    "affinity empty term matches nothing": (node("n"), pod("p").affinity([]), REASON_AFFINITY),
    "cordon reported before taint": (
        node("n").cordon().taint("gpu"),
        pod("p"),
        REASON_UNSCHEDULABLE,
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_node_fit(case: tuple[NodeBuilder, PodBuilder, str | None]) -> None:
    node_b, pod_b, expected = case
    m = model(node_b.obj(), pod_b.obj())
    assert node_fit_reason(m.pods[0], m.nodes[0]) == expected


def test_match_fields_metadata_name() -> None:
    p = pod("p").obj()
    p["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [expr("metadata.name", "In", "n2")]}]
            }
        }
    }
    m = model(node("n1").obj(), node("n2").obj(), p)
    assert [node_fit_reason(m.pods[0], n) for n in m.nodes] == [REASON_AFFINITY, None]
