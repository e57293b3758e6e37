#!/usr/bin/env bash
# Regenerate the committed Python stubs of proto/gangplan/v1/*.proto into gangplan/v1/.
#
#   scripts/gen_proto.sh           lint the protos with buf, then regenerate the stubs
#   scripts/gen_proto.sh --check   the same into a scratch folder; fail if the committed
#                                  stubs differ (CI runs this)
#
# protoc derives import paths from the proto path: `-I proto` with
# proto/gangplan/v1/x.proto writes `from gangplan.v1 import x_pb2`, so the stubs live in the
# importable package gangplan/v1/. Pinned generators (pyproject.toml): grpcio-tools for the
# code, mypy-protobuf for the typed .pyi files.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
BIN=.venv/bin

"$BIN/buf" lint proto
"$BIN/buf" format --diff --exit-code proto

out=.
if [[ "${1:-}" == "--check" ]]; then
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi
"$PY" -m grpc_tools.protoc -I proto \
  --plugin=protoc-gen-mypy="$BIN/protoc-gen-mypy" \
  --plugin=protoc-gen-mypy_grpc="$BIN/protoc-gen-mypy_grpc" \
  --python_out="$out" --grpc_python_out="$out" --mypy_out="$out" --mypy_grpc_out="$out" \
  proto/gangplan/v1/*.proto

if [[ "${1:-}" == "--check" ]]; then
  for f in "$out"/gangplan/v1/*; do
    committed="gangplan/v1/$(basename "$f")"
    if ! diff -u "$committed" "$f"; then
      echo "error: $committed is stale; run scripts/gen_proto.sh and commit the result" >&2
      exit 1
    fi
  done
  echo "generated stubs are up to date"
fi
