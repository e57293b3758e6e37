"""Certificates are proofs: on random clusters, a certificate that says a gang cannot run
agrees with CP-SAT on that gang alone (it places none of it), and one that says the room
went to others is right that the gang alone is placed (and verified)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver import SchedulerConf, solve, verify
from solver.config import PluginConf
from solver.model import ClusterModel
from solver.schedule import snapshot_of
from solver.snapshot import Workload
from tests.builders import (
    BLOCK,
    SPINE,
    gather,
    model,
    node,
    pod,
    podgroup,
    queue,
    spine_block_topology,
)
from tests.test_properties import CONFS, clusters

HOST = "kubernetes.io/hostname"

CANNOT_RUN = ("capacity", "pods", "predicates", "domain", "quota", "rules", "devices", "blocked")


def _check(cluster: ClusterModel, conf: SchedulerConf, engine: str) -> None:
    decision = solve(cluster, conf, engine=engine, workers=1, time_limit=5)
    snapshot = snapshot_of(cluster)
    for gang, cert in decision.certificates.items():
        if not cert.proven or cert.kind not in (*CANNOT_RUN, "competition"):
            continue
        own = [p for p in cluster.pods if p.key == gang and p.gang == gang]  # a pod alone
        alone = Workload.of(snapshot, pods=own) if own else Workload.of(snapshot, gang_ids=[gang])
        if not conf.enabled("gang") and gang in alone.gangs:
            # without the gang plugin no GangGroup binds: the gang alone is just its own pods
            mine = tuple(p for p in alone.pods if p.gang == gang)
            alone = Workload(pods=mine, gangs={gang: alone.gangs[gang]})
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


@st.composite
def rich_clusters(draw: st.DrawFn) -> ClusterModel:
    """Nodes in a spine/block tree with hostnames, queues with capabilities (one nested),
    gangs that MustGather, sit in a queue, repel each other per node or spread by block."""
    objects: list[dict[str, Any]] = [spine_block_topology(), queue("top", capability={"cpu": "12"})]
    objects.append(queue("leaf", "top", capability={"cpu": str(draw(st.integers(2, 16)))}))
    names = [f"n{i}" for i in range(draw(st.integers(2, 6)))]
    for i, name in enumerate(names):
        b = node(name).cpu(str(draw(st.integers(2, 8)))).gpu(draw(st.sampled_from([0, 2, 4])))
        b.label(SPINE, f"s{i % 2}").label(BLOCK, f"b{i % 3}").label(HOST, name)
        objects.append(b.obj())
        if draw(st.integers(0, 3)) == 0:
            objects.append(pod(f"run-{name}").requests(cpu="1").label("app", "g0").on(name).obj())
    for g in range(draw(st.integers(1, 3))):
        size = draw(st.integers(1, 5))
        annotations: dict[str, str] = {}
        if draw(st.booleans()):
            annotations.update(
                gather((draw(st.sampled_from(["SpineLayer", "BlockLayer"])), "MustGather"))
            )
        group = podgroup(f"g{g}", draw(st.integers(1, size)), **annotations)
        if draw(st.booleans()):
            group["spec"]["queue"] = draw(st.sampled_from(["top", "leaf"]))
        objects.append(group)
        rule = draw(st.sampled_from(["", "anti", "spread"]))
        for j in range(size):
            p = pod(f"g{g}-{j}").group(f"g{g}").label("app", f"g{g}")
            p.requests(cpu=draw(st.integers(1, 3)), gpu=draw(st.integers(0, 2)))
            if rule == "anti":
                p.anti_affinity(HOST, app=f"g{g}")
            elif rule == "spread":
                p.spread(BLOCK, 1, app=f"g{g}")
            objects.append(p.obj())
    return model(*objects)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rich_clusters(), st.sampled_from(["greedy", "auto"]))
def test_certificates_with_domains_queues_and_terms(cluster: ClusterModel, engine: str) -> None:
    _check(cluster, SchedulerConf.default(), engine)


@pytest.mark.slow
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rich_clusters(), st.sampled_from(["greedy", "cpsat", "auto"]))
def test_certificates_with_domains_queues_and_terms_long(
    cluster: ClusterModel, engine: str
) -> None:
    _check(cluster, SchedulerConf.default(), engine)


@st.composite
def queued_clusters(draw: st.DrawFn) -> ClusterModel:
    """Volcano jobs with minResources in a queue tree (top over leaves a and b, random
    capabilities): the enqueue walk admits some and refuses others, for a rule of their own
    or because jobs admitted ahead took the room."""
    objects: list[dict[str, Any]] = [
        queue("top", capability={"cpu": str(draw(st.integers(2, 12)))})
    ]
    for leaf in ("a", "b"):
        objects.append(queue(leaf, "top", capability={"cpu": str(draw(st.integers(1, 10)))}))
    for i in range(draw(st.integers(1, 3))):
        objects.append(node(f"n{i}").cpu(str(draw(st.integers(1, 8)))).obj())
    for j in range(draw(st.integers(1, 4))):
        size, cpu = draw(st.integers(1, 4)), draw(st.integers(1, 3))
        group = podgroup(f"j{j}", size, "volcano")
        group["spec"].update(queue=draw(st.sampled_from(["a", "b"])),
                             minResources={"cpu": str(size * cpu)})  # fmt: skip
        objects.append(group)
        for k in range(size):
            p = pod(f"j{j}-{k}").annotate("scheduling.k8s.io/group-name", f"j{j}")
            objects.append(p.requests(cpu=cpu).obj())
    return model(*objects)


def _overcommitted() -> SchedulerConf:
    """The default conf with Volcano's `overcommit` (factor 1.0): a cluster-wide enqueue
    gate beside the queues' own."""
    conf = SchedulerConf.default()
    first, *rest = conf.tiers
    more = PluginConf(name="overcommit", arguments={"overcommit-factor": 1.0})
    return conf.model_copy(update={"tiers": (first.model_copy(
        update={"plugins": (*first.plugins, more)}), *rest)})  # fmt: skip


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queued_clusters(), st.sampled_from(["greedy", "auto"]), st.booleans())
def test_enqueue_refusals_are_proofs_or_competition(
    cluster: ClusterModel, engine: str, overcommit: bool
) -> None:
    """A job refused at enqueue is `blocked` only when, alone, its queue (and `overcommit`'s
    cluster-wide gate) would refuse it too (CP-SAT places none of it); refused because of
    jobs admitted ahead, it is `competition`: alone it is admitted and placed (verified)."""
    _check(cluster, _overcommitted() if overcommit else SchedulerConf.default(), engine)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(clusters(), rich_clusters()))
def test_auto_proves_by_impossible_gangs_only_what_cpsat_confirms(cluster: ClusterModel) -> None:
    """`auto` proves the greedy's answer without a model when every gang it left out is
    impossible: CP-SAT, proving its own optimum, finds nothing better."""
    conf = SchedulerConf.default()
    decision = solve(cluster, conf, engine="auto", workers=1, seed=0)
    if not decision.stats.get("impossible_gangs"):
        return
    assert decision.status in ("OPTIMAL", "INFEASIBLE") and "vars_after" not in decision.stats
    exact = solve(cluster, conf, engine="cpsat", workers=1, seed=0, time_limit=10)
    if exact.status == "OPTIMAL":
        assert exact.objective == decision.objective, (exact.tiers, decision.tiers)
