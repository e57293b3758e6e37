"""Server reflection as clients use it: v1 (grpcurl, grpc-go's `grpcreflect`, Postman) by a
client written here from grpc's v1 protocol, v1alpha by grpcio-reflection's own client.

grpcio-reflection (<1.82) ships no v1 stubs and no v1 `.proto`, so the v1 client's messages
are declared below from grpc's `src/proto/grpc/reflection/v1/reflection.proto` (the fields it
uses, same names and numbers) in a pool of their own: nothing the server registers is used to
talk to it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format
from google.protobuf.descriptor import ServiceDescriptor
from google.protobuf.message import Message
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

from gangplan.v1 import placement_service_pb2 as spb

SERVICES = {
    "gangplan.v1.PlacementService",
    "grpc.health.v1.Health",
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
}
V1_METHOD = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"

_V1_PROTO = """
name: "grpc/reflection/v1/reflection.proto"  package: "grpc.reflection.v1"  syntax: "proto3"
message_type {
  name: "ServerReflectionRequest"
  field { name: "host" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING }
  field { name: "file_by_filename" number: 3 label: LABEL_OPTIONAL type: TYPE_STRING
          oneof_index: 0 }
  field { name: "file_containing_symbol" number: 4 label: LABEL_OPTIONAL type: TYPE_STRING
          oneof_index: 0 }
  field { name: "list_services" number: 7 label: LABEL_OPTIONAL type: TYPE_STRING
          oneof_index: 0 }
  oneof_decl { name: "message_request" }
}
message_type {
  name: "ServerReflectionResponse"
  field { name: "valid_host" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING }
  field { name: "original_request" number: 2 label: LABEL_OPTIONAL type: TYPE_MESSAGE
          type_name: ".grpc.reflection.v1.ServerReflectionRequest" }
  field { name: "file_descriptor_response" number: 4 label: LABEL_OPTIONAL type: TYPE_MESSAGE
          type_name: ".grpc.reflection.v1.FileDescriptorResponse" oneof_index: 0 }
  field { name: "list_services_response" number: 6 label: LABEL_OPTIONAL type: TYPE_MESSAGE
          type_name: ".grpc.reflection.v1.ListServiceResponse" oneof_index: 0 }
  field { name: "error_response" number: 7 label: LABEL_OPTIONAL type: TYPE_MESSAGE
          type_name: ".grpc.reflection.v1.ErrorResponse" oneof_index: 0 }
  oneof_decl { name: "message_response" }
}
message_type {
  name: "FileDescriptorResponse"
  field { name: "file_descriptor_proto" number: 1 label: LABEL_REPEATED type: TYPE_BYTES }
}
message_type {
  name: "ListServiceResponse"
  field { name: "service" number: 1 label: LABEL_REPEATED type: TYPE_MESSAGE
          type_name: ".grpc.reflection.v1.ServiceResponse" }
}
message_type {
  name: "ServiceResponse"
  field { name: "name" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING }
}
message_type {
  name: "ErrorResponse"
  field { name: "error_code" number: 1 label: LABEL_OPTIONAL type: TYPE_INT32 }
  field { name: "error_message" number: 2 label: LABEL_OPTIONAL type: TYPE_STRING }
}
"""


def _v1_messages() -> tuple[type[Message], type[Message]]:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(text_format.Parse(_V1_PROTO, descriptor_pb2.FileDescriptorProto()))
    return (
        message_factory.GetMessageClass(
            pool.FindMessageTypeByName("grpc.reflection.v1.ServerReflectionRequest")
        ),
        message_factory.GetMessageClass(
            pool.FindMessageTypeByName("grpc.reflection.v1.ServerReflectionResponse")
        ),
    )


class ReflectionV1Client:
    """What grpcurl does with `list` and `describe`, over `grpc.reflection.v1` only."""

    def __init__(self, channel: grpc.Channel) -> None:
        self._request, response = _v1_messages()
        self._call = channel.stream_stream(
            V1_METHOD,
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=response.FromString,
        )

    def ask(self, **request: str) -> Any:
        """One request on its own stream; the response message."""
        (answer,) = self._call(iter([self._request(**request)]), timeout=5)
        return answer

    def list_services(self) -> set[str]:
        return {s.name for s in self.ask(list_services="").list_services_response.service}

    def files(self, **request: str) -> list[descriptor_pb2.FileDescriptorProto]:
        answer = self.ask(**request)
        if answer.WhichOneof("message_response") == "error_response":
            raise LookupError(answer.error_response.error_code, answer.error_response.error_message)
        return [
            descriptor_pb2.FileDescriptorProto.FromString(raw)
            for raw in answer.file_descriptor_response.file_descriptor_proto
        ]

    def describe(self, service: str) -> ServiceDescriptor:
        """The service, its files and every file they import, loaded into a fresh pool."""
        pool = descriptor_pool.DescriptorPool()
        known = {f.name: f for f in self.files(file_containing_symbol=service)}

        def add(name: str) -> None:
            if name not in known:
                (known[name],) = self.files(file_by_filename=name)
            for dependency in known[name].dependency:
                add(dependency)
            try:
                pool.FindFileByName(name)
            except KeyError:
                pool.Add(known[name])

        for name in list(known):
            add(name)
        return pool.FindServiceByName(service)


@pytest.fixture
def v1(start: Any) -> Iterator[ReflectionV1Client]:
    _, port = start()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        yield ReflectionV1Client(channel)


def test_a_v1_client_lists_every_service(v1: ReflectionV1Client) -> None:
    assert v1.list_services() == SERVICES


def test_a_v1_client_describes_the_placement_service_with_its_imports(
    v1: ReflectionV1Client,
) -> None:
    service = v1.describe("gangplan.v1.PlacementService")
    expected = spb.DESCRIPTOR.services_by_name["PlacementService"]
    assert [m.name for m in service.methods] == [m.name for m in expected.methods]
    place = service.methods_by_name["PlaceJob"]
    # the request type resolved through the imported files, field by field
    assert [f.name for f in place.input_type.fields] == [
        f.name for f in spb.PlaceJobRequest.DESCRIPTOR.fields
    ]


def test_a_v1_client_calls_a_service_it_only_knows_from_reflection(
    v1: ReflectionV1Client, start: Any
) -> None:
    """grpcurl's way: the request built from reflected descriptors, sent as bytes."""
    _, port = start()
    check = v1.describe("grpc.health.v1.Health").methods_by_name["Check"]
    request = message_factory.GetMessageClass(check.input_type)(service="")
    response = message_factory.GetMessageClass(check.output_type)
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        answer = channel.unary_unary(
            "/grpc.health.v1.Health/Check",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=response.FromString,
        )(request, timeout=5)
    status = check.output_type.fields_by_name["status"].enum_type
    assert status.values_by_number[answer.status].name == "SERVING"


def test_the_v1_reflection_service_describes_itself_as_upstream_v1(v1: ReflectionV1Client) -> None:
    (own,) = v1.files(file_containing_symbol="grpc.reflection.v1.ServerReflection")
    assert (own.name, own.package) == ("grpc/reflection/v1/reflection.proto", "grpc.reflection.v1")
    assert own.options.go_package == "google.golang.org/grpc/reflection/grpc_reflection_v1"
    (method,) = own.service[0].method
    assert (method.input_type, method.output_type) == (
        ".grpc.reflection.v1.ServerReflectionRequest",
        ".grpc.reflection.v1.ServerReflectionResponse",
    )
    assert method.client_streaming and method.server_streaming


def test_an_unknown_symbol_is_an_error_response_not_a_broken_stream(
    v1: ReflectionV1Client,
) -> None:
    with pytest.raises(LookupError) as missing:
        v1.files(file_containing_symbol="no.such.Service")
    assert missing.value.args[0] == grpc.StatusCode.NOT_FOUND.value[0]


def test_grpcio_reflections_own_v1alpha_client_lists_and_resolves(start: Any) -> None:
    _, port = start()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        database = ProtoReflectionDescriptorDatabase(channel)
        assert set(database.get_services()) == SERVICES
        pool = descriptor_pool.DescriptorPool(database)
        service = pool.FindServiceByName("gangplan.v1.PlacementService")
        assert "PlaceJob" in service.methods_by_name
