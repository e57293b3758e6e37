"""kube-scheduler's own InterPodAffinity and PodTopologySpread filter cases, translated.

Each case names the upstream test and case (pkg/scheduler/framework/plugins/
interpodaffinity/filtering_test.go, podtopologyspread/filtering_test.go). The incoming pod
is the only pending pod: the nodes it may use are what both filters leave (the compiled
eligibility plus the term rows' verdict), and each engine must place it on one of them —
or leave it pending with kube-scheduler's counted reason — with the answer verified.

    region r1              region r2
    ├── zone z11: n1       └── zone z21: n3
    └── zone z12: n2
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from solver.compile import compile_problem
from solver.config import SchedulerConf
from solver.features.interpod import interpod_tracker
from solver.schedule import schedule
from tests.builders import PodBuilder, model, node, pod

AFFINITY = "node(s) didn't match pod affinity rules"
ANTI = "node(s) didn't match pod anti-affinity rules"
EXISTING = "node(s) didn't satisfy existing pods anti-affinity rules"
SPREAD = "node(s) didn't match pod topology spread constraints"
MISSING = f"{SPREAD} (missing required label)"


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, "values": list(values)}


def three_nodes() -> list[dict[str, Any]]:
    return [
        node("n1").label("region", "r1").label("zone", "z11").label("h", "n1").obj(),
        node("n2").label("region", "r1").label("zone", "z12").label("h", "n2").obj(),
        node("n3").label("region", "r2").label("zone", "z21").label("h", "n3").obj(),
    ]


def four_nodes(*unlabelled: str) -> list[dict[str, Any]]:
    """podtopologyspread's node-a, node-b (zone1), node-x, node-y (zone2)."""
    out = []
    for name, zone in (
        ("node-a", "zone1"),
        ("node-b", "zone1"),
        ("node-x", "zone2"),
        ("node-y", "zone2"),
    ):
        b = node(name).label("kubernetes.io/hostname", name).pods(200)
        if name not in unlabelled:
            b = b.label("zone", zone)
        out.append(b.obj())
    return out


def running(name: str, where: str, namespace: str = "default", **labels: str) -> PodBuilder:
    b = pod(name, namespace).on(where)
    for k, v in labels.items():
        b = b.label(k, v)
    return b


@dataclass
class Case:
    nodes: list[dict[str, Any]]
    incoming: PodBuilder
    fits: set[str]
    reasons: dict[str, str] = field(default_factory=dict)  # node -> reason, for some
    existing: list[PodBuilder] = field(default_factory=list)


def incoming(**labels: str) -> PodBuilder:
    b = pod("incoming")
    for k, v in labels.items():
        b = b.label(k, v)
    return b


CASES: dict[str, Case] = {
    # TestRequiredAffinitySingleNode
    "satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In "
    "operator that matches the existing pod": Case(
        three_nodes()[:1],
        incoming().pod_affinity(
            "region", expressions=[expr("service", "In", "securityscan", "value2")]
        ),
        {"n1"},
        existing=[running("e", "n1", service="securityscan")],
    ),
    "satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity "
    "using not in operator in labelSelector that matches the existing pod": Case(
        three_nodes()[:1],
        incoming().pod_affinity(
            "region", expressions=[expr("service", "NotIn", "securityscan3", "value3")]
        ),
        {"n1"},
        existing=[running("e", "n1", service="securityscan")],
    ),
    "Does not satisfy the PodAffinity with labelSelector because of diff Namespace": Case(
        three_nodes()[:1],
        incoming().pod_affinity("region", expressions=[expr("service", "In", "securityscan")]),
        set(),
        {"n1": AFFINITY},
        existing=[running("e", "n1", namespace="ns", service="securityscan")],
    ),
    "Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod": Case(
        three_nodes()[:1],
        incoming().pod_affinity(
            "region", expressions=[expr("service", "In", "antivirusscan", "value2")]
        ),
        set(),
        {"n1": AFFINITY},
        existing=[running("e", "n1", service="securityscan")],
    ),
    "The labelSelector requirements(items of matchExpressions) are ANDed, the pod cannot "
    "schedule onto the node because one of the matchExpression item don't match.": Case(
        three_nodes()[:1],
        incoming().pod_affinity(
            "region",
            expressions=[
                expr("service", "Exists"),
                expr("wrongkey", "DoesNotExist"),
                expr("service", "In", "WrongValue"),
            ],
        ),
        set(),
        {"n1": AFFINITY},
        existing=[running("e", "n1", service="securityscan")],
    ),
    "satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod": Case(
        three_nodes()[:1],
        incoming()
        .pod_affinity("region", expressions=[expr("service", "In", "securityscan", "value2")])
        .pod_affinity("zone", anti=True, expressions=[expr("service", "In", "securityscan")]),
        set(),
        {"n1": ANTI},
        existing=[running("e", "n1", service="securityscan")],
    ),
    "satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity "
    "symmetry with the existing pod": Case(
        three_nodes()[:1],
        incoming(security="S1").pod_affinity(
            "region", expressions=[expr("service", "In", "securityscan")]
        ),
        set(),
        {"n1": EXISTING},
        existing=[running("e", "n1", service="securityscan").anti_affinity("zone", security="S1")],
    ),
    "pod matches its own Label in PodAffinity and that matches the existing pod Labels": Case(
        three_nodes()[:1],
        incoming(service="securityscan").pod_affinity(
            "region", expressions=[expr("service", "NotIn", "securityscan", "value2")]
        ),
        set(),
        {"n1": AFFINITY},
        existing=[running("e", "n3", service="securityscan")],
    ),
    "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity "
    "constraints. doesn't satisfy PodAntiAffinity symmetry with the existing pod": Case(
        three_nodes()[:1],
        incoming(service="securityscan"),
        set(),
        {"n1": EXISTING},
        existing=[running("e", "n1").anti_affinity("zone", service="securityscan")],
    ),
    "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity "
    "constraints. satisfy PodAntiAffinity symmetry with the existing pod": Case(
        three_nodes()[:1],
        incoming(service="securityscan"),
        {"n1"},
        existing=[running("e", "n1").anti_affinity("rack", service="securityscan")],
    ),
    # TestRequiredAffinityMultipleNodes
    "A pod can be scheduled onto all the nodes that have the same topology key & label value "
    "with one of them has an existing pod that matches the affinity rules": Case(
        three_nodes(),
        incoming().pod_affinity("region", foo="bar"),
        {"n1", "n2"},
        {"n3": AFFINITY},
        existing=[running("e", "n1", foo="bar")],
    ),
    "The affinity rule is to schedule all of the pods of this collection to the same zone. "
    "The first pod of the collection should not be blocked from being scheduled onto any "
    "node, even there's no existing pod that matches the rule anywhere.": Case(
        three_nodes(),
        incoming(foo="bar").pod_affinity("zone", foo="bar"),
        {"n1", "n2", "n3"},
    ),
    "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that "
    "matches the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB.": Case(
        three_nodes(),
        incoming().pod_affinity("region", anti=True, foo="abc"),
        {"n3"},
        {"n1": ANTI, "n2": ANTI},
        existing=[running("e", "n1", foo="abc")],
    ),
    "Test the situation when two nodes have the same topology key & label value and one of "
    "them has an existing pod that matches the anti affinity rules (symmetry)": Case(
        three_nodes(),
        incoming(foo="abc"),
        {"n3"},
        {"n1": EXISTING, "n2": EXISTING},
        existing=[running("e", "n1").anti_affinity("region", foo="abc")],
    ),
    # podtopologyspread TestSingleConstraint
    "no existing pods": Case(
        four_nodes(),
        incoming(foo="").spread("zone", foo=""),
        {"node-a", "node-b", "node-x", "node-y"},
    ),
    "pods spread across zones as 1/2 due to absence of label 'zone' on node-b": Case(
        four_nodes("node-b"),
        incoming(foo="").spread("zone", foo=""),
        {"node-a"},
        {"node-b": MISSING, "node-x": SPREAD, "node-y": SPREAD},
        existing=[
            running("p-a1", "node-a", foo=""),
            running("p-b1", "node-b", foo=""),
            running("p-x1", "node-x", foo=""),
            running("p-y1", "node-y", foo=""),
        ],
    ),
    "pod cannot be scheduled as all nodes don't have label 'rack'": Case(
        four_nodes(),
        incoming(foo="").spread("rack", foo=""),
        set(),
        {n: MISSING for n in ("node-a", "node-b", "node-x", "node-y")},
    ),
    "pods spread across nodes as 2/1/0/3, only node-x fits": Case(
        four_nodes(),
        incoming(foo="").spread("kubernetes.io/hostname", foo=""),
        {"node-x"},
        {"node-a": SPREAD, "node-b": SPREAD, "node-y": SPREAD},
        existing=[
            *(running(f"p-a{i}", "node-a", foo="") for i in range(2)),
            running("p-b1", "node-b", foo=""),
            *(running(f"p-y{i}", "node-y", foo="") for i in range(3)),
        ],
    ),
    "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit": Case(
        four_nodes(),
        incoming(foo="").spread("kubernetes.io/hostname", 2, foo=""),
        {"node-b", "node-x"},
        existing=[
            *(running(f"p-a{i}", "node-a", foo="") for i in range(2)),
            running("p-b1", "node-b", foo=""),
            *(running(f"p-y{i}", "node-y", foo="") for i in range(3)),
        ],
    ),
    "pods spread across nodes as 2/1/0/3, but pod doesn't match itself": Case(
        four_nodes(),
        incoming(bar="").spread("kubernetes.io/hostname", foo=""),
        {"node-b", "node-x"},
        existing=[
            *(running(f"p-a{i}", "node-a", foo="") for i in range(2)),
            running("p-b1", "node-b", foo=""),
            *(running(f"p-y{i}", "node-y", foo="") for i in range(3)),
        ],
    ),
    "incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits": Case(
        four_nodes(),
        incoming(foo="")
        .affinity([expr("kubernetes.io/hostname", "In", "node-a", "node-y")])
        .spread("kubernetes.io/hostname", foo=""),
        {"node-a"},
        {"node-y": SPREAD},
        existing=[
            *(running(f"p-a{i}", "node-a", foo="") for i in range(2)),
            running("p-b1", "node-b", foo=""),
            *(running(f"p-y{i}", "node-y", foo="") for i in range(3)),
        ],
    ),
    "existing pods in a different namespace do not count": Case(
        four_nodes(),
        incoming(foo="").spread("zone", foo=""),
        {"node-x", "node-y"},
        {"node-a": SPREAD, "node-b": SPREAD},
        existing=[
            running("p-a1", "node-a", namespace="ns1", foo=""),
            running("p-a2", "node-a", foo=""),
            running("p-b1", "node-b", foo=""),
            running("p-y1", "node-y", namespace="ns2", foo=""),
            running("p-y2", "node-y", foo=""),
        ],
    ),
    "terminating Pods should be excluded": Case(
        four_nodes()[:2],
        incoming(foo="").spread("kubernetes.io/hostname", foo=""),
        {"node-a"},
        {"node-b": SPREAD},
        existing=[
            running("p-a", "node-a", foo="").terminating(),
            running("p-b", "node-b", foo=""),
        ],
    ),
    # TestSingleConstraint, minDomains cases
    "pods spread across zone as 2/1, maxSkew is 2, and the number of domains < minDomains, "
    "then the third node cannot fit": Case(
        four_nodes(),
        incoming(foo="").spread("zone", 2, min_domains=3, foo=""),
        {"node-x", "node-y"},
        {"node-a": SPREAD, "node-b": SPREAD},
        existing=[
            running("p-a1", "node-a", foo=""),
            running("p-b1", "node-b", foo=""),
            running("p-x1", "node-x", foo=""),
        ],
    ),
}


def _model(case: Case) -> Any:
    return model(*case.nodes, *(p.obj() for p in case.existing), case.incoming.obj())


def _filter(case: Case) -> tuple[set[str], dict[str, str]]:
    problem = compile_problem(_model(case), SchedulerConf.default())
    (t,) = range(problem.num_types)
    codes = problem.ineligible_reason[t].copy()
    tracker = interpod_tracker(problem)
    if tracker is not None and tracker.involved(t):
        verdict = tracker.verdict(t)
        codes[codes == 0] = verdict[codes == 0]
    fits = {problem.node_names[n] for n in range(problem.num_nodes) if codes[n] == 0}
    reasons = {
        problem.node_names[n]: problem.reason_texts[codes[n]]
        for n in range(problem.num_nodes)
        if codes[n]
    }
    return fits, reasons


@pytest.mark.parametrize("name", list(CASES))
def test_filter(name: str) -> None:
    case = CASES[name]
    fits, reasons = _filter(case)
    assert fits == case.fits
    for where, reason in case.reasons.items():
        assert reasons[where] == reason


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
@pytest.mark.parametrize("name", list(CASES))
def test_engines_place_within_the_filter(name: str, engine: str) -> None:
    case = CASES[name]
    d = schedule(_model(case), SchedulerConf.default(), engine=engine, workers=1, time_limit=10)
    where = d.placements["default/incoming"].node
    if case.fits:
        assert where in case.fits
    else:
        assert where is None
        reason = d.placements["default/incoming"].reason
        assert any(text in reason for text in case.reasons.values()), reason
