"""Fuzzing both front doors with hostile input (strategies in `strategies.py`).

Oracles, from issue 17:
- the CLI (`gangplan schedule -f`, in-process): exit 0 with a Decision, or exit 2 with one
  error line; never a traceback (an exception escaping the command), never exit 3 (an
  internal fault: a Decision that failed `verify`), and input invalid by construction is
  never accepted;
- the gRPC service (a real server on loopback), every method: every call answers OK with
  a well-formed response or a client-side code, never UNKNOWN or INTERNAL (a Decision that
  failed `verify` is INTERNAL); invalid-by-construction requests get INVALID_ARGUMENT
  naming the field; the server is still SERVING at the end.

The default run is bounded (the hypothesis profile's examples per test); the slow profile
runs 5,000 manifests and 5,000 requests per method
(`HYPOTHESIS_PROFILE=slow pytest -m slow tests/fuzz`).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from clients.cli import app
from gangplan.v1 import placement_service_pb2 as spb
from tests.fuzz.fields import set_field
from tests.fuzz.manifests import hostile_manifest_text, invalid_manifest_text
from tests.fuzz.requests import (
    DOORS,
    FUZZ_SNAPSHOT,
    INVALID_REQUESTS,
    Door,
    base_cluster,
    hostile_request,
)

SLOW_EXAMPLES = 5_000
CLIENT_CODES = {
    grpc.StatusCode.OK,
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.DEADLINE_EXCEEDED,
}


# ----------------------------------------------------------------------------- the CLI


def run_cli(text: str, preempt: bool = False) -> tuple[int, str, str]:
    """`gangplan schedule -f` on `text` (with `--preempt`: preemption in every topology
    dialect on the hostile input too); the exit code and what it printed. An exception
    escaping the command (a traceback for a user) fails the test here."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "input.yaml"
        path.write_text(text, encoding="utf-8")
        args = ["schedule", "-f", str(path), "--engine", "greedy", "-o", "json"]
        result = CliRunner().invoke(app, args + (["--preempt"] if preempt else []))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"traceback for input:\n{text[:2000]}") from result.exception
    return result.exit_code, result.stdout, result.stderr


def check_cli_answer(text: str, preempt: bool = False) -> int:
    code, stdout, stderr = run_cli(text, preempt)
    assert code in (0, 2), f"exit {code}: {stderr[-2000:]}"
    if code == 0:
        json.loads(stdout)  # a whole Decision
    else:
        assert not stdout and "error:" in stderr and "Traceback" not in stderr
    return code


@given(hostile_manifest_text(), st.booleans())
def test_hostile_manifests_get_a_decision_or_one_error(text: str, preempt: bool) -> None:
    check_cli_answer(text, preempt)


@given(invalid_manifest_text())
def test_manifests_invalid_by_construction_are_refused(text: str) -> None:
    assert check_cli_answer(text) == 2


@pytest.mark.slow
@settings(max_examples=SLOW_EXAMPLES)
@given(hostile_manifest_text(), st.booleans())
def test_hostile_manifests_long_run(text: str, preempt: bool) -> None:
    check_cli_answer(text, preempt)


# ----------------------------------------------------------------------------- gRPC


def call(port: int, method: str, data: bytes) -> tuple[grpc.StatusCode, bytes | grpc.RpcError]:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = channel.unary_unary(f"/gangplan.v1.PlacementService/{method}")
        try:
            return grpc.StatusCode.OK, stub(data, timeout=30)
        except grpc.RpcError as err:
            return err.code(), err


def violations(err: grpc.RpcError) -> list[str]:
    """The field paths of an error's BadRequest detail (empty without one)."""
    status = rpc_status.from_call(err)  # type: ignore[arg-type]
    if status is None or not status.details:
        return []
    bad = error_details_pb2.BadRequest()
    status.details[0].Unpack(bad)
    return [v.field for v in bad.field_violations]


def store_fuzz_snapshot(port: int) -> None:
    """The snapshot every example may name, as it was before any example changed it."""
    put = spb.PutSnapshotRequest(snapshot_id=FUZZ_SNAPSHOT, cluster=base_cluster())
    code, answer = call(port, "PutSnapshot", put.SerializeToString())
    assert code == grpc.StatusCode.OK, answer


def check_grpc_answer(port: int, door: Door, data: bytes) -> grpc.StatusCode:
    store_fuzz_snapshot(port)
    code, answer = call(port, door.method, data)
    assert code in CLIENT_CODES, f"{door}: {code}: {getattr(answer, 'details', lambda: '')()}"
    if code == grpc.StatusCode.OK:
        assert isinstance(answer, bytes)
        door.response.FromString(answer)
    return code


@pytest.mark.parametrize("door", DOORS, ids=str)
def test_every_base_request_is_answered(port: int, door: Door) -> None:
    """The fuzzers start from valid requests, so that hostile values land near real ones."""
    assert check_grpc_answer(port, door, door.base().SerializeToString()) == grpc.StatusCode.OK


@pytest.mark.parametrize("door", DOORS, ids=str)
@given(data=st.data())
def test_hostile_requests_never_answer_unknown_or_internal(
    port: int, door: Door, data: st.DataObject
) -> None:
    check_grpc_answer(port, door, data.draw(hostile_request(door)))


@pytest.mark.slow
@pytest.mark.parametrize("door", DOORS, ids=str)
@settings(max_examples=SLOW_EXAMPLES)
@given(data=st.data())
def test_hostile_requests_long_run(port: int, door: Door, data: st.DataObject) -> None:
    check_grpc_answer(port, door, data.draw(hostile_request(door)))


@pytest.mark.parametrize(
    ("method", "path", "value", "field"), INVALID_REQUESTS, ids=lambda x: str(x)[:40]
)
def test_requests_invalid_by_construction_name_the_field(
    port: int, method: str, path: tuple[object, ...], value: object, field: str
) -> None:
    door = next(d for d in DOORS if d.method == method)
    request = door.base()
    set_field(request, path, value)
    store_fuzz_snapshot(port)
    code, err = call(port, method, request.SerializeToString())
    assert code == grpc.StatusCode.INVALID_ARGUMENT, code
    assert isinstance(err, grpc.RpcError)
    fields = violations(err)
    named = any(f.startswith(field) for f in fields) or field in (err.details() or "")
    assert named, (fields, err.details())
