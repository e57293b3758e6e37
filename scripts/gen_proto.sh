#!/usr/bin/env bash
# Regenerate the committed stubs of proto/gangplan/v1/*.proto: Python into gangplan/v1/,
# Go into clients/go/gangplanv1/.
#
#   scripts/gen_proto.sh           lint the protos with buf, then regenerate the stubs
#   scripts/gen_proto.sh --check   the same into a scratch folder; fail if the committed
#                                  stubs differ (CI runs this)
#
# protoc derives import paths from the proto path: `-I proto` with
# proto/gangplan/v1/x.proto writes `from gangplan.v1 import x_pb2`, so the stubs live in the
# importable package gangplan/v1/. Pinned generators (pyproject.toml): grpcio-tools for the
# code, mypy-protobuf for the typed .pyi files. The Go stubs come from Debian's protoc,
# protoc-gen-go and protoc-gen-go-grpc (`clients/go/ci.sh --tools` installs them), whose
# versions their headers record.
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

for tool in protoc protoc-gen-go protoc-gen-go-grpc; do
  command -v "$tool" >/dev/null || {
    echo "error: $tool not found; clients/go/ci.sh --tools installs it" >&2
    exit 1
  }
done
go_module=github.com/gangplan/gangplan/clients/go
mkdir -p "$out/clients/go"
protoc -I proto -I /usr/include \
  --go_out="$out/clients/go" --go_opt=module="$go_module" \
  --go-grpc_out="$out/clients/go" --go-grpc_opt=module="$go_module" \
  proto/gangplan/v1/*.proto

# The Go module carries the .proto files it was generated from (embedded as gangplan.Protos):
# a module zip holds only its own folder, so they are copied in, and checked like the stubs.
mkdir -p "$out/clients/go/proto/gangplan/v1"
cp proto/gangplan/v1/*.proto "$out/clients/go/proto/gangplan/v1/"

if [[ "${1:-}" == "--check" ]]; then
  for f in "$out"/gangplan/v1/* "$out"/clients/go/gangplanv1/* "$out"/clients/go/proto/gangplan/v1/*; do
    committed="${f#"$out"/}"
    if ! diff -u "$committed" "$f"; then
      echo "error: $committed is stale; run scripts/gen_proto.sh and commit the result" >&2
      exit 1
    fi
  done
  echo "generated stubs are up to date"
fi
