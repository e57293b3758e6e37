"""A Kueue pod set in slices has a proof too (issue 40: "dialects without a bound"): a
domain holds at most the whole slices its slice domains take; fewer than the pod set's
slices in every domain is a certificate, which CP-SAT on the gang alone confirms.

    defaultNodes (1 cpu each, x4 2)    b1 ─┬─ r1: x3          b2 ─┬─ r1: x2
                                           └─ r2: x5 x1 x6         └─ r2: x4:2
"""

from __future__ import annotations

import pytest

from tests.features.topology.kueue.helpers import (
    BLOCK,
    DEFAULT,
    RACK,
    REQUIRED,
    SLICE_LEVEL,
    SLICE_SIZE,
    THREE,
    cluster,
    run,
)

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
