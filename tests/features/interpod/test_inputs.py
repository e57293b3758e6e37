"""Pod terms as the readers give them: YAML (as the API server admits them) and protobuf
(the same model, each bad field named), and the paths that refuse to plan with them."""

from __future__ import annotations

from typing import Any

import pytest

from gangplan.v1 import cluster_pb2 as pb
from solver import SCHEMA, schedule
from solver.codec import ConvertError, cluster_to_proto, snapshot_from_proto
from solver.config import SchedulerConf, load_conf
from solver.errors import ManifestError
from solver.model import LabelRequirement
from tests.builders import BLOCK, SPINE, gather, model, node, pod, podgroup, spine_block_topology

HOST = "kubernetes.io/hostname"


def namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def test_match_label_keys_are_merged_with_the_pods_own_values() -> None:
    p = pod("w").label("job", "j1").label("app", "train").anti_affinity(HOST, app="train")
    p.spread("zone", 1, app="train")
    body = p.obj()
    body["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        0
    ]["matchLabelKeys"] = ["job", "absent"]
    body["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        0
    ]["mismatchLabelKeys"] = ["app"]
    body["spec"]["topologySpreadConstraints"][0]["matchLabelKeys"] = ["job"]
    (loaded,) = model(body).pods
    assert loaded.inter_pod is not None
    (term,) = loaded.inter_pod.anti_affinity
    assert term.selector is not None
    assert term.selector.match_expressions == (
        LabelRequirement(key="job", operator="In", values=("j1",)),
        LabelRequirement(key="app", operator="NotIn", values=("train",)),
    )
    (spread,) = loaded.spread
    assert spread.selector is not None
    assert spread.selector.match_expressions == (
        LabelRequirement(key="job", operator="In", values=("j1",)),
    )


def test_namespace_selectors_resolve_against_the_namespaces_of_the_input() -> None:
    body = pod("w", "ml").anti_affinity(HOST, app="x").obj()
    term = body["spec"]["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ][0]
    term["namespaceSelector"] = {"matchLabels": {"team": "a"}}
    term["namespaces"] = ["explicit"]
    everywhere = pod("v", "ml").anti_affinity(HOST, app="x").obj()
    everywhere["spec"]["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ][0]["namespaceSelector"] = {}
    own = pod("u", "ml").anti_affinity(HOST, app="x").obj()
    cluster = model(
        namespace("a1", team="a"),
        namespace("b1", team="b"),
        pod("r", "a2").label("team", "a").on("n0").obj(),  # a namespace without an object
        body,
        everywhere,
        own,
    )
    terms = {p.name: p.inter_pod.anti_affinity[0] for p in cluster.pods if p.inter_pod}
    assert terms["w"].namespaces == ("a1", "explicit")
    assert terms["v"].namespaces is None
    assert terms["u"].namespaces == ("ml",)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (
            lambda b: (
                b["spec"]["affinity"]["podAntiAffinity"][
                    "requiredDuringSchedulingIgnoredDuringExecution"
                ][0].pop("labelSelector")
                and b["spec"]["affinity"]["podAntiAffinity"][
                    "requiredDuringSchedulingIgnoredDuringExecution"
                ][0].update(matchLabelKeys=["app"])
            ),
            "requiredDuringSchedulingIgnoredDuringExecution[0].matchLabelKeys",
        ),
        (
            lambda b: b["spec"]["affinity"]["podAntiAffinity"][
                "requiredDuringSchedulingIgnoredDuringExecution"
            ][0].update(topologyKey=""),
            "requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
        ),
        (
            lambda b: b["spec"]["topologySpreadConstraints"][0].update(
                whenUnsatisfiable="ScheduleAnyway", minDomains=2
            ),
            "topologySpreadConstraints[0].minDomains",
        ),
        (
            lambda b: b["spec"]["topologySpreadConstraints"][0].update(maxSkew=0),
            "topologySpreadConstraints[0].maxSkew",
        ),
        (
            lambda b: b["spec"]["topologySpreadConstraints"][0].update(matchLabelKeys=["app"]),
            "topologySpreadConstraints[0].matchLabelKeys",
        ),
        (
            lambda b: b["spec"]["topologySpreadConstraints"][0]["labelSelector"].update(
                matchExpressions=[{"key": "app", "operator": "In", "values": []}]
            ),
            "topologySpreadConstraints[0].labelSelector.matchExpressions[0].values",
        ),
    ],
)
def test_bad_terms_name_their_field(change: Any, field: str) -> None:
    body = pod("w").label("app", "x").anti_affinity(HOST, app="x").spread("zone", 1, app="x").obj()
    change(body)
    with pytest.raises(ManifestError) as err:
        model(body)
    assert field in str(err.value)


def test_terms_travel_over_the_wire_unchanged() -> None:
    body = pod("w", "ml").label("app", "x").anti_affinity(HOST, app="x").spread("zone", 2, app="x")
    body.pod_affinity("zone", weight=7, app="y")
    raw = body.obj()
    raw["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0][
        "namespaceSelector"
    ] = {}
    raw["spec"]["affinity"]["nodeAffinity"] = {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 3, "preference": {"matchExpressions": [{"key": "z", "operator": "Exists"}]}}
        ]
    }
    running = pod("r").label("app", "x").on("n0").anti_affinity("zone", app="y").obj()
    cluster = model(node("n0").obj(), raw, running)
    snapshot = snapshot_from_proto(cluster_to_proto(cluster), "cluster", SCHEMA)
    (pending,) = snapshot.pending.values()
    original = next(p for p in cluster.pods if p.name == "w")
    assert (pending.inter_pod, pending.spread, pending.preferred_node_affinity) == (
        original.inter_pod,
        original.spread,
        original.preferred_node_affinity,
    )
    row = snapshot.running.find("default/r")
    assert (
        snapshot.running.pod(row).terms == next(p for p in cluster.pods if p.name == "r").inter_pod
    )


def test_bad_wire_terms_are_each_named() -> None:
    bad = pb.Pod(
        namespace="default",
        name="p",
        pod_anti_affinity=pb.PodAffinity(
            required=[pb.PodAffinityTerm(all_namespaces=True, namespaces=["x"])],
            preferred=[
                pb.WeightedPodAffinityTerm(weight=0, term=pb.PodAffinityTerm(topology_key="z"))
            ],
        ),
        topology_spread_constraints=[
            pb.TopologySpreadConstraint(
                max_skew=0,
                topology_key="zone",
                when_unsatisfiable=pb.WHEN_UNSATISFIABLE_SCHEDULE_ANYWAY,
                min_domains=2,
                label_selector=pb.LabelSelector(
                    match_expressions=[pb.LabelSelectorRequirement(key="a", values=["b"])]
                ),
            )
        ],
    )
    with pytest.raises(ConvertError) as err:
        snapshot_from_proto(pb.Cluster(nodes=[pb.Node(name="n0")], pods=[bad]), "cluster", SCHEMA)
    fields = {path for path, _ in err.value.violations}
    base = "cluster.pods[0]"
    assert {
        f"{base}.pod_anti_affinity.required[0].topology_key",
        f"{base}.pod_anti_affinity.required[0].namespaces",
        f"{base}.pod_anti_affinity.preferred[0].weight",
        f"{base}.topology_spread_constraints[0].max_skew",
        f"{base}.topology_spread_constraints[0].min_domains",
        f"{base}.topology_spread_constraints[0].label_selector.match_expressions[0].operator",
    } <= fields, fields


def test_preemption_is_not_planned_for_pods_whose_terms_involve_the_call() -> None:
    nodes = [node(f"n{i}").cpu("4").label(HOST, f"n{i}").obj() for i in range(2)]
    low = [pod(f"low-{i}").requests(cpu="4").priority(0).on(f"n{i}").obj() for i in range(2)]
    high = [
        pod(f"high-{i}")
        .requests(cpu="4")
        .priority(100)
        .group("high")
        .label("app", "h")
        .anti_affinity(HOST, app="h")
        .obj()
        for i in range(2)
    ]
    d = schedule(model(*nodes, *low, podgroup("high", 2), *high), engine="greedy", preempt=True)
    assert not d.victims
    assert "not planned for pods with pod affinity" in d.podgroups["default/high"].reason


def test_a_gather_plan_that_breaks_a_term_is_refused() -> None:
    # Koordinator's offer-slot gather packs a block; one-per-node leaves it no plan that fits.
    topology = spine_block_topology()
    nodes = [
        node(f"n{i}").cpu("8").label(SPINE, "s1").label(BLOCK, "b1").label(HOST, f"n{i}").obj()
        for i in range(2)
    ]
    members = [
        pod(f"w-{i}")
        .requests(cpu="1")
        .group("job")
        .label("app", "j")
        .anti_affinity(HOST, app="j")
        .obj()
        for i in range(4)
    ]
    group = podgroup("job", 4, **gather(("SpineLayer", "MustGather")))
    d = schedule(model(topology, *nodes, group, *members), engine="greedy")
    assert not d.podgroups["default/job"].placed
    assert "anti-affinity" in d.podgroups["default/job"].reason


def test_a_conf_without_predicates_turns_the_terms_off() -> None:
    # They are kube-scheduler filters: Volcano's predicates plugin carries them.
    nodes = [node("n0").cpu("8").label(HOST, "n0").obj()]
    members = [pod(f"w-{i}").label("app", "j").anti_affinity(HOST, app="j").obj() for i in range(2)]
    conf = SchedulerConf.model_validate({"tiers": [{"plugins": [{"name": "gang"}]}]})
    d = schedule(model(*nodes, *members), conf, engine="greedy")
    assert all(p.node == "n0" for p in d.placements.values())
    assert load_conf(None).enabled("predicates")
