"""Property tests: for random clusters and gang jobs, every Decision passes `verify`."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver import SchedulerConf, solve, verify
from solver.config import PluginConf, TierConf
from solver.model import ClusterModel
from tests.builders import groups_annotation, model, node, pod, podgroup

POLICIES = ["", "once-satisfied", "waiting-and-running", "only-waiting"]
TASK_SPEC = "volcano.sh/task-spec"


@st.composite
def clusters(draw: st.DrawFn) -> ClusterModel:
    objects: list[dict[str, Any]] = []
    num_nodes = draw(st.integers(1, 5))
    node_names = [f"n{i}" for i in range(num_nodes)]
    for name in node_names:
        b = node(name).cpu(str(draw(st.integers(2, 16)))).gpu(draw(st.sampled_from([0, 2, 4, 8])))
        b.pods(draw(st.integers(2, 12)))
        if draw(st.booleans()):
            b.label("zone", draw(st.sampled_from(["a", "b"])))
        if draw(st.integers(0, 4)) == 0:
            b.taint("dedicated", "x")
        if draw(st.integers(0, 9)) == 0:
            b.cordon()
        objects.append(b.obj())

    def a_pod(name: str) -> Any:
        p = pod(name).requests(cpu=draw(st.integers(1, 4)), gpu=draw(st.integers(0, 3)))
        if draw(st.integers(0, 3)) == 0:
            p.selector(zone=draw(st.sampled_from(["a", "b"])))
        if draw(st.booleans()):
            p.tolerate("dedicated", "x", "NoSchedule")
        p.priority(draw(st.integers(0, 2)))
        if draw(st.integers(0, 5)) == 0:
            p.on(draw(st.sampled_from(node_names)))
        return p

    num_gangs = draw(st.integers(1, 4))
    gang_ids = [f"default/g{i}" for i in range(num_gangs)]
    for i in range(num_gangs):
        size = draw(st.integers(1, 5))
        annotations: dict[str, str] = {}
        policy = draw(st.sampled_from(POLICIES))
        if policy:
            annotations["gang.scheduling.koordinator.sh/match-policy"] = policy
        if num_gangs > 1 and draw(st.booleans()):
            members = draw(st.lists(st.sampled_from(gang_ids), min_size=1, max_size=3, unique=True))
            annotations.update(groups_annotation(f"default/g{i}", *members))
        group = podgroup(f"g{i}", draw(st.integers(1, size + 1)), **annotations)
        roles = ["" for _ in range(size)]
        if draw(st.integers(0, 3)) == 0:  # a Volcano job with task roles and their minimums
            group = podgroup(f"g{i}", group["spec"]["minMember"], "volcano", **annotations)
            roles = [draw(st.sampled_from(["master", "worker"])) for _ in range(size)]
            group["spec"]["minTaskMember"] = {
                role: draw(st.integers(0, 2)) for role in draw(st.sets(st.sampled_from(roles)))
            }
        objects.append(group)
        for j, role in enumerate(roles):
            member = a_pod(f"g{i}-{j}")
            if role:
                member.annotate("scheduling.k8s.io/group-name", f"g{i}").annotate(TASK_SPEC, role)
            else:
                member.group(f"g{i}")
            objects.append(member.obj())
    objects.extend(a_pod(f"solo{j}").obj() for j in range(draw(st.integers(0, 3))))
    return model(*objects)


CONFS = [
    SchedulerConf.default(),
    SchedulerConf(
        tiers=(TierConf(plugins=[PluginConf(name="predicates"), PluginConf(name="binpack")]),)
    ),
    SchedulerConf(tiers=(TierConf(plugins=[PluginConf(name="gang")]),)),
]


def check_decision(cluster: ClusterModel, conf: SchedulerConf) -> None:
    decision = solve(cluster, conf, engine="greedy")
    assert verify(cluster, conf, decision) == []
    # A gang is never half-placed: in a GangGroup with no bound member (so no match policy
    # relaxes minMember), a gang's placed pods are 0 or at least minMember.
    if conf.enabled("gang"):
        linked: dict[str, set[str]] = {gid: {gid} for gid in cluster.gangs}
        for gid, gang in cluster.gangs.items():
            for other in gang.groups:
                if other in linked:
                    merged = linked[gid] | linked[other]
                    for member in merged:
                        linked[member] = merged
        for gid, gang in cluster.gangs.items():
            if any(
                cluster.pod_by_key[k].bound for o in linked[gid] for k in cluster.gangs[o].members
            ):
                continue
            placed = [k for k in gang.members if decision.placements[k].node]
            assert not placed or len(placed) >= gang.min_member, gid
            roles = gang.role_minimums()  # Volcano's task roles: each at its minimum
            for role, least in roles.items() if placed else ():
                got = [
                    k for k in placed if cluster.pod_by_key[k].annotations.get(TASK_SPEC) == role
                ]
                assert len(got) >= least, (gid, role)
    # Every pending pod gets an answer, and every pod left pending says why.
    assert set(decision.placements) == {p.key for p in cluster.pending_pods}
    assert all(p.node or p.reason for p in decision.placements.values())


@given(clusters(), st.sampled_from(CONFS))
def test_every_greedy_decision_passes_verify(cluster: ClusterModel, conf: SchedulerConf) -> None:
    check_decision(cluster, conf)


@pytest.mark.slow
@settings(max_examples=2000)
@given(clusters(), st.sampled_from(CONFS))
def test_every_greedy_decision_passes_verify_long(
    cluster: ClusterModel, conf: SchedulerConf
) -> None:
    check_decision(cluster, conf)
