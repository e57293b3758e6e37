"""The regression corpus: every committed input is refused with one error.

`corpus/*.yaml` go through `gangplan schedule -f` and must exit 2 with one error line;
`corpus/rpc/<Method>-<what>.txtpb` are requests in protobuf text format, sent to a real
server, each with a header naming the method and the code and field path it must get:

    # method: PlaceJob
    # expect: INVALID_ARGUMENT cluster.nodes[0].allocatable["nvidia.com/gpu"]
"""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from google.protobuf import text_format

from tests.fuzz.requests import DOORS
from tests.fuzz.test_fuzz import call, check_cli_answer, store_fuzz_snapshot, violations

HERE = Path(__file__).parent / "corpus"
CORPUS = sorted(HERE.glob("*.yaml"))
RPC_CORPUS = sorted((HERE / "rpc").glob("*.txtpb"))


def test_the_corpus_is_there() -> None:
    assert len(CORPUS) >= 12
    assert {p.name.split("-")[0] for p in RPC_CORPUS} == {d.method for d in DOORS}


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_each_corpus_input_is_refused_with_one_error(path: Path) -> None:
    assert check_cli_answer(path.read_text(encoding="utf-8")) == 2


def _header(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        key, sep, value = line.removeprefix("# ").partition(": ")
        if line.startswith("# ") and sep and key in ("method", "expect"):
            out[key] = value.strip()
    return out


@pytest.mark.parametrize("path", RPC_CORPUS, ids=[p.stem for p in RPC_CORPUS])
def test_each_rpc_corpus_request_gets_its_code_and_field(port: int, path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    header = _header(text)
    code_name, _, field = header["expect"].partition(" ")
    door = next(d for d in DOORS if d.method == header["method"])
    request = text_format.Parse(text, type(door.base())())
    store_fuzz_snapshot(port)
    code, err = call(port, door.method, request.SerializeToString())
    assert code == grpc.StatusCode[code_name], (code, getattr(err, "details", lambda: "")())
    assert isinstance(err, grpc.RpcError)
    named = violations(err)
    assert any(f.startswith(field) for f in named) or field in (err.details() or ""), named
