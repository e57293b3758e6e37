"""Random pods with random affinity, anti-affinity and spread terms: every Decision of
either engine passes `verify`, and CP-SAT is never worse than the greedy."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver import SchedulerConf, solve, verify
from solver.model import ClusterModel
from tests.builders import model, node, pod, podgroup

HOST = "kubernetes.io/hostname"
APPS = ["a", "b"]


@st.composite
def clusters(draw: st.DrawFn) -> ClusterModel:
    objects: list[dict[str, Any]] = []
    names = [f"n{i}" for i in range(draw(st.integers(2, 6)))]
    for name in names:
        b = node(name).cpu(str(draw(st.integers(2, 8)))).label(HOST, name)
        if draw(st.integers(0, 5)):
            b.label("zone", draw(st.sampled_from(["z1", "z2", "z3"])))
        objects.append(b.obj())

    def with_terms(p: Any) -> Any:
        p.label("app", draw(st.sampled_from(APPS)))
        for _ in range(draw(st.integers(0, 2))):
            kind = draw(st.sampled_from(["anti", "affinity", "spread"]))
            key = draw(st.sampled_from([HOST, "zone"]))
            app = draw(st.sampled_from(APPS))
            if kind == "anti":
                p.anti_affinity(key, app=app)
            elif kind == "affinity":
                p.pod_affinity(key, app=app)
            else:
                p.spread(key, draw(st.integers(1, 2)), app=app)
        return p

    for i in range(draw(st.integers(0, 3))):
        r = pod(f"run-{i}").requests(cpu="1").on(draw(st.sampled_from(names)))
        r.label("app", draw(st.sampled_from(APPS)))
        if draw(st.booleans()):
            r.anti_affinity(draw(st.sampled_from([HOST, "zone"])), app=draw(st.sampled_from(APPS)))
        objects.append(r.obj())
    for g in range(draw(st.integers(1, 2))):
        size = draw(st.integers(1, 4))
        objects.append(podgroup(f"g{g}", draw(st.integers(1, size))))
        shape_terms = draw(st.booleans())  # one shape for the gang, or each pod its own
        base = with_terms(pod("x"))
        for j in range(size):
            p = pod(f"g{g}-{j}").requests(cpu=str(draw(st.integers(1, 3)))).group(f"g{g}")
            if shape_terms:
                p.body["spec"]["affinity"] = base.body["spec"].get("affinity", {})
                p.body["spec"]["topologySpreadConstraints"] = base.body["spec"].get(
                    "topologySpreadConstraints", []
                )
                p.label("app", base.body["metadata"]["labels"]["app"])
            else:
                with_terms(p)
            objects.append(p.obj())
    return model(*objects)


def _check(cluster: ClusterModel) -> None:
    conf = SchedulerConf.default()
    greedy = solve(cluster, conf, engine="greedy")
    assert verify(cluster, conf, greedy) == []
    exact = solve(cluster, conf, engine="cpsat", workers=1, seed=0, time_limit=5)
    assert verify(cluster, conf, exact) == []
    assert exact.objective >= greedy.objective


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_both_engines_pass_verify_and_cpsat_is_never_worse(cluster: ClusterModel) -> None:
    _check(cluster)


@pytest.mark.slow
@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_both_engines_pass_verify_and_cpsat_is_never_worse_long(cluster: ClusterModel) -> None:
    _check(cluster)
