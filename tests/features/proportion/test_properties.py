"""Properties of `proportion`: the engine's water-fill and the verifier's, written apart,
agree; random queues with weights, running and competing jobs: every Decision of either
engine verified and within each queue's deserved share."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver import SchedulerConf, solve, verify
from solver.config import PluginConf, TierConf
from solver.features.proportion import Claim, water_fill
from solver.model import ClusterModel
from solver.quantity import UNLIMITED
from solver.verify._proportion import _fill
from tests.builders import model, node, queue, volcano_job

GPU = "nvidia.com/gpu"
CONF = SchedulerConf(
    actions=("enqueue", "allocate"),
    tiers=(TierConf(plugins=[PluginConf(name=n) for n in ("predicates", "gang", "proportion")]),),
)
RECLAIM = CONF.model_copy(update={"actions": ("enqueue", "allocate", "reclaim")})
DIMS = ["cpu", "memory", GPU]
amount = st.integers(0, 40)


@st.composite
def claims(draw: st.DrawFn) -> tuple[dict[str, int], dict[str, Claim]]:
    total = {r: draw(st.integers(0, 64)) for r in DIMS}
    out = {}
    for i in range(draw(st.integers(1, 6))):
        cap = {r: draw(st.sampled_from([UNLIMITED, 0, 4, 16])) for r in DIMS}
        out[f"q{i}"] = Claim(
            draw(st.integers(1, 5)),
            cap,
            {r: draw(amount) for r in DIMS},
            {r: draw(st.sampled_from([0, 0, 2])) for r in DIMS},
        )
    return total, out


@given(claims())
@settings(max_examples=200, deadline=None)
def test_the_two_water_fills_agree(world: tuple[dict[str, int], dict[str, Claim]]) -> None:
    total, given_claims = world
    mine = water_fill(total, given_claims)
    theirs = _fill(
        total,
        {q: c.weight for q, c in given_claims.items()},
        {q: dict(c.real_capability) for q, c in given_claims.items()},
        {q: dict(c.request) for q, c in given_claims.items()},
        {q: dict(c.guarantee) for q, c in given_claims.items()},
    )
    for q in given_claims:
        for r in DIMS:
            assert mine[q][r] == pytest.approx(theirs[q][r], abs=1e-6), (q, r)
            # never beyond what it asks for (unless guaranteed), nor its capability
            c = given_claims[q]
            assert mine[q][r] <= max(c.request[r], c.guarantee[r]) + 1e-9
            cap = c.real_capability[r]
            assert cap >= UNLIMITED or mine[q][r] <= max(cap, c.guarantee[r]) + 1e-9
    for r in DIMS:  # never more than the cluster, beyond the guarantees
        handed = sum(mine[q][r] for q in given_claims)
        floor = sum(c.guarantee[r] for c in given_claims.values())
        assert handed <= max(total[r], 0) + floor + 1e-6


@st.composite
def worlds(draw: st.DrawFn) -> ClusterModel:
    objects: list[dict[str, Any]] = [
        node(f"n{i}").cpu("32").gpu(draw(st.sampled_from([4, 8]))).obj()
        for i in range(draw(st.integers(1, 4)))
    ]
    names = [f"q{i}" for i in range(draw(st.integers(1, 4)))]
    for name in names:
        cap = draw(st.sampled_from([None, 2, 6, 12]))
        weight = draw(st.integers(1, 4))
        objects.append(queue(name, capability={GPU: cap} if cap else None, weight=weight))
    for j in range(draw(st.integers(1, 6))):
        size = draw(st.integers(1, 4))
        running = draw(st.integers(0, 4)) == 0
        job = volcano_job(
            f"j{j}",
            draw(st.sampled_from(names)),
            size,
            gpu=draw(st.integers(1, 2)),
            min_member=draw(st.integers(1, size)),
            priority=draw(st.integers(0, 1)),
            bound_on="n0" if running else None,
        )
        if draw(st.booleans()):
            del job[0]["spec"]["minResources"]
        objects += job
    return model(*objects)


@given(worlds(), st.sampled_from(["greedy", "cpsat"]), st.sampled_from([CONF, RECLAIM]))
@settings(max_examples=40, deadline=None)
def test_every_decision_verified(cluster: ClusterModel, engine: str, conf: SchedulerConf) -> None:
    d = solve(cluster, conf, engine=engine, workers=1, time_limit=20)
    assert verify(cluster, conf, d) == []


@pytest.mark.slow
@given(worlds(), st.sampled_from(["greedy", "cpsat"]), st.sampled_from([CONF, RECLAIM]))
@settings(max_examples=400, deadline=None)
def test_every_decision_verified_long(
    cluster: ClusterModel, engine: str, conf: SchedulerConf
) -> None:
    d = solve(cluster, conf, engine=engine, workers=1, time_limit=20)
    assert verify(cluster, conf, d) == []
