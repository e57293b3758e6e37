"""Properties of KAI's fair share: random trees of KAI Queues with quotas, limits, weights
and priorities; running and competing jobs of both preemptibilities.

* the division never gives a level more than its total, unless the quotas alone do
  (KAI gives each queue min(quota, request) first, over-subscribed or not), and every
  queue gets at least min(quota, request);
* every Decision of either engine passes the independent verifier (`schedule` checks it:
  limits at every level, non-preemptible jobs within quota, leaf queues only, reclaim
  victims preemptible, of other queues, from a queue over its quota or limit), with and
  without the `reclaim` action, and the same Decision re-checked agrees.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver import SchedulerConf, schedule, verify
from solver.features.kaishare import Share, divide
from solver.kube import load_objects
from solver.schedule import snapshot_of
from tests.builders import raw

GPU = "nvidia.com/gpu"
quantity = st.sampled_from([-1.0, 0.0, 1.0, 2.0, 3.5, 4.0, 8.0])
limits = st.sampled_from([-1.0, -1.0, 0.0, 2.0, 4.0, 8.0])


@st.composite
def levels(draw: st.DrawFn) -> tuple[float, dict[str, Share], dict[str, list[str]], list[str]]:
    total = draw(st.sampled_from([0.0, 1.0, 5.0, 12.0, 32.0]))
    shares: dict[str, Share] = {}
    children: dict[str, list[str]] = {}
    top = [f"d{i}" for i in range(draw(st.integers(1, 3)))]
    for d in top:
        children[d] = [f"{d}q{j}" for j in range(draw(st.integers(0, 3)))]
    for name in [*top, *(c for d in top for c in children[d])]:
        shares[name] = Share(
            name=name,
            deserved=draw(quantity),
            limit=draw(quantity),
            weight=draw(st.sampled_from([0.0, 1.0, 2.0, 3.0])),
            request=draw(st.sampled_from([0.0, 1.0, 2.5, 6.0, 20.0])),
            priority=draw(st.sampled_from([99, 100, 101])),
        )
    return total, shares, children, top


@settings(max_examples=150, deadline=None)
@given(levels())
def test_a_level_gets_no_more_than_its_total_unless_its_quotas_do(
    case: tuple[float, dict[str, Share], dict[str, list[str]], list[str]],
) -> None:
    total, shares, children, top = case
    budgets = {name: total for name in top}
    divide(total, shares, children, top, k=1.0)
    for parent, kids in children.items():
        for kid in kids:
            budgets[kid] = shares[parent].fair
    for level in [top, *children.values()]:
        if not level:
            continue
        budget = budgets[level[0]]
        firsts = []
        for name in level:
            q = shares[name]
            quota = budget if q.deserved == -1 else q.deserved
            firsts.append(min(quota, q.requestable))
            assert q.fair >= min(quota, q.requestable) - 1e-9
        assert sum(shares[n].fair for n in level) <= max(budget, sum(firsts)) + 1e-9


@st.composite
def clusters(draw: st.DrawFn) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": n},
         "value": v} for n, v in (("train", 50), ("build", 100))
    ]  # fmt: skip
    for i in range(draw(st.integers(1, 2))):
        out.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"},
                    "status": {"allocatable": {"cpu": "16", "memory": "64Gi", GPU: "4", "pods": "20"}}})  # fmt: skip
    leaves = []
    for d in range(draw(st.integers(1, 2))):
        names = [f"d{d}", *(f"d{d}q{j}" for j in range(draw(st.integers(1, 2))))]
        leaves += names[1:]
        for name in names:
            spec: dict[str, Any] = {"resources": {
                "gpu": {"quota": draw(quantity), "limit": draw(limits),
                        "overQuotaWeight": draw(st.sampled_from([0, 1, 1, 3]))},
                "cpu": {"quota": -1, "limit": draw(st.sampled_from([-1, 4000, 64000])), "overQuotaWeight": 1},
                "memory": {"quota": -1, "limit": -1, "overQuotaWeight": 1},
            }, "priority": draw(st.sampled_from([99, 100, 101]))}  # fmt: skip
            if name != names[0]:
                spec["parentQueue"] = names[0]
            out.append({"apiVersion": "scheduling.run.ai/v2", "kind": "Queue",
                        "metadata": {"name": name}, "spec": spec})  # fmt: skip
    nodes = [o["metadata"]["name"] for o in out if o["kind"] == "Node"]
    free = dict.fromkeys(nodes, 4)
    running_jobs = draw(st.integers(0, 6))  # first, running where they fit; then pending
    for j in range(running_jobs + draw(st.integers(1, 3))):
        running = j < running_jobs
        pods = draw(st.integers(1, 3))
        gpus = draw(st.integers(1 if running else 0, 2))
        queue = draw(st.sampled_from([*leaves, "d0"] if not running else leaves))
        cls = draw(st.sampled_from(["train", "train", "build"]))
        hosts = []
        for _ in range(pods):
            host = next((n for n in nodes if free[n] >= gpus), None)
            if running and host is None:
                break
            if host is not None and running:
                free[host] -= gpus
            hosts.append(host)
        if running and len(hosts) < pods:
            for host in hosts:  # does not fit whole: leave it out
                free[host] += gpus
            continue
        out.append({"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup",
                    "metadata": {"name": f"j{j}", "namespace": "default"},
                    "spec": {"minMember": pods, "queue": queue, "priorityClassName": cls}})  # fmt: skip
        for i in range(pods):
            pod: dict[str, Any] = {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"j{j}-{i}", "namespace": "default",
                             "annotations": {"pod-group-name": f"j{j}"}},
                "spec": {"schedulerName": "kai-scheduler", "priorityClassName": cls,
                         "containers": [{"name": "c", "resources": {
                             "requests": {GPU: str(gpus), "cpu": "1"}, "limits": {GPU: str(gpus)}}}]},
            }  # fmt: skip
            if running:
                pod["spec"]["nodeName"] = hosts[i]
                pod["status"] = {"phase": "Running"}
            out.append(pod)
    return out


RECLAIM = SchedulerConf.default().model_copy(update={"actions": ("enqueue", "allocate", "reclaim")})


@pytest.mark.parametrize("conf", [SchedulerConf.default(), RECLAIM], ids=["allocate", "reclaim"])
@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
@settings(max_examples=40, deadline=None)
@given(objects=clusters())
def test_every_decision_passes_the_verifier(
    engine: str, conf: SchedulerConf, objects: list[dict[str, Any]]
) -> None:
    snapshot = snapshot_of(load_objects(raw(*objects)))
    d = schedule(snapshot, conf, engine=engine, workers=1, time_limit=5)  # verified inside
    assert verify(snapshot, conf, d) == []
    for v in d.victims:  # reclaim takes only preemptible pods of other queues
        assert v.cause == "reclaim" and v.queue


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
@settings(max_examples=25, deadline=None)
@given(nodes=st.integers(1, 3), k=st.integers(1, 6), data=st.data())
def test_a_queue_under_its_fair_share_reclaims_exactly_its_share(
    engine: str, nodes: int, k: int, data: st.DataObject
) -> None:
    """Two sibling queues, quota 0, weight 1 each. a fills every GPU with one-GPU train
    jobs; b asks for k one-GPU pods (one gang, k ≤ half the GPUs). Fair shares: b gets k
    (it asks no more), a the rest; b may reclaim (0 + k ≤ k), and MaintainFairShare takes
    a's jobs while a holds more than its share: exactly k, and b's gang is nominated."""
    total = 4 * nodes
    k = min(k, total // 2)
    objs: list[dict[str, Any]] = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "train"}, "value": 50},
        *({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"},
           "status": {"allocatable": {"cpu": "16", "memory": "64Gi", GPU: "4", "pods": "20"}}}
          for i in range(nodes)),
    ]  # fmt: skip
    for name, parent in (("top", None), ("a", "top"), ("b", "top")):
        spec: dict[str, Any] = {"resources": {
            "gpu": {"quota": 0, "limit": -1, "overQuotaWeight": 1},
            "cpu": {"quota": -1, "limit": -1, "overQuotaWeight": 1},
            "memory": {"quota": -1, "limit": -1, "overQuotaWeight": 1}}}  # fmt: skip
        if parent:
            spec["parentQueue"] = parent
        objs.append({"apiVersion": "scheduling.run.ai/v2", "kind": "Queue",
                     "metadata": {"name": name}, "spec": spec})  # fmt: skip

    def gang(name: str, queue: str, pods: int, node: str | None) -> None:
        objs.append({"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup",
                     "metadata": {"name": name, "namespace": "default"},
                     "spec": {"minMember": pods, "queue": queue, "priorityClassName": "train"}})  # fmt: skip
        for i in range(pods):
            pod: dict[str, Any] = {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"{name}-{i}", "namespace": "default",
                             "annotations": {"pod-group-name": name}},
                "spec": {"schedulerName": "kai-scheduler", "priorityClassName": "train",
                         "containers": [{"name": "c", "resources": {
                             "requests": {GPU: "1", "cpu": "1"}, "limits": {GPU: "1"}}}]},
            }  # fmt: skip
            if node is not None:
                pod["spec"]["nodeName"] = node
                pod["status"] = {"phase": "Running"}
            objs.append(pod)

    for g in range(total):
        gang(f"a{g}", "a", 1, f"n{g // 4}")
    gang("want", "b", k, None)
    snapshot = snapshot_of(load_objects(raw(*objs)))
    d = schedule(snapshot, RECLAIM, engine=engine, workers=1)  # verified inside
    assert len(d.victims) == k and all(v.queue == "b" for v in d.victims)
    assert all(p.nominated for key, p in d.placements.items() if key.startswith("default/want"))
