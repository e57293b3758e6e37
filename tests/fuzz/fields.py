"""Every scalar field of a request, found from its descriptors, and a setter that writes a
hostile value into one as a careless client's encoder would.

    scalar_paths(request)      {"int": [...], "str": [...], "double": [...], "bool": [...]}
    set_field(request, path, value)
    every_field(descriptor)    {(message, field)} of every scalar a request type can hold
    fields_set(request)        {(message, field)} the walk of `scalar_paths` reaches

A path is the attribute names and indices from the request down to one scalar:
`("cluster", "nodes", 0, "allocatable", "cpu")`. The walk goes into every sub-message the
request has set (and every element of its repeated fields), and lists every scalar field
of each, set or not, so that a field added to the .proto is fuzzed the day it is added.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

Path = tuple[Any, ...]

_KIND = {
    FieldDescriptor.CPPTYPE_INT32: "int",
    FieldDescriptor.CPPTYPE_INT64: "int",
    FieldDescriptor.CPPTYPE_UINT32: "int",
    FieldDescriptor.CPPTYPE_UINT64: "int",
    FieldDescriptor.CPPTYPE_ENUM: "int",
    FieldDescriptor.CPPTYPE_STRING: "str",
    FieldDescriptor.CPPTYPE_DOUBLE: "double",
    FieldDescriptor.CPPTYPE_FLOAT: "double",
    FieldDescriptor.CPPTYPE_BOOL: "bool",
}


def scalar_paths(message: Message) -> dict[str, list[Path]]:
    out: dict[str, list[Path]] = {kind: [] for kind in sorted(set(_KIND.values()))}
    _walk(message, (), out, set())
    return out


def fields_set(message: Message) -> set[tuple[str, str]]:
    owners: set[tuple[str, str]] = set()
    _walk(message, (), {kind: [] for kind in set(_KIND.values())}, owners)
    return owners


def every_field(descriptor: Descriptor) -> set[tuple[str, str]]:
    out: set[tuple[str, str]] = set()
    todo, seen = [descriptor], set()
    while todo:
        desc = todo.pop()
        if desc.full_name in seen:
            continue
        seen.add(desc.full_name)
        for field in desc.fields:
            inner = field.message_type
            if inner is not None and _is_map(field):  # a map: its values' type decides
                inner = inner.fields_by_name["value"].message_type
            if inner is None:
                out.add((desc.full_name, field.name))
            else:
                todo.append(inner)
    return out


def _is_map(field: FieldDescriptor) -> bool:
    entry = field.message_type
    return entry is not None and entry.GetOptions().map_entry


def _walk(
    message: Message, prefix: Path, out: dict[str, list[Path]], owners: set[tuple[str, str]]
) -> None:
    for field in message.DESCRIPTOR.fields:
        value = getattr(message, field.name)
        path = (*prefix, field.name)
        owner = (message.DESCRIPTOR.full_name, field.name)
        if _is_map(field):
            kind = _KIND.get(field.message_type.fields_by_name["value"].cpp_type)
            for key in sorted(value):
                if kind is None:  # a map of messages
                    _walk(value[key], (*path, key), out, owners)
                else:
                    out[kind].append((*path, key))
                    owners.add(owner)
        elif field.cpp_type == FieldDescriptor.CPPTYPE_MESSAGE:
            if _repeated(field):
                for i, item in enumerate(value):
                    _walk(item, (*path, i), out, owners)
            elif message.HasField(field.name):
                _walk(value, path, out, owners)
        elif _repeated(field):
            out[_KIND[field.cpp_type]] += [(*path, i) for i in range(max(len(value), 1))]
            owners.add(owner)
        else:
            out[_KIND[field.cpp_type]].append(path)
            owners.add(owner)


def _repeated(field: FieldDescriptor) -> bool:
    return bool(field.label == FieldDescriptor.LABEL_REPEATED)


def _clamp(value: Any, bits: int) -> Any:
    if not isinstance(value, int) or isinstance(value, bool):
        return value
    half = 2 ** (bits - 1)
    return (value + half) % (2 * half) - half


def set_field(message: Any, path: Path, value: Any) -> None:
    """Set a scalar, map entry or repeated scalar at `path`; integers the field cannot hold
    are wrapped into its wire type, as a hostile client's encoder would send them."""
    target, parent = message, message
    for step in path[:-1]:
        parent = target
        target = target[step] if isinstance(step, int) else getattr(target, step)
    last = path[-1]
    if not hasattr(target, "DESCRIPTOR"):  # a map (int32, int64 or string values) or a list
        if isinstance(last, int) and last >= len(target):
            target.append(value)
        else:
            owner = parent.DESCRIPTOR.fields_by_name[path[-2]]
            entry = owner.message_type
            value_type = entry.fields_by_name["value"].cpp_type if entry is not None else None
            target[last] = _clamp(value, 32 if value_type == owner.CPPTYPE_INT32 else 64)
        return
    field = target.DESCRIPTOR.fields_by_name[last]
    if field.cpp_type in (field.CPPTYPE_INT32, field.CPPTYPE_ENUM):
        value = _clamp(value, 32)
    elif field.cpp_type == field.CPPTYPE_INT64:
        value = _clamp(value, 64)
    elif field.cpp_type == field.CPPTYPE_DOUBLE:
        value = float(value)
    elif field.cpp_type == field.CPPTYPE_BOOL:
        value = bool(value)
    setattr(target, last, value)
