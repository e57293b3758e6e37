"""Input rules are written once, on the model (`solver.model`): the YAML reader and the gRPC
codec say a broken rule in the same words, each at its own path.

Each row is one rule broken the same way in a manifest and on the wire. Before the rules
moved to the model, the readers disagreed: the YAML reader admitted a toleration with an
empty key and operator Equal, a taint without a key, a Godel `In` requirement without
values, which the codec refused; their words differed for the rest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gangplan.v1 import cluster_pb2 as pb
from solver import SCHEMA
from solver.codec import ConvertError, snapshot_from_proto
from solver.errors import ManifestError
from solver.kube import load_manifests

NODE = "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"
POD = """\
apiVersion: v1
kind: Pod
metadata: {{name: p, namespace: ns}}
spec:
  containers: [{{name: c, resources: {{requests: {{cpu: "1"}}}}}}]
  {spec}
"""
NODE_TERM = "nodeAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: {{nodeSelectorTerms: [{term}]}}}}"
REQUIRED = (
    "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
)
SPREAD = "{maxSkew: %s, topologyKey: zone, whenUnsatisfiable: %s%s}"


def _pod(spec: str) -> str:
    return NODE + "---\n" + POD.format(spec=spec)


def _pb_pod(**fields: Any) -> pb.Cluster:
    return pb.Cluster(nodes=[pb.Node(name="n")], pods=[pb.Pod(name="p", namespace="ns", **fields)])


def _spread(**fields: Any) -> pb.TopologySpreadConstraint:
    base: dict[str, Any] = {
        "max_skew": 1,
        "topology_key": "zone",
        "when_unsatisfiable": pb.WHEN_UNSATISFIABLE_DO_NOT_SCHEDULE,
    }
    return pb.TopologySpreadConstraint(**(base | fields))


def _req(**fields: Any) -> pb.NodeSelectorRequirement:
    return pb.NodeSelectorRequirement(**({"operator": pb.SELECTOR_OPERATOR_IN} | fields))


EXISTS = pb.TOLERATION_OPERATOR_EXISTS
EQUAL = pb.TOLERATION_OPERATOR_EQUAL

# name: (manifest, its field, message, its field, the rule's words)
CASES: dict[str, tuple[str, str, pb.Cluster, str, str]] = {
    "toleration Exists with a value": (
        _pod("tolerations: [{key: k, operator: Exists, value: v}]"),
        "spec.tolerations[0].value",
        _pb_pod(tolerations=[pb.Toleration(key="k", operator=EXISTS, value="v")]),
        "cluster.pods[0].tolerations[0].value",
        "must be empty when the operator is Exists",
    ),
    "toleration without a key, operator Equal": (
        _pod("tolerations: [{operator: Equal, value: v}]"),
        "spec.tolerations[0].operator",
        _pb_pod(tolerations=[pb.Toleration(operator=EQUAL, value="v")]),
        "cluster.pods[0].tolerations[0].operator",
        "must be Exists when the key is empty",
    ),
    "maxSkew 0": (
        _pod("topologySpreadConstraints: [" + SPREAD % (0, "DoNotSchedule", "") + "]"),
        "spec.topologySpreadConstraints[0].maxSkew",
        _pb_pod(topology_spread_constraints=[_spread(max_skew=0)]),
        "cluster.pods[0].topology_spread_constraints[0].max_skew",
        "must be at least 1, got 0",
    ),
    "minDomains beside ScheduleAnyway": (
        _pod(
            "topologySpreadConstraints: [" + SPREAD % (1, "ScheduleAnyway", ", minDomains: 2") + "]"
        ),
        "spec.topologySpreadConstraints[0].minDomains",
        _pb_pod(
            topology_spread_constraints=[
                _spread(when_unsatisfiable=pb.WHEN_UNSATISFIABLE_SCHEDULE_ANYWAY, min_domains=2)
            ]
        ),
        "cluster.pods[0].topology_spread_constraints[0].min_domains",
        "only allowed with whenUnsatisfiable DoNotSchedule",
    ),
    "an empty topologyKey": (
        _pod(
            "topologySpreadConstraints: [{maxSkew: 1, topologyKey: '', whenUnsatisfiable: DoNotSchedule}]"
        ),
        "spec.topologySpreadConstraints[0].topologyKey",
        _pb_pod(topology_spread_constraints=[_spread(topology_key="")]),
        "cluster.pods[0].topology_spread_constraints[0].topology_key",
        "must not be empty",
    ),
    "a preferred term of weight 0": (
        _pod(
            "affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: "
            "[{weight: 0, preference: {matchExpressions: [{key: a, operator: Exists}]}}]}}"
        ),
        "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
        _pb_pod(
            preferred_node_affinity=[
                pb.PreferredSchedulingTerm(
                    weight=0,
                    preference=pb.NodeSelectorTerm(
                        match_expressions=[_req(key="a", operator=pb.SELECTOR_OPERATOR_EXISTS)]
                    ),
                )
            ]
        ),
        "cluster.pods[0].preferred_node_affinity[0].weight",
        "must be at least 1, got 0",
    ),
    "In without values": (
        _pod(
            "affinity: {"
            + NODE_TERM.format(term="{matchExpressions: [{key: a, operator: In}]}")
            + "}"
        ),
        f"{REQUIRED}.matchExpressions[0].values",
        _pb_pod(required_node_affinity=[pb.NodeSelectorTerm(match_expressions=[_req(key="a")])]),
        "cluster.pods[0].required_node_affinity[0].match_expressions[0].values",
        "operator In needs at least one value",
    ),
    "a field selector on a label": (
        _pod(
            "affinity: {"
            + NODE_TERM.format(term="{matchFields: [{key: zone, operator: In, values: [a]}]}")
            + "}"
        ),
        f"{REQUIRED}.matchFields[0].key",
        _pb_pod(
            required_node_affinity=[
                pb.NodeSelectorTerm(match_fields=[_req(key="zone", values=["a"])])
            ]
        ),
        "cluster.pods[0].required_node_affinity[0].match_fields[0].key",
        "only metadata.name is supported",
    ),
    "a pod affinity term without a topologyKey": (
        _pod(
            "affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
            "[{labelSelector: {matchLabels: {a: b}}, topologyKey: ''}]}}"
        ),
        "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
        _pb_pod(
            pod_affinity=pb.PodAffinity(
                required=[
                    pb.PodAffinityTerm(label_selector=pb.LabelSelector(match_labels={"a": "b"}))
                ]
            )
        ),
        "cluster.pods[0].pod_affinity.required[0].topology_key",
        "must not be empty",
    ),
    "a scheduling gate too long": (
        _pod(f"schedulingGates: [{{name: {'g' * 317}}}]"),
        "spec.schedulingGates[0]",
        _pb_pod(scheduling_gates=["g" * 317]),
        "cluster.pods[0].scheduling_gates[0]",
        "must be at most 316 characters",
    ),
    "33 scheduling gates": (
        _pod("schedulingGates: [" + ", ".join(f"{{name: g{i}}}" for i in range(33)) + "]"),
        "spec.schedulingGates",
        _pb_pod(scheduling_gates=[f"g{i}" for i in range(33)]),
        "cluster.pods[0].scheduling_gates",
        "at most 32 items, got 33",
    ),
    "a taint without a key": (
        "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"
        "spec: {taints: [{key: '', effect: NoSchedule}]}\n",
        "spec.taints[0].key",
        pb.Cluster(
            nodes=[pb.Node(name="n", taints=[pb.Taint(effect=pb.TAINT_EFFECT_NO_SCHEDULE)])]
        ),
        "cluster.nodes[0].taints[0].key",
        "must not be empty",
    ),
    "a Queue weight beyond the CRD's": (
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\n"
        "spec: {weight: 70000}\n",
        "spec.weight",
        pb.Cluster(queues=[pb.Queue(name="q", weight=70000)]),
        "cluster.queues[0].weight",
        "must be at most 65535, got 70000",
    ),
    "a topology layer twice": (
        "apiVersion: scheduling.koordinator.sh/v1alpha1\nkind: ClusterNetworkTopology\n"
        "metadata: {name: default}\nspec:\n  networkTopologySpec:\n"
        "  - {topologyLayer: NodeTopologyLayer, parentTopologyLayer: BlockLayer}\n"
        "  - {topologyLayer: NodeTopologyLayer, parentTopologyLayer: BlockLayer}\n",
        "spec.networkTopologySpec[1].topologyLayer",
        pb.Cluster(
            topology=pb.NetworkTopology(
                layers=[
                    pb.TopologyLayer(name="NodeTopologyLayer", parent="BlockLayer"),
                    pb.TopologyLayer(name="NodeTopologyLayer", parent="BlockLayer"),
                ]
            )
        ),
        "cluster.topology.layers[1].name",
        "layer 'NodeTopologyLayer' is declared twice",
    ),
    "a HyperNode member without a selector": (
        "apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata: {name: h}\n"
        "spec: {tier: 1, members: [{type: Node, selector: {}}]}\n",
        "spec.members[0].selector",
        pb.Cluster(
            topology=pb.NetworkTopology(
                hypernodes=[
                    pb.HyperNode(
                        name="h",
                        tier=1,
                        members=[pb.HyperNodeMember(type=pb.HYPER_NODE_MEMBER_TYPE_NODE)],
                    )
                ]
            )
        ),
        "cluster.topology.hypernodes[0].members[0]",
        "needs an exact name, a regex or labels",
    ),
    "a HyperNode below tier 0": (
        "apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata: {name: h}\n"
        "spec: {tier: -1, members: [{type: Node, selector: {exactMatch: {name: n}}}]}\n",
        "spec.tier",
        pb.Cluster(
            topology=pb.NetworkTopology(
                hypernodes=[
                    pb.HyperNode(
                        name="h",
                        tier=-1,
                        members=[
                            pb.HyperNodeMember(type=pb.HYPER_NODE_MEMBER_TYPE_NODE, exact_name="n")
                        ],
                    )
                ]
            )
        ),
        "cluster.topology.hypernodes[0].tier",
        "must be at least 0, got -1",
    ),
    "hostname above another Kueue level": (
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: Topology\nmetadata: {name: t}\n"
        "spec: {levels: [{nodeLabel: kubernetes.io/hostname}, {nodeLabel: rack}]}\n",
        "spec.levels",
        pb.Cluster(
            topology=pb.NetworkTopology(
                kueue_topologies=[
                    pb.KueueTopology(name="t", levels=["kubernetes.io/hostname", "rack"])
                ]
            )
        ),
        "cluster.topology.kueue_topologies[0].levels",
        "kubernetes.io/hostname (at 0) is only allowed as the last level",
    ),
    "a budget with both counts": (
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: b, namespace: ns}\n"
        "spec: {minAvailable: 1, maxUnavailable: 1, selector: {matchLabels: {a: b}}}\n",
        "spec.maxUnavailable",
        pb.Cluster(
            disruption_budgets=[
                pb.DisruptionBudget(
                    name="b", namespace="ns", min_available="1", max_unavailable="1"
                )
            ]
        ),
        "cluster.disruption_budgets[0].max_unavailable",
        "minAvailable and maxUnavailable cannot both be set",
    ),
    "a negative request": (
        NODE + "---\n" + POD.format(spec="").replace('cpu: "1"', 'cpu: "-1"'),
        "spec.containers[0].resources.requests.cpu",
        _pb_pod(requests={"cpu": -1}),
        'cluster.pods[0].requests["cpu"]',
        "must not be negative",
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_both_readers_say_a_rule_in_its_words(
    tmp_path: Path, case: tuple[str, str, pb.Cluster, str, str]
) -> None:
    text, field, message, path, words = case
    manifest = tmp_path / "in.yaml"
    manifest.write_text(text)
    with pytest.raises(ManifestError) as yaml_error:
        load_manifests(str(manifest))
    assert yaml_error.value.field == field, str(yaml_error.value)
    assert words in yaml_error.value.message, str(yaml_error.value)
    with pytest.raises(ConvertError) as wire_error:
        snapshot_from_proto(message, "cluster", SCHEMA)
    found = dict(wire_error.value.violations)
    assert path in found, wire_error.value.violations
    assert words in found[path], found[path]
