"""Kueue multi-layer slices (`kueue.x-k8s.io/podset-slice-required-topology-constraints`, the
alpha TASMultiLayerTopology gate on), translated from kubernetes-sigs/kueue
`pkg/cache/scheduler/tas_cache_test.go` TestFindTopologyAssignments at ff69552e79ad (case
names verbatim), on both engines: the greedy gives upstream's assignment or message (up to
upstream's node-exclusion suffix, which gangplan does not print), CP-SAT a verified answer
with every layer in whole slices, or none when upstream has none."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from solver.errors import ManifestError
from solver.kube import load_objects
from solver.model import KUEUE_ANNOTATIONS, parse_kueue_request
from solver.model._kueue import KueueRequestError
from tests.builders import model, node, raw
from tests.features.topology.kueue.helpers import (
    BLOCK,
    HOST,
    POOL,
    RACK,
    REQUIRED,
    THREE,
    assigned,
    cluster,
    nodes_of,
    pod_set,
    run,
    topology,
)
from tests.features.topology.kueue.test_tas_cases import Case

DC = "cloud.com/topology-datacenter"
AIZONE = "cloud.com/topology-aizone"
LAYERS = KUEUE_ANNOTATIONS.SLICE_CONSTRAINTS
ENGINES = ["greedy", "cpsat"]


def layered(level: str, *layers: tuple[str, int]) -> dict[str, str]:
    return {REQUIRED: level, LAYERS: json.dumps([{"topology": t, "size": s} for t, s in layers])}


FOUR = (DC, BLOCK, RACK, HOST)
CASES: dict[str, Case] = {
    #              b1
    #       /             \
    #      r1             r2
    #   /      \        /    \
    #  x1(1)  x2(4)  x3(3)  x4(4)        8 pods: 4 per rack, 2 per host
    "multi-layer topology: block required; rack slices of 4; host slices of 2; "
    "TASMultiLayerTopology": Case(
        ["b1/r1/x1:1", "b1/r1/x2:4", "b1/r2/x3:3", "b1/r2/x4:4"],
        THREE,
        8,
        layered(BLOCK, (RACK, 4), (HOST, 2)),
        {"x2": 4, "x3": 2, "x4": 2},
    ),
    #          b1 ── r1 ── x1(3) x2(3) x3(0)
    "multi-layer topology: host slice rounding makes rack slice impossible": Case(
        ["b1/r1/x1:3", "b1/r1/x2:3", "b1/r1/x3:0"],
        THREE,
        6,
        layered(BLOCK, (RACK, 6), (HOST, 2)),
        reason="topology 'default' doesn't allow to fit; 0/1 slice(s) fit on level "
        "cloud.com/topology-rack; 2/3 slice(s) fit on level kubernetes.io/hostname",
    ),
    #              b1
    #       /             \
    #      r1             r2
    #   /      \        /    \
    #  x1(7)  x2(4)  x3(7)  x4(3)
    "multi-layer topology: small host kills rack slices despite enough total capacity": Case(
        ["b1/r1/x1:7", "b1/r1/x2:4", "b1/r2/x3:7", "b1/r2/x4:3"],
        THREE,
        16,
        layered(BLOCK, (RACK, 8), (HOST, 4)),
        reason="topology 'default' doesn't allow to fit; 1/2 slice(s) fit on level "
        "cloud.com/topology-rack; 3/4 slice(s) fit on level kubernetes.io/hostname",
    ),
    #            b1
    #       /    |     \
    #      r1    r2    r3
    #    x1(4) x2(4)  x3(4)
    "multi-layer topology: enough hostname slices but not enough rack slices": Case(
        ["b1/r1/x1:4", "b1/r2/x2:4", "b1/r3/x3:4"],
        THREE,
        12,
        layered(BLOCK, (RACK, 6), (HOST, 2)),
        reason="topology 'default' doesn't allow to fit; 0/2 slice(s) fit on level "
        "cloud.com/topology-rack; 6/6 slice(s) fit on level kubernetes.io/hostname",
    ),
    #                         dc1
    #             /                        \
    #            b1                        b2
    #        /         \               /         \
    #     r1(8)        r2(8)         r3(8)        r4(2)
    #    /    \       /    \         /  \         /   \
    # x1(4)  x2(4)  x3(4)  x4(4)   x5(4) x6(4)  x7(1) x8(1)
    "multi-layer topology: 3-layer negative case with small hosts cascading up": Case(
        [
            "dc1/b1/r1/x1:4",
            "dc1/b1/r1/x2:4",
            "dc1/b1/r2/x3:4",
            "dc1/b1/r2/x4:4",
            "dc1/b2/r3/x5:4",
            "dc1/b2/r3/x6:4",
            "dc1/b2/r4/x7:1",
            "dc1/b2/r4/x8:1",
        ],
        FOUR,
        24,
        layered(DC, (BLOCK, 12), (RACK, 6), (HOST, 3)),
        reason="topology 'default' doesn't allow to fit; 1/2 slice(s) fit on level "
        "cloud.com/topology-block; 3/4 slice(s) fit on level cloud.com/topology-rack; "
        "6/8 slice(s) fit on level kubernetes.io/hostname",
        labels=FOUR,
    ),
}


def _domains(
    decision: object, level: int, labels: tuple[str, ...], nodes: list[str]
) -> Counter[str]:
    by_name = {n.split(":")[0].replace("/", "-"): n.split(":")[0].split("/") for n in nodes}
    placed = decision.placed
    return Counter("/".join(by_name[n][: level + 1]) for n in placed.values())


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", list(CASES))
def test_find_topology_assignments_multi_layer(name: str, engine: str) -> None:
    case = CASES[name]
    decision = run(
        cluster(case.nodes, case.levels, case.count, case.request, labels=case.labels), engine
    )
    if case.reason:
        assert not decision.placed
        if engine == "greedy":
            assert case.reason in decision.podgroups["default/job"].reason
        return
    assert len(decision.placed) == case.count
    if engine == "greedy":
        assert assigned(decision) == case.want
    layers = json.loads(case.request[LAYERS])
    for layer in layers:  # every layer in whole slices (verify holds it too)
        level = case.labels.index(layer["topology"])
        counts = _domains(decision, level, case.labels, case.nodes)
        assert all(c % layer["size"] == 0 for c in counts.values()), (layer, counts)


def test_a_gb200_cluster_takes_three_racks_per_aizone() -> None:
    """ "multi-layer topology: mimic a real-world GB200 cluster, with NVL36 arch (2GPUs/node);
    dc required; aizone slices of 48; rack slices of 16": 96 pods of 2 GPUs, 48 per aizone,
    16 per rack, on 8 racks of 18 two-GPU nodes: racks r0, r1, r2 and r4, r5, r6."""
    racks = [
        ("aizone0", "block0", "r0"),
        ("aizone0", "block0", "r1"),
        ("aizone0", "block1", "r2"),
        ("aizone0", "block1", "r3"),
        ("aizone1", "block2", "r4"),
        ("aizone1", "block2", "r5"),
        ("aizone1", "block3", "r6"),
        ("aizone1", "block3", "r7"),
    ]
    nodes = []
    for az, block, rack in racks:
        for i in range(18):
            b = node(f"{block}-{rack}-{az}-n{i}").cpu("8").memory("64Gi").gpu(2).pods(20)
            for key, value in (
                (DC, "dc0"),
                (AIZONE, az),
                (BLOCK, block),
                (RACK, rack),
                *POOL.items(),
            ):
                b = b.label(key, value)
            nodes.append(b.obj())
    request = layered(DC, (AIZONE, 48), (RACK, 16))
    pods = pod_set("job", 96, request, cpu="100m")
    for p in pods[1:]:
        p["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "2"
    levels = (DC, AIZONE, BLOCK, RACK)
    for engine in ENGINES:
        decision = run(model(*nodes, *topology(levels), *pods), engine)
        assert len(decision.placed) == 96, engine
        per_rack = Counter(n.split("-")[1] for n in decision.placed.values())
        assert all(c == 16 for c in per_rack.values()), per_rack
        per_az = Counter(n.split("-")[2] for n in decision.placed.values())
        assert per_az == {"aizone0": 48, "aizone1": 48}
        if engine == "greedy":
            assert set(per_rack) == {"r0", "r1", "r2", "r4", "r5", "r6"}


@pytest.mark.parametrize(
    ("value", "where", "message"),
    [
        ("[]", "", "between 1 and 3 entries"),
        ("{", "", "valid JSON array"),
        ('[{"topology": "r", "size": 0}]', "[0].size", "greater than or equal to 1"),
        ('[{"topology": "no label!", "size": 2}]', "[0].topology", "not a valid label name"),
        (
            '[{"topology": "a", "size": 4}, {"topology": "b", "size": 3}]',
            "[1].size",
            "evenly divide",
        ),
        ('[{"topology": "a", "size": 4}, {"topology": "a", "size": 2}]', "[1].topology", "twice"),
    ],
)
def test_bad_layers_are_refused_as_kueues_webhook_refuses_them(
    value: str, where: str, message: str
) -> None:
    """`validateSliceRequiredTopologyConstraintsAnnotation`."""
    with pytest.raises(KueueRequestError) as err:
        parse_kueue_request({REQUIRED: BLOCK, LAYERS: value})
    assert err.value.field == f"metadata.annotations[{LAYERS}]{where}"
    assert message in err.value.message


def test_layers_exclude_the_two_level_slice_annotations() -> None:
    with pytest.raises(KueueRequestError, match="may not be set"):
        parse_kueue_request({**layered(BLOCK, (RACK, 2)), KUEUE_ANNOTATIONS.SLICE_REQUIRED: RACK})


def test_a_layer_above_the_one_before_it_keeps_the_set_pending_with_kueues_reason() -> None:
    """`buildSliceSizeAtLevel`: inner layers must be finer (checked at scheduling)."""
    decision = run(
        cluster(["b1/r1/x1:4"], THREE, 4, layered(BLOCK, (HOST, 4), (RACK, 2))), "greedy"
    )
    assert not decision.placed
    assert "additional slice layer topology cloud.com/topology-rack must be at a lower level" in (
        decision.podgroups["default/job"].reason
    )


def test_a_workload_carries_its_layers() -> None:
    """`topologyRequest.podsetSliceRequiredTopologyConstraints` of a Kueue Workload."""
    workload = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "job"},
        "spec": {
            "podSets": [
                {
                    "name": "main",
                    "count": 8,
                    "topologyRequest": {
                        "required": BLOCK,
                        "podsetSliceRequiredTopologyConstraints": [
                            {"topology": RACK, "size": 4},
                            {"topology": HOST, "size": 2},
                        ],
                    },
                    "template": {
                        "spec": {
                            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]
                        }
                    },
                }
            ]
        },
    }
    cases = CASES[next(iter(CASES))]
    decision = run(load_objects(raw(*nodes_of(cases.nodes), *topology(THREE), workload)), "greedy")
    assert assigned(decision) == cases.want
    bad = json.loads(json.dumps(workload))
    bad["spec"]["podSets"][0]["topologyRequest"]["podsetSliceRequiredTopologyConstraints"][1][
        "size"
    ] = 3
    with pytest.raises(ManifestError) as err:
        load_objects(raw(*nodes_of(cases.nodes), *topology(THREE), bad))
    assert "spec.podSets[0].topologyRequest.podsetSliceRequiredTopologyConstraints[1].size" in str(
        err.value
    )
