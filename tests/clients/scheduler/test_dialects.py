"""Every dialect read from the cluster gives the Decision the same objects get from
`gangplan schedule -f`: the bundled examples (workload objects expanded into the pods
their controllers would create) are created in the fake API server, the
scheduler decides in shadow mode (no writes), and its placements are compared pod by pod
with the library's answer on the files."""

from __future__ import annotations

from pathlib import Path

import pytest

import gangplan
from clients.kubefake import load
from solver.kube import expand_workloads, read_sources
from tests.clients.scheduler.conftest import Harness, wait_until

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = [
    "examples/ganggroup-gpu.yaml",
    "examples/dialects/godel.yaml",
    "examples/dialects/koordinator-annotations.yaml",
    "examples/dialects/volcano.yaml",
    "examples/dialects/workload-api.yaml",
    "examples/dialects/kai.yaml",
    "examples/topology/koordinator-gather.yaml",
    "examples/topology/godel-job-affinity.yaml",
    "examples/topology/kueue-tas.yaml",
    "examples/topology/kueue-job.yaml",
    "examples/topology/volcano-hypernode.yaml",
    "examples/topology/volcano-subgroup.yaml",
    "examples/topology/kai-subgroups.yaml",
    "examples/queues/hierarchy-engineering.yaml",
    "examples/interpod",
]


def _expected(path: str) -> tuple[dict[str, str], set[str], str]:
    model = gangplan.load(str(ROOT / path))
    decision = gangplan.schedule(model, engine="greedy")
    placed = {k: p.node for k, p in decision.placements.items() if p.node}
    names = {p.scheduler_name for p in model.pods if not p.node_name}
    return placed, names, " ".join(model.notes)


@pytest.mark.parametrize("path", EXAMPLES)
def test_a_dialect_read_from_the_cluster_decides_as_the_files_do(
    cluster: Harness, path: str
) -> None:
    expected, names, skipped = _expected(path)
    # workload objects (Job, JobSet, a Kueue Workload...) become pods as their controllers
    # would make them in a cluster: those pods are what the scheduler reads
    expanded, _ = expand_workloads(read_sources([str(ROOT / path)]))
    objects = [raw.body for raw in expanded]
    # a kind the fake does not serve is one gangplan's reader skips too
    for note in load(cluster.api.store, objects):
        assert f"skipped {note.removeprefix('not served by the fake: ')}" in skipped
    service = cluster.scheduler(dry_run=True, scheduler_names=frozenset(names), engine="greedy")
    shadow = wait_until(lambda: service.cycle.shadow, what="a decision")
    got = {
        pod: node
        for entry in shadow.values()
        if entry["placed"]
        for pod, node in entry["pods"].items()
    }
    assert got == expected
    assert cluster.api.store.counts.get("BIND", 0) == 0
    assert cluster.api.store.counts.get("PATCH", 0) == 0
    assert cluster.api.store.counts.get("POST", 0) == 0  # no Event either
