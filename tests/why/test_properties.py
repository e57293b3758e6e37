"""Certificates are proofs: on random clusters, a certificate that says a gang cannot run
agrees with CP-SAT on that gang alone (it places none of it), and one that says the room
went to others is right that the gang alone is placed (and verified)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver import SchedulerConf, solve, verify
from solver.model import ClusterModel
from solver.schedule import snapshot_of
from solver.snapshot import Workload
from tests.test_properties import CONFS, clusters

CANNOT_RUN = ("capacity", "pods", "predicates", "domain", "quota", "rules")


def _check(cluster: ClusterModel, conf: SchedulerConf, engine: str) -> None:
    decision = solve(cluster, conf, engine=engine, workers=1, time_limit=5)
    snapshot = snapshot_of(cluster)
    for gang, cert in decision.certificates.items():
        if not cert.proven or cert.kind not in (*CANNOT_RUN, "competition"):
            continue
        own = [p for p in cluster.pods if p.key == gang and p.gang == gang]  # a pod alone
        alone = Workload.of(snapshot, pods=own) if own else Workload.of(snapshot, gang_ids=[gang])
        members = set(alone.gangs[gang].members) if gang in alone.gangs else {gang}
        answer = solve(snapshot, conf, workload=alone, engine="cpsat", workers=1, time_limit=5)
        placed = {k for k in members if answer.placements.get(k) and answer.placements[k].node}
        outcome = answer.podgroups.get(gang)
        ran = outcome.placed if outcome is not None else bool(placed)  # else: a pod alone
        assert ran == (cert.kind == "competition"), (gang, cert.sentence, answer.placed)
        assert verify(snapshot, conf, answer, alone) == []


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.sampled_from(CONFS), st.sampled_from(["greedy", "auto"]))
def test_certificates_agree_with_cpsat_on_the_gang_alone(
    cluster: ClusterModel, conf: SchedulerConf, engine: str
) -> None:
    _check(cluster, conf, engine)


@pytest.mark.slow
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.sampled_from(CONFS), st.sampled_from(["greedy", "cpsat", "auto"]))
def test_certificates_agree_with_cpsat_on_the_gang_alone_long(
    cluster: ClusterModel, conf: SchedulerConf, engine: str
) -> None:
    _check(cluster, conf, engine)
