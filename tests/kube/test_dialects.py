"""Every PodGroup dialect and every pod -> group link, with Koordinator's defaults."""

from __future__ import annotations

import pytest

from solver.model import MatchPolicy
from tests.builders import groups_annotation, model, pod, podgroup


@pytest.mark.parametrize(
    ("dialect", "link"),
    [
        ("sigs", lambda b: b.label("pod-group.scheduling.sigs.k8s.io", "pg")),
        ("volcano", lambda b: b.annotate("scheduling.k8s.io/group-name", "pg")),
        ("godel", lambda b: b.annotate("godel.bytedance.com/pod-group-name", "pg")),
        ("godel", lambda b: b.label("godel.bytedance.com/pod-group-name", "pg")),
    ],
    ids=["sigs-label", "volcano-annotation", "godel-annotation", "godel-label"],
)
def test_pod_group_dialects(dialect, link) -> None:  # type: ignore[no-untyped-def]
    m = model(podgroup("pg", 2, dialect), link(pod("a")).obj(), link(pod("b")).obj())
    gang = m.gangs["default/pg"]
    assert gang.min_member == 2
    assert gang.members == ("default/a", "default/b")
    assert {p.gang for p in m.pods} == {"default/pg"}
    assert gang.dialect.startswith("scheduling.")


def test_volcano_podgroup_fields() -> None:
    pg = podgroup("pg", 3, "volcano")
    pg["spec"].update({"queue": "research", "minResources": {"cpu": "3", "nvidia.com/gpu": "3"}})
    gang = model(pg).gangs["default/pg"]
    assert gang.queue == "research"
    assert gang.min_resources == {"cpu": 3000, "nvidia.com/gpu": 3}
    # Volcano counts running tasks toward minMember.
    assert gang.match_policy is MatchPolicy.WAITING_AND_RUNNING
    assert model(podgroup("v", 1, "volcano")).gangs["default/v"].queue == "default"


def test_koordinator_annotation_way_first_pod_wins() -> None:
    a = pod("a").annotate("gang.scheduling.koordinator.sh/name", "g")
    a.annotate("gang.scheduling.koordinator.sh/min-available", "2")
    b = pod("b").annotate("gang.scheduling.koordinator.sh/name", "g")
    b.annotate("gang.scheduling.koordinator.sh/min-available", "5")
    gang = model(a.obj(), b.obj()).gangs["default/g"]
    assert gang.dialect == "koordinator-annotation"
    assert gang.min_member == 2
    assert gang.members == ("default/a", "default/b")


def test_lightweight_labels() -> None:
    a = pod("a").label("pod-group.scheduling.sigs.k8s.io/name", "lw")
    a.label("pod-group.scheduling.sigs.k8s.io/min-available", "1")
    gang = model(a.obj()).gangs["default/lw"]
    assert (gang.dialect, gang.min_member) == ("lightweight", 1)


def test_annotation_way_uses_podgroup_when_present() -> None:
    a = pod("a").annotate("gang.scheduling.koordinator.sh/name", "pg")
    gang = model(podgroup("pg", 4), a.obj()).gangs["default/pg"]
    assert (gang.dialect, gang.min_member) == ("scheduling.sigs.k8s.io", 4)


def test_link_precedence_crd_label_first() -> None:
    a = pod("a").group("first").annotate("scheduling.k8s.io/group-name", "second")
    m = model(podgroup("first", 1), podgroup("second", 1, "volcano"), a.obj())
    assert m.pods[0].gang == "default/first"


def test_pod_without_group_is_a_gang_of_one() -> None:
    m = model(pod("solo").obj())
    gang = m.gangs["default/solo"]
    assert gang.implicit and gang.min_member == 1 and gang.members == ("default/solo",)


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({}, ("Strict", 2, None, ("default/pg",))),
        (
            {
                "gang.scheduling.koordinator.sh/mode": "NonStrict",
                "gang.scheduling.koordinator.sh/total-number": "5",
                "gang.scheduling.koordinator.sh/match-policy": "only-waiting",
            },
            ("NonStrict", 5, MatchPolicy.ONLY_WAITING, ("default/pg",)),
        ),
        (
            {
                "gang.scheduling.koordinator.sh/mode": "Bogus",
                "gang.scheduling.koordinator.sh/total-number": "1",
                "pod-group.scheduling.sigs.k8s.io/match-policy": "waiting-and-running",
                "gang.scheduling.koordinator.sh/groups": "[a,b]",
            },
            ("Strict", 2, MatchPolicy.WAITING_AND_RUNNING, ("default/pg",)),
        ),
        (
            groups_annotation("default/x", "default/pg"),
            ("Strict", 2, None, ("default/pg", "default/x")),
        ),
    ],
    ids=["defaults", "explicit", "illegal-values-default", "groups"],
)
def test_koordinator_gang_annotations(annotations, expected) -> None:  # type: ignore[no-untyped-def]
    gang = model(podgroup("pg", 2, **annotations)).gangs["default/pg"]
    assert (gang.mode, gang.total_number, gang.match_policy, gang.groups) == expected


def test_groups_as_yaml_list_like_the_seed() -> None:
    pg = podgroup("m", 1)
    pg["metadata"]["annotations"]["gang.scheduling.koordinator.sh/groups"] = [
        "default/m",
        "default/w",
    ]
    assert model(pg).gangs["default/m"].groups == ("default/m", "default/w")


def test_priority_from_class_and_global_default() -> None:
    classes = [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
            "preemptionPolicy": "Never",
        },
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "std"},
            "value": 10,
            "globalDefault": True,
        },
    ]
    hi = pod("hi").obj()
    hi["spec"]["priorityClassName"] = "high"
    m = model(*classes, hi, pod("plain").obj(), pod("own").priority(7).obj())
    by = {p.name: p for p in m.pods}
    assert (by["hi"].priority, by["hi"].preemption_policy) == (1000, "Never")
    assert by["plain"].priority == 10
    assert by["own"].priority == 7


def test_queue_and_topology_are_read() -> None:
    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "q"},
        "spec": {
            "parent": "root",
            "capability": {"cpu": "10"},
            "guarantee": {"resource": {"cpu": "2"}},
        },
    }
    topo = {
        "apiVersion": "scheduling.koordinator.sh/v1alpha1",
        "kind": "ClusterNetworkTopology",
        "metadata": {"name": "default"},
        "spec": {
            "networkTopologySpec": [
                {"topologyLayer": "SpineLayer", "labelKey": ["spine"]},
                {
                    "topologyLayer": "BlockLayer",
                    "parentTopologyLayer": "SpineLayer",
                    "labelKey": "block",
                },
                {"topologyLayer": "NodeTopologyLayer", "parentTopologyLayer": "BlockLayer"},
            ]
        },
    }
    m = model(queue, topo)
    q = m.queues["q"]
    assert (q.parent, q.capability, q.guarantee, q.state) == (
        "root",
        {"cpu": 10000},
        {"cpu": 2000},
        "Open",
    )
    assert m.topology is not None
    assert [layer.name for layer in m.topology.layers] == [
        "SpineLayer",
        "BlockLayer",
        "NodeTopologyLayer",
    ]
    assert m.topology.layers[1].label_keys == ("block",)
