"""Pods read once per template (`solver.kube.pod_templates`) and encoded once per template
(`solver.codec.cluster_to_proto`): every copy keeps its own name, creation time and gang,
and an error in a copy still names that copy."""

from __future__ import annotations

import copy
import datetime
from typing import Any

import pytest

from gangplan.v1 import cluster_pb2 as pb
from solver.codec import cluster_to_proto
from solver.errors import ManifestError
from solver.kube import build_model
from solver.kube.pod_templates import PodTemplates
from tests.builders import node, pod, podgroup, raw


def _members(times: list[Any]) -> list[dict[str, Any]]:
    base = pod("w-0").group("g").requests(cpu="1").obj()
    out = []
    for i, created in enumerate(times):
        body = copy.deepcopy(base)
        body["metadata"]["name"] = f"w-{i}"
        body["metadata"]["uid"] = f"uid-{i}"
        if created is not None:
            body["metadata"]["creationTimestamp"] = created
        out.append(body)
    return out


def test_copies_keep_their_own_name_time_and_gang() -> None:
    times = [
        "2026-11-30T06:00:00Z",
        None,
        datetime.datetime(2026, 11, 30, 6, 0, 2, tzinfo=datetime.UTC),
    ]
    loners = [pod(f"solo-{i}").requests(cpu="1").obj() for i in range(2)]  # gangs of one each
    model = build_model(raw(node("n").cpu("8").obj(), podgroup("g", 3), *_members(times), *loners))
    pods = {p.name: p for p in model.pods}
    assert [pods[f"w-{i}"].created for i in range(3)] == [
        "2026-11-30T06:00:00Z",
        None,
        "2026-11-30T06:00:02+00:00",
    ]
    assert {pods[f"w-{i}"].gang for i in range(3)} == {"default/g"}
    assert [pods[f"solo-{i}"].gang for i in range(2)] == ["default/solo-0", "default/solo-1"]
    assert pods["w-1"].labels is pods["w-0"].labels  # one template
    msg = pb.Cluster.FromString(cluster_to_proto(model).SerializeToString())
    encoded = {p.name: p for p in msg.pods}
    assert [encoded[f"w-{i}"].HasField("creation_time") for i in range(3)] == [True, False, True]
    assert [encoded[f"w-{i}"].creation_time.seconds % 60 for i in (0, 2)] == [0, 2]
    assert {encoded[f"w-{i}"].gang for i in range(3)} == {"default/g"}
    assert [encoded[f"solo-{i}"].gang for i in range(2)] == ["", ""]


@pytest.mark.parametrize(
    ("name", "field"), [("", "metadata.name"), (7, "metadata.name"), (None, "metadata.name")]
)
def test_a_bad_name_in_a_copy_is_reported_at_that_pod(name: object, field: str) -> None:
    members = _members(["2026-11-30T06:00:00Z"] * 3)
    members[2]["metadata"]["name"] = name
    with pytest.raises(ManifestError) as err:
        build_model(raw(podgroup("g", 3), *members))
    assert err.value.field == field
    assert err.value.document == "4"  # the third pod: documents count from 1, the PodGroup first


def test_pods_differing_in_a_label_share_their_spec_and_keep_their_labels() -> None:
    """An Indexed Job's pods: one index label each. The spec is validated once, each
    metadata on its own, and a bad label is still reported at its pod and field."""
    members = _members(["2026-11-30T06:00:00Z"] * 3)
    for i, body in enumerate(members):
        body["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] = str(i)
    model = build_model(raw(podgroup("g", 3), *members))
    pods = {p.name: p for p in model.pods}
    index = "batch.kubernetes.io/job-completion-index"
    assert [pods[f"w-{i}"].labels[index] for i in range(3)] == ["0", "1", "2"]
    templates = PodTemplates()
    first, second = (templates.parse(r)[0] for r in raw(*members[:2]))
    assert second.spec is first.spec and second.metadata.labels[index] == "1"  # one spec
    members[2]["metadata"]["labels"][index] = "not a valid value!"
    with pytest.raises(ManifestError) as err:
        build_model(raw(podgroup("g", 3), *members))
    assert (err.value.document, err.value.field) == ("4", "metadata.labels")
