"""The wire codec: the YAML reader and the protobuf front door give the same answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from google.protobuf.timestamp_pb2 import Timestamp
from typer.testing import CliRunner

from clients.cli import app
from gangplan.v1 import cluster_pb2 as pb
from solver import SCHEMA, load_manifests, schedule, snapshot_of
from solver.codec import (
    ConvertError,
    cluster_to_proto,
    decision_from_proto,
    decision_to_proto,
    snapshot_from_proto,
)
from solver.model import parse_job_affinity
from solver.start import END
from tests.builders import node, pod, queue, volcano_job

ROOT = Path(__file__).resolve().parents[2]
NOT_MANIFESTS = {"catalog.yaml", "sweep.yaml"}  # examples/plan/: planner inputs, not Kubernetes
EXAMPLES = sorted(
    str(p.relative_to(ROOT))
    for p in (ROOT / "examples").rglob("*.yaml")
    if "conf" not in p.name and p.name not in NOT_MANIFESTS
)


def _stable(d: dict[str, Any]) -> dict[str, Any]:
    # notes: the YAML reader's (a missing PodGroup, a dump without queues) stay with it
    return {k: v for k, v in d.items() if k not in ("seconds", "stats", "notes")}


@pytest.mark.parametrize("example", EXAMPLES)
def test_examples_round_trip_through_protobuf(example: str) -> None:
    model = load_manifests(str(ROOT / example))
    message = pb.Cluster.FromString(cluster_to_proto(model).SerializeToString())
    rebuilt = snapshot_from_proto(message, "cluster", SCHEMA)
    expected = snapshot_of(model)
    assert [n.model_dump() for n in rebuilt.nodes.nodes] == [
        n.model_dump() for n in expected.nodes.nodes
    ]
    assert [p.model_dump() for p in rebuilt.pending.values()] == [
        p.model_dump() for p in expected.pending.values()
    ]
    rows = expected.running.rows().tolist()
    assert rebuilt.running.rows().tolist() == rows
    assert [rebuilt.running.pod(r) for r in rows] == [expected.running.pod(r) for r in rows]
    # dialect: see cluster_to_proto; affinity compared parsed; members are per call (Workload)
    unsent = {"dialect", "affinity", "members"}
    assert {g: x.model_dump(exclude=unsent) for g, x in rebuilt.gangs.items()} == {
        g: x.model_dump(exclude=unsent) for g, x in expected.gangs.items()
    }
    for gid, gang in expected.gangs.items():
        assert parse_job_affinity(rebuilt.gangs[gid].affinity) == parse_job_affinity(gang.affinity)
    local = schedule(model, engine="greedy")
    remote = schedule(rebuilt, engine="greedy")
    assert _stable(remote.to_dict()) == _stable(local.to_dict())
    back = decision_from_proto(decision_to_proto(local))
    assert _stable(back.to_dict()) == _stable(local.to_dict())


def test_every_violation_is_reported_with_its_path() -> None:
    cluster = pb.Cluster(
        gangs=[pb.Gang(name="g", min_member=-1), pb.Gang(name="")],
        pods=[
            pb.Pod(name="a", requests={"": 1}),
            pb.Pod(
                name="b",
                gang="no-slash",
                tolerations=[pb.Toleration(operator=pb.TOLERATION_OPERATOR_EXISTS, value="v")],
            ),
            pb.Pod(name="a"),
        ],
        queues=[pb.Queue(name="q", capability={"cpu": -1})],
        topology=pb.NetworkTopology(
            layers=[pb.TopologyLayer(name="L"), pb.TopologyLayer(name="L")]
        ),
    )
    with pytest.raises(ConvertError) as err:
        snapshot_from_proto(cluster, "cluster", SCHEMA)
    assert [f for f, _ in err.value.violations] == [
        "cluster.gangs[0].min_member",
        "cluster.gangs[1].name",
        'cluster.pods[0].requests[""]',
        "cluster.pods[1].tolerations[0].value",
        "cluster.pods[1].gang",
        "cluster.pods[2].name",
        'cluster.queues[0].capability["cpu"]',
        "cluster.topology.layers[1].name",
    ]


@pytest.mark.parametrize(
    ("example", "flags"),
    [("ganggroup-gpu.yaml", []), ("preemption/job-preemption.yaml", ["--preempt"])],
)
def test_cli_schedule_with_server_matches_local(start: Any, example: str, flags: list[str]) -> None:
    _, port = start()
    runner = CliRunner()
    args = ["schedule", "-f", str(ROOT / "examples" / example), "--engine", "greedy", *flags]
    local = runner.invoke(app, args)
    remote = runner.invoke(app, [*args, "--server", f"127.0.0.1:{port}"])
    assert local.exit_code == 0 and remote.exit_code == 0, remote.output
    answer = _stable(json.loads(remote.stdout))
    assert answer == _stable(json.loads(local.stdout))
    assert bool(answer["victims"]) == bool(flags)  # --preempt reaches the server


def test_cli_why_with_server_gives_the_local_certificate(start: Any) -> None:
    """Certificates cross the wire whole: `why --server` equals `why` here."""
    _, port = start()
    example = str(ROOT / "examples" / "topology" / "koordinator-gather.yaml")
    args = ["why", "-f", example, "--gang", "default/train-big", "--engine", "greedy", "-o", "json"]
    local = CliRunner().invoke(app, args)
    remote = CliRunner().invoke(app, [*args, "--server", f"127.0.0.1:{port}"])
    assert local.exit_code == 0 and remote.exit_code == 0, remote.output
    here, there = json.loads(local.stdout), json.loads(remote.stdout)
    assert there["certificate"] == here["certificate"] and here["certificate"]["kind"] == "domain"
    assert there["reason"] == here["reason"]
    assert there["changes"] == here["changes"] and there["changes"]  # the service's own


def test_cli_why_with_server_gives_the_changes_and_start_of_the_service(start: Any) -> None:
    """`why --server` is the `Why` RPC: the changes (with a catalogue's node types sent on
    the wire) and the start estimate from `--now` are the service's, equal to the local
    ones."""
    _, port = start()
    example = str(ROOT / "examples" / "why" / "start.yaml")
    args = ["why", "-f", example, "--gang", "research/train", "--now", "2026-11-28T18:00:00Z",
            "-o", "json"]  # fmt: skip
    catalog = ["--catalog", str(ROOT / "examples" / "plan" / "catalog.yaml")]
    for extra in ([], catalog):
        local = CliRunner().invoke(app, [*args, *extra])
        remote = CliRunner().invoke(app, [*args, *extra, "--server", f"127.0.0.1:{port}"])
        assert local.exit_code == 0 and remote.exit_code == 0, remote.output
        here, there = json.loads(local.stdout), json.loads(remote.stdout)
        assert there["start"] == here["start"] and "~2 h 10 min" in there["start"]["text"]
        assert there["changes"] == here["changes"]
        kinds = [c["kind"] for c in there["changes"]]
        assert kinds == ["preemption", "nodes"], there["changes"]
        assert ("a100x8" in there["changes"][1]["change"]) == bool(extra), there["changes"]


@pytest.mark.parametrize("extra", [["--scheduler-name", "nobody"], ["--preempt"]])
def test_cli_why_with_server_keeps_the_selection_and_preemption(
    start: Any, extra: list[str]
) -> None:
    """`why --server` sends `--scheduler-name` (the service leaves other schedulers' pods
    pending, as here) and, with `--preempt` (the `Why` RPC has none), asks the Preempt RPC
    for the cycle: both answers equal the local ones."""
    _, port = start()
    example = str(ROOT / "examples" / "why" / "start.yaml")
    args = ["why", "-f", example, "--gang", "research/train", "--now", "2026-11-28T18:00:00Z",
            "-o", "json", *extra]  # fmt: skip
    local = CliRunner().invoke(app, args)
    remote = CliRunner().invoke(app, [*args, "--server", f"127.0.0.1:{port}"])
    assert local.exit_code == 0 and remote.exit_code == 0, remote.output
    here, there = json.loads(local.stdout), json.loads(remote.stdout)
    assert (there["reason"], there["certificate"]) == (here["reason"], here["certificate"])
    assert there["changes"] == here["changes"]
    if "--preempt" in extra:
        assert here["reason"].startswith("nominated after preemption")
    else:
        assert here["certificate"] is None and not here["placed"]


def test_the_gangs_ahead_cross_the_wire(start: Any, tmp_path: Path) -> None:
    """tests/test_start.py's queue case as a file: `why --server` names the gang ahead of
    it in its queue as `why` does here."""
    objects = [
        node("n1").gpu(8).obj(), node("n2").gpu(8).obj(), node("n3").gpu(4).obj(),
        queue("q"),
        pod("old").requests(gpu=8).on("n1").annotate(END, "2026-11-28T20:10:00Z").obj(),
        *volcano_job("first", "q", 1, gpu=4, priority=100), *volcano_job("t", "q", 3, gpu=4),
    ]  # fmt: skip
    path = tmp_path / "ahead.yaml"
    path.write_text(yaml.safe_dump_all(objects), encoding="utf-8")
    _, port = start()
    args = ["why", "-f", str(path), "--gang", "default/t", "--now", "2026-11-28T18:00:00Z",
            "-o", "json"]  # fmt: skip
    local = CliRunner().invoke(app, args)
    remote = CliRunner().invoke(app, [*args, "--server", f"127.0.0.1:{port}"])
    assert local.exit_code == 0 and remote.exit_code == 0, remote.output
    here, there = json.loads(local.stdout), json.loads(remote.stdout)
    assert here["start"]["ahead"] == ["default/first"] and there["start"] == here["start"]


def test_cli_schedule_with_server_reports_errors(start: Any) -> None:
    _, port = start()
    example = str(ROOT / "examples" / "ganggroup-gpu.yaml")
    result = CliRunner().invoke(
        app, ["schedule", "-f", example, "--engine", "nope", "--server", f"127.0.0.1:{port}"]
    )
    assert result.exit_code == 2
    assert "INVALID_ARGUMENT" in result.stderr and "options.engine" in result.stderr


def test_cli_serve_rejects_bad_settings(tmp_path: Path) -> None:
    cert = tmp_path / "c.pem"
    cert.write_text("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n")
    result = CliRunner().invoke(app, ["serve", "--tls-cert", str(cert)])
    assert result.exit_code == 2
    assert "tls_cert and tls_key must be given together" in result.stderr


def test_replicas_converted_once_keep_their_own_name_and_implicit_gang() -> None:
    worker = pb.Pod(namespace="ml", gang="ml/g", requests={"cpu": 500}, labels={"r": "w"})
    loner = pb.Pod(namespace="ml", requests={"cpu": 500})
    pods = []
    for name in ("w0", "w1", "w2"):
        pods.append(pb.Pod(name=name))
        pods[-1].CopyFrom(worker)
        pods[-1].name = name
    for name in ("s0", "s1"):
        pods.append(pb.Pod(name=name))
        pods[-1].CopyFrom(loner)
        pods[-1].name = name
    cluster = pb.Cluster(gangs=[pb.Gang(namespace="ml", name="g", min_member=3)], pods=pods)
    pending = snapshot_from_proto(cluster, "cluster", SCHEMA).pending
    assert sorted((p.key, p.gang) for p in pending.values()) == [
        ("ml/s0", "ml/s0"),  # a pod without a gang is a gang of its own, not its template's
        ("ml/s1", "ml/s1"),
        ("ml/w0", "ml/g"),
        ("ml/w1", "ml/g"),
        ("ml/w2", "ml/g"),
    ]
    workers = [p for p in pending.values() if p.gang == "ml/g"]
    assert all(p.labels == {"r": "w"} and p.requests == workers[0].requests for p in workers)


def test_a_bad_replica_is_reported_at_every_pod() -> None:
    pods = [pb.Pod(name=f"w{i}", gang="no-slash", requests={"cpu": 1}) for i in range(3)]
    with pytest.raises(ConvertError) as err:
        snapshot_from_proto(pb.Cluster(pods=pods), "cluster", SCHEMA)
    assert [f for f, _ in err.value.violations] == [f"cluster.pods[{i}].gang" for i in range(3)]


def test_gangs_of_one_shape_share_a_template_and_keep_their_own_gang() -> None:
    """Pods that differ only in name and gang (a job of many gangs) are read once and
    copied under each name and gang; a bad gang id after a good one is still reported."""
    gangs = [pb.Gang(namespace="ml", name=f"g{g}", min_member=2) for g in range(3)]
    pods = [
        pb.Pod(namespace="ml", name=f"g{g}-{i}", gang=f"ml/g{g}", requests={"cpu": 1000})
        for g in range(3)
        for i in range(2)
    ]
    pending = snapshot_from_proto(pb.Cluster(gangs=gangs, pods=pods), "cluster", SCHEMA).pending
    assert sorted((p.key, p.gang) for p in pending.values()) == [
        (f"ml/g{g}-{i}", f"ml/g{g}") for g in range(3) for i in range(2)
    ]
    bad = pb.Pod(namespace="ml", name="x", gang="no-slash", requests={"cpu": 1000})
    with pytest.raises(ConvertError) as err:
        snapshot_from_proto(pb.Cluster(gangs=gangs, pods=[*pods, bad]), "cluster", SCHEMA)
    assert err.value.violations == [
        ("cluster.pods[6].gang", "must be a gang id `namespace/name`, got 'no-slash'")
    ]


def test_replicas_created_apart_keep_their_own_creation_time() -> None:
    """A template is shared across creation times (a controller creates a gang's pods one
    by one); each copy keeps its own, and a bad one is still reported at its pod."""
    pods = [
        pb.Pod(
            namespace="ml",
            name=f"w{i}",
            gang="ml/g",
            requests={"cpu": 1000},
            creation_time=Timestamp(seconds=1_700_000_000 + i),
        )
        for i in range(3)
    ]
    cluster = pb.Cluster(gangs=[pb.Gang(namespace="ml", name="g", min_member=3)], pods=pods)
    pending = snapshot_from_proto(cluster, "cluster", SCHEMA).pending
    assert [pending[f"ml/w{i}"].created for i in range(3)] == [
        "2023-11-14T22:13:20Z",
        "2023-11-14T22:13:21Z",
        "2023-11-14T22:13:22Z",
    ]
    pods[2].creation_time.seconds = 10**12  # past year 9999
    with pytest.raises(ConvertError) as err:
        snapshot_from_proto(pb.Cluster(gangs=cluster.gangs, pods=pods), "cluster", SCHEMA)
    assert [f for f, _ in err.value.violations] == ["cluster.pods[2].creation_time"]


def test_workload_api_gang_fields_travel_and_are_checked() -> None:
    good = pb.Cluster(
        gangs=[
            pb.Gang(
                name="w", min_member=2, topology_key="rack", disruption_mode=pb.DISRUPTION_MODE_ALL
            )
        ]
    )
    gang = snapshot_from_proto(good, "cluster", SCHEMA).gangs["default/w"]
    assert (gang.dialect, gang.topology_key, gang.disruption_mode) == (
        "scheduling.k8s.io",
        "rack",
        "All",
    )
    bad = pb.Cluster(
        gangs=[
            pb.Gang(name="a", min_member=1, topology_key="rack", affinity=pb.GangAffinity()),
            pb.Gang(name="b", min_member=1, disruption_mode=7),  # type: ignore[arg-type]
        ]
    )
    with pytest.raises(ConvertError) as err:
        snapshot_from_proto(bad, "cluster", SCHEMA)
    assert [f for f, _ in err.value.violations] == [
        "cluster.gangs[0].topology_key",
        "cluster.gangs[1].disruption_mode",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-27T10:00:00Z", (1795773600, 0)),
        ("2026-11-27T10:00:00.5+01:00", (1795770000, 500_000_000)),
        ("yesterday", None),  # not RFC 3339: no time, ordering falls back to ids
    ],
)
def test_creation_times_travel_and_a_bad_one_is_left_out(
    text: str, expected: tuple[int, int] | None, tmp_path: Path
) -> None:
    # parsed times are kept per text (pods created in one second share it): each pod still
    # gets its own field, twice in a row from the same text
    body = f"""
apiVersion: v1
kind: Pod
metadata: {{name: a, creationTimestamp: "{text}"}}
spec: {{containers: [{{name: c, image: x}}]}}
---
apiVersion: v1
kind: Pod
metadata: {{name: b, creationTimestamp: "{text}"}}
spec: {{containers: [{{name: c, image: x}}]}}
"""
    (tmp_path / "pods.yaml").write_text(body)
    for _ in range(2):
        pods = cluster_to_proto(load_manifests(str(tmp_path / "pods.yaml"))).pods
        for p in pods:
            if expected is None:
                assert not p.HasField("creation_time")
            else:
                assert (p.creation_time.seconds, p.creation_time.nanos) == expected


def test_a_preemption_victim_stays_one_over_grpc(tmp_path: Path) -> None:
    # DisruptionTarget=True (PreemptionByScheduler) on a terminating pod: the eligibility
    # rule "no second preemption while a victim terminates on the nominated node" needs it
    (tmp_path / "v.yaml").write_text(
        """
apiVersion: v1
kind: Pod
metadata: {name: v, deletionTimestamp: "2026-01-01T00:00:00Z"}
spec: {nodeName: n, containers: [{name: c, image: x}]}
status:
  phase: Running
  conditions: [{type: DisruptionTarget, status: "True", reason: PreemptionByScheduler}]
"""
    )
    model = load_manifests(str(tmp_path / "v.yaml"))
    (msg,) = cluster_to_proto(model).pods
    assert msg.preempted and msg.terminating
    snapshot = snapshot_from_proto(cluster_to_proto(model), "cluster", SCHEMA)
    assert snapshot.running.pod(0).preempted  # its only running pod
