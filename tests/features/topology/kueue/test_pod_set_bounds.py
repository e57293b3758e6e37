"""Proofs for Kueue pod sets beyond a whole gang of one pod set (issue 40: "dialects
without a bound"): a pod set in slices (a domain holds at most the whole slices its slice
domains take), a pod set beside others in its workload (it must fit alone, whatever they
take) — each a certificate CP-SAT on the gang alone confirms; and such a workload placed
whole or not at all.

    defaultNodes (1 cpu each, x4 2)    b1 ─┬─ r1: x3          b2 ─┬─ r1: x2
                                           └─ r2: x5 x1 x6         └─ r2: x4:2
"""

from __future__ import annotations

import pytest

from solver.model import ClusterModel
from tests.builders import model, pod, podgroup
from tests.features.topology.kueue.helpers import (
    BLOCK,
    DEFAULT,
    RACK,
    REQUIRED,
    SLICE_LEVEL,
    SLICE_SIZE,
    THREE,
    cluster,
    nodes_of,
    run,
    topology,
)

GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
POD_SET = "kueue.x-k8s.io/podset"

ENGINES = ["greedy", "cpsat"]


def sliced(count: int, size: int) -> dict[str, str]:
    return {REQUIRED: BLOCK, SLICE_LEVEL: RACK, SLICE_SIZE: str(size)}


@pytest.mark.parametrize("engine", ENGINES)
def test_no_block_holds_two_rack_slices_of_two(engine: str) -> None:
    """4 pods in slices of 2 by rack: b1 holds one slice (r2's 3 nodes), b2 one (x4's 2
    cpu); the room alone (b1: 4 cpu) would let 4 pods into b1."""
    d = run(cluster(DEFAULT, THREE, 4, sliced(4, 2)), engine)
    assert not d.placed
    cert = d.certificates["default/job"]
    assert cert.proven and cert.kind == "domain" and (cert.needed, cert.offered) == (2, 1)
    assert cert.sentence.startswith(
        "gang default/job needs 2 slices of 2 pods of 1 cpu inside one "
        "cloud.com/topology-block domain, in slices of 2 inside one cloud.com/topology-rack "
        "each (Kueue required); the most any offers is 1 (b1)"
    ), cert.sentence


@pytest.mark.parametrize("engine", ENGINES)
def test_a_block_that_holds_the_slices_gets_no_proof(engine: str) -> None:
    d = run(cluster(DEFAULT, THREE, 2, sliced(2, 2)), engine)
    assert len(d.placed) == 2 and "default/job" not in d.certificates


def two_pod_sets(workers: dict[str, str], count: int, nodes: list[str] = DEFAULT) -> ClusterModel:
    """One workload of two pod sets: `driver` (1 pod, no topology) and `workers`."""
    members = [
        pod("job-driver").requests(cpu="1").label(GROUP_LABEL, "job").label(POD_SET, "driver").obj()
    ]
    for i in range(count):
        b = pod(f"job-w{i}").requests(cpu="1").label(GROUP_LABEL, "job").label(POD_SET, "workers")
        for key, value in workers.items():
            b = b.annotate(key, value)
        members.append(b.obj())
    return model(*nodes_of(nodes), *topology(THREE), podgroup("job", count + 1), *members)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("workers", "needed", "sentence"),
    [
        (
            {REQUIRED: BLOCK},
            5000,
            "gang default/job needs 5 cpu inside one cloud.com/topology-block domain (Kueue "
            "required: pod set workers); the largest offers 4 (b1), the next 3 (b2)",
        ),
        (
            sliced(4, 2),
            2,
            "gang default/job needs 2 slices of 2 pods of 1 cpu inside one "
            "cloud.com/topology-block domain, in slices of 2 inside one "
            "cloud.com/topology-rack each (Kueue required); the most any offers is 1 (b1)",
        ),
    ],
)
def test_a_pod_set_beside_another_has_its_own_proof(
    engine: str, workers: dict[str, str], needed: int, sentence: str
) -> None:
    """The workers' pod set cannot fit one block (5 pods of 1 cpu; b1 has 4) or its slices
    (as above), whatever the driver takes: a proof, where only a gang of one pod set had
    one before."""
    count = 5 if SLICE_SIZE not in workers else 4
    d = run(two_pod_sets(workers, count), engine)
    assert not d.placed
    cert = d.certificates["default/job"]
    assert cert.proven and cert.kind == "domain" and cert.needed == needed
    assert cert.sentence.startswith(sentence), cert.sentence


@pytest.mark.parametrize("engine", ENGINES)
def test_a_pod_set_without_topology_is_placed_with_the_workload(engine: str) -> None:
    """Found by the property test: the greedy placed the workers' pod set and left the
    driver (no topology request) pending, a gang below its minMember that failed
    verification on both engines. Kueue admits the workload whole: both, or neither."""
    d = run(two_pod_sets({REQUIRED: BLOCK}, 3), engine)
    assert d.podgroups["default/job"].placed
    assert all(p.node for p in d.placements.values())
    assert not d.stats.get("verify_fallback")
    full = run(
        two_pod_sets({REQUIRED: BLOCK}, 3, ["b1/r1/x3:1", "b1/r2/x5:1", "b1/r2/x1:1"]), engine
    )
    assert not any(p.node for p in full.placements.values())
    assert not full.stats.get("verify_fallback")
