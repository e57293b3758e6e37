"""Generated protobuf and gRPC stubs of `gangplan.v1` (proto/gangplan/v1/*.proto).

Do not edit the `*_pb2*` files: `scripts/gen_proto.sh` regenerates them, and CI fails when
the committed files differ from a fresh generation.
"""
