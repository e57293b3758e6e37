"""Random Kueue TAS clusters: both engines' answers pass verify (the oracle, inside
`schedule`), CP-SAT is never worse than the greedy under the objective tiers, and a pod set
is placed whole or not at all, and a proven domain certificate (slices too) agrees with
CP-SAT placing nothing."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders import model, pod, podgroup
from tests.features.topology.kueue.helpers import (
    BLOCK,
    HOST,
    PREFERRED,
    RACK,
    REQUIRED,
    SLICE_LEVEL,
    SLICE_SIZE,
    THREE,
    UNCONSTRAINED,
    cluster,
    nodes_of,
    run,
    topology,
)

GROUP = "scheduling.x-k8s.io/pod-group"
POD_SET = "kueue.x-k8s.io/podset"

REQUESTS = st.sampled_from(
    [
        {REQUIRED: BLOCK},
        {REQUIRED: RACK},
        {REQUIRED: HOST},
        {PREFERRED: RACK},
        {PREFERRED: HOST},
        {UNCONSTRAINED: "true"},
        {REQUIRED: BLOCK, SLICE_LEVEL: HOST, SLICE_SIZE: "2"},
        {REQUIRED: BLOCK, SLICE_LEVEL: RACK, SLICE_SIZE: "2"},
        {PREFERRED: BLOCK, SLICE_LEVEL: RACK, SLICE_SIZE: "2"},
        {SLICE_LEVEL: RACK, SLICE_SIZE: "2"},
    ]
)


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[str], int, dict[str, str]]:
    nodes = []
    for b in range(draw(st.integers(1, 2))):
        for r in range(draw(st.integers(1, 2))):
            for x in range(draw(st.integers(1, 3))):
                nodes.append(f"b{b}/r{r}/x{b}{r}{x}:{draw(st.integers(0, 4))}")
    request = draw(REQUESTS)
    count = draw(st.integers(1, 8))
    if SLICE_SIZE in request:
        count = 2 * max(1, count // 2)
    return nodes, count, request


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_cpsat_is_never_worse_and_sets_stay_whole(
    case: tuple[list[str], int, dict[str, str]],
) -> None:
    nodes, count, request = case
    question = cluster(nodes, THREE, count, request)
    greedy = run(question, "greedy")
    cpsat = run(question, "cpsat")
    assert cpsat.objective >= greedy.objective, (greedy.tiers, cpsat.tiers)
    for decision in (greedy, cpsat):
        placed = sum(1 for p in decision.placements.values() if p.node)
        assert placed in (0, count)
        cert = decision.certificates.get("default/job")
        if cert is not None and cert.proven and cert.kind == "domain":
            assert not any(p.node for p in cpsat.placements.values()), cert.sentence


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.integers(0, 3))
def test_a_proof_for_one_of_two_pod_sets_agrees_with_cpsat(
    case: tuple[list[str], int, dict[str, str]], driver_cpu: int
) -> None:
    """A workload of two pod sets (a driver without topology beside the workers): a proven
    domain certificate means CP-SAT places nothing."""
    nodes, count, request = case
    members = [
        pod("job-driver").requests(cpu=str(driver_cpu)).label(GROUP, "job").obj(),
    ]
    members[0]["metadata"]["labels"][POD_SET] = "driver"
    for i in range(count):
        b = pod(f"job-w{i}").requests(cpu="1").label(GROUP, "job").label(POD_SET, "workers")
        for key, value in request.items():
            b = b.annotate(key, value)
        members.append(b.obj())
    question = model(*nodes_of(nodes), *topology(THREE), podgroup("job", count + 1), *members)
    cpsat = run(question, "cpsat")
    for decision in (run(question, "greedy"), cpsat):
        cert = decision.certificates.get("default/job")
        if cert is not None and cert.proven and cert.kind == "domain":
            assert not cpsat.podgroups["default/job"].placed, cert.sentence
