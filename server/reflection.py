"""gRPC server reflection, v1 and v1alpha.

grpcio-reflection (<1.82, as the protobuf pin requires) serves only
`grpc.reflection.v1alpha.ServerReflection`; current clients (grpcurl, grpc-go's
`grpcreflect`, Postman) ask `grpc.reflection.v1.ServerReflection` first. The two protocols are
the same messages under another package (grpc's `src/proto/grpc/reflection/v1/reflection.proto`
was copied from v1alpha: same fields, same numbers), so one servicer answers both: v1 requests
parse as v1alpha bytes. The v1 file is derived at start-up from v1alpha's descriptor, renamed
and given upstream v1's file options, so that a v1 client can also describe the reflection
service itself.
"""

from __future__ import annotations

from collections.abc import Iterable

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.descriptor import ServiceDescriptor
from grpc_reflection.v1alpha import reflection, reflection_pb2, reflection_pb2_grpc

__all__ = ["V1ALPHA_SERVICE_NAME", "V1_SERVICE_NAME", "enable_reflection"]

V1ALPHA_SERVICE_NAME: str = reflection.SERVICE_NAME
V1_SERVICE_NAME = "grpc.reflection.v1.ServerReflection"
_V1ALPHA, _V1 = "grpc.reflection.v1alpha", "grpc.reflection.v1"


def _renamed(type_name: str) -> str:
    prefix = f".{_V1ALPHA}."
    return f".{_V1}.{type_name.removeprefix(prefix)}" if type_name.startswith(prefix) else type_name


def _rename_fields(messages: Iterable[descriptor_pb2.DescriptorProto]) -> None:
    for message in messages:
        for field in message.field:
            if field.HasField("type_name"):  # message and enum fields only
                field.type_name = _renamed(field.type_name)
        _rename_fields(message.nested_type)


def _register_v1_descriptors() -> None:
    """Add `grpc/reflection/v1/reflection.proto` to the default pool (once per process)."""
    pool = descriptor_pool.Default()  # type: ignore[no-untyped-call]
    try:
        pool.FindServiceByName(V1_SERVICE_NAME)
        return
    except KeyError:
        pass
    proto = descriptor_pb2.FileDescriptorProto()
    reflection_pb2.DESCRIPTOR.CopyToProto(proto)  # type: ignore[no-untyped-call]
    proto.name = "grpc/reflection/v1/reflection.proto"
    proto.package = _V1
    # v1alpha's java/go package options name v1alpha; these are upstream v1's
    proto.options.Clear()
    proto.options.go_package = "google.golang.org/grpc/reflection/grpc_reflection_v1"
    proto.options.java_multiple_files = True
    proto.options.java_package = "io.grpc.reflection.v1"
    proto.options.java_outer_classname = "ServerReflectionProto"
    _rename_fields(proto.message_type)
    for service in proto.service:
        for method in service.method:
            method.input_type = _renamed(method.input_type)
            method.output_type = _renamed(method.output_type)
    pool.AddSerializedFile(proto.SerializeToString())


def enable_reflection(
    service_names: Iterable[str], server: grpc.Server
) -> tuple[ServiceDescriptor, ServiceDescriptor]:
    """Serve reflection v1 and v1alpha for `service_names` (and for both reflection services);
    returns the two reflection services' descriptors (v1, v1alpha)."""
    _register_v1_descriptors()
    servicer = reflection.ReflectionServicer(
        (*service_names, V1_SERVICE_NAME, V1ALPHA_SERVICE_NAME)
    )
    reflection_pb2_grpc.add_ServerReflectionServicer_to_server(servicer, server)  # type: ignore[no-untyped-call]
    v1 = grpc.method_handlers_generic_handler(
        V1_SERVICE_NAME,
        {
            "ServerReflectionInfo": grpc.stream_stream_rpc_method_handler(
                servicer.ServerReflectionInfo,
                request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
                response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString,
            )
        },
    )
    server.add_generic_rpc_handlers((v1,))
    pool = descriptor_pool.Default()  # type: ignore[no-untyped-call]
    return (
        pool.FindServiceByName(V1_SERVICE_NAME),
        reflection_pb2.DESCRIPTOR.services_by_name["ServerReflection"],
    )
