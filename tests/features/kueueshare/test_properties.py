"""Properties of Kueue's quotas: random cohort trees (up to three levels, cohorts with quota
of their own), ClusterQueues with one or two flavors (node pools), random nominal quotas,
borrowing and lending limits, weights and queueing strategies; running pods and competing
workloads.

* every Decision of either engine, classical or fair sharing, passes the independent
  verifier (`schedule` checks it: each pod on a node of its flavor, one flavor per pod set,
  `U ≤ SQ` at every root, `U ≤ SQ + borrowingLimit` under a limit);
* a gang is placed only if Kueue's cycles admitted it: the engines never place beyond the
  admission, and CP-SAT places no gang the greedy's admission refused;
* usage bubbles and comes back: adding then removing any workload's usage restores every
  node's usage (`add` and `remove` are inverse, as Kueue's `addUsage`/`removeUsage`).
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver import SchedulerConf, schedule, verify
from solver.features.kueueshare import kueue_nodes
from solver.kube import load_objects
from solver.schedule import snapshot_of
from tests.builders import raw

GPU = "nvidia.com/gpu"
KUEUE = "kueue.x-k8s.io/v1beta2"
amount = st.sampled_from([0, 1, 2, 4, 8])
limit = st.sampled_from([None, None, 0, 2, 4])


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[str]]:
    objects: list[dict[str, Any]] = []
    for i in range(4):
        objects.append({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": f"n{i}", "labels": {"pool": "a" if i < 2 else "b"}},
            "status": {"allocatable": {"cpu": "16", GPU: "4", "pods": "20"}},
        })  # fmt: skip
    for f in ("a", "b"):
        objects.append({"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": f},
                        "spec": {"nodeLabels": {"pool": f}}})  # fmt: skip

    def gpus(parent: bool) -> dict[str, Any]:
        """A GPU quota; limits only with a parent, lending at most the nominal quota (the
        webhook's rules)."""
        nominal = draw(amount)
        out: dict[str, Any] = {"name": GPU, "nominalQuota": nominal}
        if parent and (b := draw(limit)) is not None:
            out["borrowingLimit"] = b
        if parent and (lend := draw(limit)) is not None:
            out["lendingLimit"] = min(lend, nominal)
        return out

    def group(flavors: list[str], parent: bool) -> list[dict[str, Any]]:
        return [{
            "coveredResources": ["cpu", GPU],
            "flavors": [{"name": f, "resources": [{"name": "cpu", "nominalQuota": 64}, gpus(parent)]}
                        for f in flavors],
        }]  # fmt: skip

    cohorts = ["top", *(f"c{i}" for i in range(draw(st.integers(0, 2))))]
    for c in cohorts:
        spec: dict[str, Any] = {"parentName": "top"} if c != "top" else {}
        if draw(st.booleans()):
            spec["resourceGroups"] = group(["a"], c != "top")
        objects.append(
            {"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": c}, "spec": spec}
        )
    locals_ = []
    for k in range(draw(st.integers(1, 4))):
        cohort = draw(st.sampled_from([*cohorts, None]))
        flavors = draw(st.sampled_from([["a"], ["b"], ["a", "b"], ["b", "a"]]))
        objects.append({"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": f"q{k}"},
                        "spec": {**({"cohortName": cohort} if cohort else {}),
                                 "queueingStrategy": draw(st.sampled_from(["BestEffortFIFO", "StrictFIFO"])),
                                 "fairSharing": {"weight": draw(st.sampled_from(["0", "1", "2"]))},
                                 "resourceGroups": group(flavors, cohort is not None)}})  # fmt: skip
        objects.append({"apiVersion": KUEUE, "kind": "LocalQueue",
                        "metadata": {"name": "main", "namespace": f"t{k}"},
                        "spec": {"clusterQueue": f"q{k}"}})  # fmt: skip
        locals_.append(f"t{k}")
    for i in range(draw(st.integers(0, 4))):  # running pods
        ns = draw(st.sampled_from(locals_))
        objects.append({"apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": f"run{i}", "namespace": ns,
                                     "labels": {"kueue.x-k8s.io/queue-name": "main"}},
                        "spec": {"nodeName": f"n{draw(st.integers(0, 3))}", "containers": [
                            {"name": "c", "resources": {"requests": {"cpu": "1", GPU: "1"}}}]},
                        "status": {"phase": "Running"}})  # fmt: skip
    for j in range(draw(st.integers(1, 6))):  # pending workloads
        ns = draw(st.sampled_from(locals_))
        objects.append({"apiVersion": KUEUE, "kind": "Workload",
                        "metadata": {"name": f"w{j}", "namespace": ns,
                                     "creationTimestamp": f"2026-01-01T00:00:{j:02d}Z"},
                        "spec": {"queueName": "main", "podSets": [{
                            "name": "main", "count": draw(st.integers(1, 3)),
                            "template": {"spec": {"containers": [{"name": "c", "resources": {
                                "requests": {"cpu": "1", GPU: str(draw(st.integers(1, 4)))}}}]}}}]}})  # fmt: skip
    return objects, locals_


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.booleans())
def test_every_answer_is_verified_and_within_admission(case: Any, fair: bool) -> None:
    objects, _ = case
    snapshot = snapshot_of(load_objects(raw(*objects)))
    conf = SchedulerConf.default().model_copy(update={"fair_sharing": fair})
    greedy = schedule(snapshot, conf, engine="greedy")
    cpsat = schedule(snapshot, conf, engine="cpsat", time_limit=5, workers=1, seed=0)
    for d in (greedy, cpsat):
        assert verify(snapshot, conf, d) == []
        refused = {k for k, g in d.podgroups.items() if g.reason.startswith("not enqueued")}
        assert not refused & {k for k, g in d.podgroups.items() if g.placed}
    greedy_refused = {k for k, g in greedy.podgroups.items() if g.reason.startswith("not enqueued")}
    assert not greedy_refused & {k for k, g in cpsat.podgroups.items() if g.placed}


@settings(max_examples=40, deadline=None)
@given(clusters(), st.data())
def test_usage_added_then_removed_is_restored(case: Any, data: st.DataObject) -> None:
    objects, _ = case
    nodes = kueue_nodes(snapshot_of(load_objects(raw(*objects)))).copy()
    queues = sorted(n.name for n in nodes.cluster_queues())
    before = {n: dict(v.usage) for n, v in nodes.nodes.items()}
    cq = data.draw(st.sampled_from(queues))
    usage = {f"{f}/{GPU}": data.draw(st.integers(0, 12)) for f in ("a", "b")}
    nodes.add_all(cq, usage)
    nodes.add_all(cq, usage, sign=-1)
    after = {n: {fr: v for fr, v in u.usage.items() if v or fr in before[n]}
             for n, u in nodes.nodes.items()}  # fmt: skip
    assert after == before
