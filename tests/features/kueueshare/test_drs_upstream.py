"""Kueue's dominant resource share, translated from upstream's own table.

Source: kubernetes-sigs/kueue `pkg/cache/scheduler/fair_sharing_test.go`
(`TestDominantResourceShare`), one row per case name. Upstream's CPU amounts are in
milli-CPU (`NewAmount(1_000)` is one CPU), as gangplan's; `DrValue` is the rounded
weighted share (`roundedWeightedShare`: ceil, `math.MaxInt` for a zero weight that
borrows), `Borrowing` whether it borrows. Every case's flavor is `default` unless named.

      test-cohort                 root (own quota)
      ├── cq                      └── child-cohort (weight)
      └── lending-cq                  └── cq
"""

from __future__ import annotations

import math

import pytest

from solver.features.kueueshare import KueueNodes
from solver.model import KueueFlavorQuota, KueueQueue, KueueQuota, KueueResourceGroup

GPU = "example.com/gpu"
Quotas = dict[str, tuple[int, int | None, int | None]]  # "flavor/resource" -> (nominal, B, L)


def spec(kind: str, quotas: Quotas, weight: float = 1.0) -> KueueQueue:
    flavors: dict[str, dict[str, KueueQuota]] = {}
    for fr, (nominal, borrow, lend) in quotas.items():
        flavor, resource = fr.split("/", 1)
        flavors.setdefault(flavor, {})[resource] = KueueQuota(
            nominal=nominal, borrowing_limit=borrow, lending_limit=lend
        )
    groups = tuple(
        KueueResourceGroup(
            covered=tuple(res), flavors=(KueueFlavorQuota(name=flavor, resources=res),)
        )
        for flavor, res in flavors.items()
    )
    return KueueQueue(kind=kind, groups=groups, fair_weight=weight)


def pair(cq: Quotas, lending: Quotas, cq_weight: float = 1.0, lend_weight: float = 1.0):
    return {
        "cq": ("test-cohort", spec("ClusterQueue", cq, cq_weight)),
        "lending-cq": ("test-cohort", spec("ClusterQueue", lending, lend_weight)),
        "test-cohort": (None, spec("Cohort", {})),
    }


def nested(cq: Quotas, child: Quotas, root: Quotas, child_weight: float = 1.0):
    return {
        "cq": ("child-cohort", spec("ClusterQueue", cq)),
        "child-cohort": ("root", spec("Cohort", child, child_weight)),
        "root": (None, spec("Cohort", root)),
    }


def rounded(nodes: KueueNodes, name: str, request: dict[str, int] | None = None) -> tuple:
    drs = nodes.drs(name, request)
    value = math.inf if drs.share == math.inf else math.ceil(drs.share)
    return drs.resource, value, bool(drs.borrowed)


D = "default"
CASES = {
    # name: (tree, usage at cq, workload request, {node: (DrName, DrValue, Borrowing)})
    "usage below nominal": (
        pair({f"{D}/cpu": (2000, None, None), f"{D}/{GPU}": (5, None, None)},
             {f"{D}/cpu": (8000, None, None), f"{D}/{GPU}": (5, None, None)}),
        {f"{D}/cpu": 1000, f"{D}/{GPU}": 2}, None,
        {"cq": ("", 0, False), "lending-cq": ("", 0, False), "test-cohort": ("", 0, False)},
    ),
    "usage above nominal": (
        pair({f"{D}/cpu": (2000, None, None), f"{D}/{GPU}": (5, None, None)},
             {f"{D}/cpu": (8000, None, None), f"{D}/{GPU}": (5, None, None)}),
        {f"{D}/cpu": 3000, f"{D}/{GPU}": 7}, None,
        {"cq": (GPU, 200, True), "lending-cq": ("", 0, False), "test-cohort": ("", 0, False)},
    ),
    "usage slightly above nominal in a cohort with large quotas": (
        pair({f"{D}/{GPU}": (500, None, None)}, {f"{D}/{GPU}": (1000, None, None)},
             lend_weight=300),
        {f"{D}/{GPU}": 501}, None,
        {"cq": (GPU, 1, True), "lending-cq": ("", 0, False)},
    ),
    "usage way above nominal in a cohort with large quotas and weights": (
        pair({f"{D}/{GPU}": (500, None, None)}, {f"{D}/{GPU}": (1000, None, None)},
             cq_weight=300, lend_weight=300),
        {f"{D}/{GPU}": 800}, None,
        {"cq": (GPU, 1, True)},
    ),
    "one resource above nominal": (
        pair({f"{D}/cpu": (2000, None, None), f"{D}/{GPU}": (5, None, None)},
             {f"{D}/cpu": (8000, None, None), f"{D}/{GPU}": (5, None, None)}),
        {f"{D}/cpu": 3000, f"{D}/{GPU}": 3}, None,
        {"cq": ("cpu", 100, True)},
    ),
    "usage with workload above nominal": (
        pair({f"{D}/cpu": (2000, None, None), f"{D}/{GPU}": (5, None, None)},
             {f"{D}/cpu": (8000, None, None), f"{D}/{GPU}": (5, None, None)}),
        {f"{D}/cpu": 1000, f"{D}/{GPU}": 2}, {f"{D}/cpu": 4000, f"{D}/{GPU}": 4},
        {"cq": ("cpu", 300, True)},
    ),
    "A resource with zero lendable": (
        pair({f"{D}/cpu": (2000, None, None), f"{D}/{GPU}": (2, None, 0)},
             {f"{D}/cpu": (8000, None, None), f"{D}/{GPU}": (64, None, 0)}),
        {f"{D}/cpu": 1000, f"{D}/{GPU}": 1}, {f"{D}/cpu": 4000, f"{D}/{GPU}": 4},
        {"cq": ("cpu", 300, True)},
    ),
    "multiple flavors": (
        pair({"on-demand/cpu": (20000, None, None), "spot/cpu": (80000, None, None)},
             {f"{D}/cpu": (100000, None, None)}),
        {"on-demand/cpu": 15000, "spot/cpu": 5000}, {"on-demand/cpu": 10000},
        {"cq": ("cpu", 25, True)},
    ),
    "above nominal with integer weight": (
        pair({f"{D}/{GPU}": (5, None, None)}, {f"{D}/{GPU}": (5, None, None)}, cq_weight=2),
        {f"{D}/{GPU}": 7}, None,
        {"cq": (GPU, 100, True)},
    ),
    "above nominal with decimal weight": (
        pair({f"{D}/{GPU}": (5, None, None)}, {f"{D}/{GPU}": (5, None, None)}, cq_weight=0.5),
        {f"{D}/{GPU}": 7}, None,
        {"cq": (GPU, 400, True)},
    ),
    "above nominal with zero weight": (
        pair({f"{D}/{GPU}": (5, None, None)}, {f"{D}/{GPU}": (10, None, None)}, cq_weight=0),
        {f"{D}/{GPU}": 7}, None,
        {"cq": (GPU, math.inf, True), "lending-cq": ("", 0, False)},
    ),
    "cohort has resource share": (
        nested({f"{D}/{GPU}": (5, None, None)}, {}, {f"{D}/{GPU}": (45, None, None)},
               child_weight=2),
        {f"{D}/{GPU}": 10}, None,
        {"cq": (GPU, 100, True), "child-cohort": (GPU, 50, True), "root": ("", 0, False)},
    ),
    "resource share defined for resources only available at the root cohort": (
        nested({f"{D}/{GPU}": (0, None, None)}, {}, {f"{D}/{GPU}": (50, None, None)},
               child_weight=2),
        {f"{D}/{GPU}": 10}, None,
        {"cq": (GPU, 200, True), "child-cohort": (GPU, 100, True), "root": ("", 0, False)},
    ),
    "resource share affected by borrowing limit": (
        nested({f"{D}/{GPU}": (0, None, None)}, {f"{D}/{GPU}": (0, 10, None)},
               {f"{D}/{GPU}": (50, None, None)}),
        {f"{D}/{GPU}": 10}, None,
        {"cq": (GPU, 1000, True), "child-cohort": (GPU, 200, True), "root": ("", 0, False)},
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CASES))
def test_dominant_resource_share(name: str) -> None:
    tree, usage, request, want = CASES[name]
    nodes = KueueNodes.build(tree)
    nodes.add_all("cq", usage)
    for node, expected in want.items():
        got = rounded(nodes, node, request if node == "cq" else None)
        assert got == expected, node


def test_no_cohort_has_no_share() -> None:
    """Upstream's "no cohort": a ClusterQueue without a cohort never borrows."""
    nodes = KueueNodes.build({"cq": (None, spec("ClusterQueue", {f"{D}/cpu": (2000, None, None)}))})
    nodes.add_all("cq", {f"{D}/cpu": 1000})
    assert rounded(nodes, "cq") == ("", 0, False)
