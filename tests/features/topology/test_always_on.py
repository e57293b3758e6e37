"""Rules the objects carry themselves hold whatever plugins the conf lists: a Workload API
PodGroup's topology constraint (kube-scheduler enforces it with no plugin named) and a
Kueue TAS pod set. With a kube-scheduler-like conf (predicates, gang, binpack) the
constraint was not compiled, yet verify enforced it: "decision failed verification"."""

from __future__ import annotations

from pathlib import Path

import pytest

from solver import conf_from_text, load_manifests, schedule, solve, verify

ROOT = Path(__file__).parents[3]
CONF = conf_from_text(
    "actions: allocate\ntiers:\n- plugins:\n  - name: predicates\n  - name: gang\n  - name: binpack\n",
    "kube-like.conf",
)


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_workload_api_topology_holds_without_a_topology_plugin(engine: str) -> None:
    cluster = load_manifests(str(ROOT / "examples/dialects/workload-api.yaml"))
    d = solve(cluster, CONF, engine=engine, workers=1, time_limit=10)  # no fallback
    assert not verify(cluster, CONF, d)
    racks = {(d.placements[f"ml/train-{i}"].node or "")[:5] for i in range(4)}
    assert racks == {"gpu-b"}


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_kueue_tas_holds_without_a_topology_plugin(engine: str) -> None:
    cluster = load_manifests(str(ROOT / "examples/topology/kueue-tas.yaml"))
    d = schedule(cluster, CONF, engine=engine, workers=1, time_limit=10)
    assert "verify_fallback" not in d.stats
    assert {a.pod_set for a in d.topology_assignments} == {"main", "workers"}
