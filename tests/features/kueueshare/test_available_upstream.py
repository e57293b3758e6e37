"""Kueue's available and potentially available quota, translated from upstream's table.

Source: kubernetes-sigs/kueue `pkg/cache/scheduler/resource_test.go` (`TestAvailable`),
one row per case name. Upstream's `Resource("cpu", nominal, borrowingLimit, lendingLimit)`
is `(nominal, B, L)` here, CPU in milli-CPU; before any usage, available equals
potentially available (upstream checks that too).

    "hierarchical cohort respects borrowing limit"
                 root
               5/    \\
             left    right -- right-cq
            /   5\\
     left-cq1     left-cq2
"""

from __future__ import annotations

import pytest

from solver.features.kueueshare import KueueNodes
from tests.features.kueueshare.test_drs_upstream import spec

R = "red/cpu"
B = "blue/cpu"


def cq(cohort: str | None, **quotas: tuple) -> tuple:
    return cohort, spec("ClusterQueue", {k.replace("_", "/"): v for k, v in quotas.items()})


def cohort(parent: str | None, **quotas: tuple) -> tuple:
    return parent, spec("Cohort", {k.replace("_", "/"): v for k, v in quotas.items()})


N = None
CASES = {
    # name: (tree, usage, want available, want potentially available)
    "base cqs": (
        {"cq1": cq(N, red_cpu=(0, N, N)), "cq2": cq(N, red_cpu=(5000, N, N), blue_cpu=(10000, N, N))},
        {"cq1": {R: 1000}, "cq2": {R: 2500, B: 1000}},
        {"cq1": {R: 0}, "cq2": {R: 2500, B: 9000}},
        {"cq1": {R: 0}, "cq2": {R: 5000, B: 10000}},
    ),
    "cqs with cohort": (
        {"cq1": cq("cohort", red_cpu=(10000, N, N)), "cq2": cq("cohort", red_cpu=(10000, N, 9000)),
         "cohort": cohort(N, red_cpu=(10000, N, N))},
        {"cq1": {R: 1000}, "cq2": {R: 500}},
        {"cq1": {R: 28000}, "cq2": {R: 28500}},
        {"cq1": {R: 29000}, "cq2": {R: 30000}},
    ),
    "cq borrows from cohort": (
        {"cq1": cq("cohort", red_cpu=(10000, N, N)), "cohort": cohort(N, red_cpu=(10000, N, N))},
        {"cq1": {R: 11000}},
        {"cq1": {R: 9000}},
        {"cq1": {R: 20000}},
    ),
    "cq oversubscription spills into cohort": (
        {"cq1": cq("cohort", red_cpu=(10000, N, N)), "cq2": cq("cohort", red_cpu=(10000, 0, 0)),
         "cohort": cohort(N, red_cpu=(10000, N, N))},
        {"cq1": {R: 31000}},
        {"cq1": {R: 0}, "cq2": {R: 0}},
        {"cq1": {R: 20000}, "cq2": {R: 10000}},
    ),
    "lending and borrowing limits respected": (
        {"cq1": cq("cohort", red_cpu=(10000, N, N)), "cq2": cq("cohort", red_cpu=(10000, 2000, N)),
         "cq3": cq("cohort", red_cpu=(10000, N, 5000)), "cohort": cohort(N, red_cpu=(10000, N, N))},
        {"cq1": {R: 20000}, "cq2": {R: 10000}, "cq3": {R: 6000}},
        {"cq1": {R: 4000}, "cq2": {R: 2000}, "cq3": {R: 4000}},
        {"cq1": {R: 35000}, "cq2": {R: 12000}, "cq3": {R: 40000}},
    ),
    "hierarchical cohort": (
        {"cq1": cq("left", red_cpu=(10000, N, N)), "cq2": cq("right", red_cpu=(10000, N, 0)),
         "root": cohort(N), "left": cohort("root", red_cpu=(10000, N, N)),
         "right": cohort("root", red_cpu=(10000, N, N))},
        {"cq1": {R: 10000}, "cq2": {R: 5000}},
        {"cq1": {R: 20000}, "cq2": {R: 25000}},
        {"cq1": {R: 30000}, "cq2": {R: 40000}},
    ),
    "hierarchical cohort respects borrowing limit": (
        {"left-cq1": cq("left", red_cpu=(10000, N, N)),
         "left-cq2": cq("left", red_cpu=(10000, 5000, N)),
         "right-cq": cq("right", red_cpu=(10000, N, N)),
         "root": cohort(N), "left": cohort("root", red_cpu=(10000, 5000, N)),
         "right": cohort("root", red_cpu=(10000, N, N))},
        {},
        {"left-cq1": {R: 35000}, "left-cq2": {R: 15000}, "right-cq": {R: 50000}},
        {"left-cq1": {R: 35000}, "left-cq2": {R: 15000}, "right-cq": {R: 50000}},
    ),
    "hierarchical cohort respects lending limit": (
        {"left-cq1": cq("left", red_cpu=(10000, N, 5000)),
         "left-cq2": cq("left", red_cpu=(10000, N, N)),
         "right-cq": cq("right", red_cpu=(0, N, N)), "root-cq": cq("root", red_cpu=(0, N, N)),
         "root": cohort(N), "left": cohort("root", red_cpu=(0, N, 5000)),
         "right": cohort("root", red_cpu=(0, N, N))},
        {},
        {"left-cq1": {R: 20000}, "left-cq2": {R: 15000}, "right-cq": {R: 5000}, "root-cq": {R: 5000}},
        {"left-cq1": {R: 20000}, "left-cq2": {R: 15000}, "right-cq": {R: 5000}, "root-cq": {R: 5000}},
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CASES))
def test_available(name: str) -> None:
    tree, usage, want_available, want_potential = CASES[name]
    nodes = KueueNodes.build(tree)
    for q, frs in want_potential.items():  # before any usage: available == potential
        for fr, v in frs.items():
            assert max(0, nodes.available(q, fr)) == v, (q, fr)
            assert nodes.potential(q, fr) == v, (q, fr)
    for q, frs in usage.items():
        nodes.add_all(q, frs)
    for q, frs in want_available.items():
        for fr, v in frs.items():
            assert max(0, nodes.available(q, fr)) == v, (q, fr)
            assert nodes.potential(q, fr) == want_potential[q][fr], (q, fr)
    for q, frs in usage.items():  # removing the usage gives the start back
        nodes.add_all(q, frs, sign=-1)
    for q, frs in want_potential.items():
        for fr, v in frs.items():
            assert max(0, nodes.available(q, fr)) == v, (q, fr)
