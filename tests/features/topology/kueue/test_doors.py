"""Kueue TAS through every door: YAML (a Workload object, annotated pods, errors naming file,
document and field), gRPC (codec round trip; INVALID_ARGUMENT paths in
tests/server/test_kueue_grpc.py), and verify's own check of a broken decision."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gangplan.v1 import cluster_pb2 as pb
from gangplan.v1 import placement_service_pb2 as spb
from solver import SCHEMA, load_manifests, schedule, snapshot_of, verify
from solver.codec import (
    cluster_to_proto,
    decision_from_proto,
    decision_to_proto,
    snapshot_from_proto,
)
from solver.decision import Placement
from solver.errors import ManifestError
from solver.kube.convert import build_model
from solver.kube.workloads import expand_workloads
from tests.builders import network_topology, raw
from tests.features.topology.kueue.helpers import (
    BLOCK,
    CONF,
    DEFAULT,
    RACK,
    REQUIRED,
    SLICE_LEVEL,
    SLICE_SIZE,
    THREE,
    cluster,
    nodes_of,
    pod_set,
    topology,
)

ROOT = Path(__file__).resolve().parents[4]
EXAMPLE = ROOT / "examples" / "topology" / "kueue-tas.yaml"


def _manifest_error(*objects: dict[str, Any]) -> ManifestError:
    with pytest.raises(ManifestError) as err:
        build_model(expand_workloads(raw(*objects))[0])
    return err.value


def test_the_example_places_as_kueue_would_on_both_engines() -> None:
    model = load_manifests(str(EXAMPLE))
    greedy = schedule(model, CONF, engine="greedy")
    got = {(a.podgroup, "/".join(v)): c for a in greedy.topology_assignments for v, c in a.domains}
    assert got == {
        ("ml/infer", "x3"): 2,
        ("ml/infer", "x4"): 1,
        ("ml/train", "x5"): 4,
        ("ml/train", "x6"): 3,
    }
    cpsat = schedule(model, CONF, engine="cpsat", workers=1, seed=0)
    assert cpsat.objective >= greedy.objective
    # CP-SAT does better on the tie-breaking tiers: infer on one 3-slot host of b1
    assert cpsat.tiers["opened_nodes"] < greedy.tiers["opened_nodes"]
    assert greedy.to_dict()["topologyAssignments"][0]["levels"] == ["kubernetes.io/hostname"]


def test_a_workload_request_is_read_as_its_annotations() -> None:
    workload = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {
            "podSets": [
                {
                    "name": "main",
                    "count": 4,
                    "topologyRequest": {
                        "required": BLOCK,
                        "podSetSliceRequiredTopology": RACK,
                        "podSetSliceSize": 2,
                    },
                    "template": {"spec": {"containers": [{"name": "c"}]}},
                }
            ]
        },
    }
    expanded, _ = expand_workloads(raw(*nodes_of(DEFAULT), *topology(THREE), workload))
    model = build_model(expanded)
    pods = [p for p in model.pods if p.gang == "default/w"]
    assert len(pods) == 4 and model.gangs["default/w"].min_member == 4
    assert pods[0].annotations == {REQUIRED: BLOCK, SLICE_LEVEL: RACK, SLICE_SIZE: "2"}
    bad = {**workload, "spec": {"podSets": [{**workload["spec"]["podSets"][0], "count": 1}]}}
    err = _manifest_error(bad)
    assert err.field == "spec.podSets[0].topologyRequest.podSetSliceSize"


@pytest.mark.parametrize(
    ("annotations", "field"),
    [
        ({REQUIRED: BLOCK, "kueue.x-k8s.io/podset-preferred-topology": RACK}, REQUIRED),
        ({SLICE_LEVEL: RACK}, SLICE_SIZE),
        ({SLICE_LEVEL: RACK, SLICE_SIZE: "0"}, SLICE_SIZE),
        ({REQUIRED: "not a label!"}, REQUIRED),
        ({"kueue.x-k8s.io/podset-unconstrained-topology": "maybe"}, None),
    ],
)
def test_bad_annotations_name_their_field(annotations: dict[str, str], field: str | None) -> None:
    err = _manifest_error(*pod_set("job", 1, annotations))
    key = field or "kueue.x-k8s.io/podset-unconstrained-topology"
    assert err.field in (
        f"metadata.annotations[{key}]",
        f"metadata.annotations[{'kueue.x-k8s.io/podset-preferred-topology'}]",
    )
    assert err.source == "test.yaml"


def test_bad_topology_objects_name_their_field() -> None:
    levels = topology((RACK, "kubernetes.io/hostname", BLOCK))
    assert _manifest_error(levels[0]).field == "spec.levels"
    flavor = topology(THREE, name="other")[1]
    assert _manifest_error(flavor).field == "spec.topologyName"


def test_mixed_dialects_agree_or_fail_clearly() -> None:
    # ClusterNetworkTopology: SpineLayer (label rack) above BlockLayer (label block) -
    # Kueue's block above rack contradicts it.
    cnt = network_topology(("SpineLayer", None, [RACK]), ("BlockLayer", "SpineLayer", [BLOCK]))
    err = _manifest_error(cnt, *topology(THREE))
    assert err.field == "spec.levels" and "disagree" in str(err)
    agree = network_topology(("SpineLayer", None, [BLOCK]), ("BlockLayer", "SpineLayer", [RACK]))
    model = build_model(raw(agree, *topology(THREE), *nodes_of(DEFAULT)))
    assert model.topology is not None and model.topology.layers
    assert model.topology.kueue_topologies[0].levels == THREE


def test_verify_checks_required_domains_and_slices_on_its_own() -> None:
    question = cluster(DEFAULT, THREE, 2, {REQUIRED: RACK})
    decision = schedule(question, CONF, engine="greedy")
    assert not verify(question, CONF, decision)
    placements = dict(decision.placements)
    placements["default/job-0"] = Placement(node="b1-r1-x3")
    placements["default/job-1"] = Placement(node="b2-r2-x4")
    broken = replace(decision, placements=placements)
    assert any("span" in p for p in verify(question, CONF, broken))
    sliced = cluster(
        ["b1/r1/x3:3", "b1/r1/x5:3"],
        THREE,
        4,
        {SLICE_LEVEL: "kubernetes.io/hostname", SLICE_SIZE: "2"},
    )
    decision = schedule(sliced, CONF, engine="greedy")
    moved = dict(decision.placements)
    nodes = sorted({p.node for p in moved.values()})
    moved = {
        k: Placement(node=nodes[0] if i < 3 else "b1-r1-x5") for i, k in enumerate(sorted(moved))
    }
    assert any(
        "not whole slices" in p for p in verify(sliced, CONF, replace(decision, placements=moved))
    )


def test_grpc_round_trip_keeps_the_kueue_objects_and_assignment() -> None:
    model = load_manifests(str(EXAMPLE))
    message = pb.Cluster.FromString(cluster_to_proto(model).SerializeToString())
    rebuilt = snapshot_from_proto(message, "cluster", SCHEMA)
    assert rebuilt.topology == snapshot_of(model).topology
    decision = schedule(rebuilt, CONF, engine="greedy")
    back = decision_from_proto(
        spb.Decision.FromString(decision_to_proto(decision).SerializeToString())
    )
    assert back.topology_assignments == decision.topology_assignments
    assert decision.topology_assignments
