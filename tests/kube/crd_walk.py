"""Walk a kind's upstream field tree and say, per field, what gangplan does with it.

For every leaf field of an object's upstream schema (`crd_fields.json`, vendored from each
project's CRD by `scripts/vendor_crd_fields.py`; the built-in kinds from the Kubernetes
API's own schema), the walk sets a sample value on a valid base scenario and reads the
whole input again:

* `refused`: the reader rejects it with an error naming the field (or an enclosing one);
* `noted`: a new note names the field (or an enclosing one);
* `read`: the model read differs (pods, gangs, queues, topology, ...);
* otherwise the field was dropped in silence, unless `solver/kube/fields.py` lists it as
  not scheduling input, with why.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes_validate

from solver.errors import ManifestError
from solver.kube import load_objects
from tests.builders import raw

CRDS = json.loads(Path(__file__).with_name("crd_fields.json").read_text())
GENERIC = {"spec", "template", "metadata", "items", "sample", "name"}
Schema = dict[str, Any]


def builtin_schema(definition: str) -> Schema:
    """A Kubernetes API type as the same tree the CRD schemas are trimmed to; pod templates
    and object metadata left to the core walk."""
    version = kubernetes_validate.latest_version()
    root = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
    defs = json.loads((root / f"v{version}-local" / "_definitions.json").read_text())["$defs"]

    def tree(node: Schema, depth: int) -> Schema:
        if "$ref" in node or "allOf" in node:
            ref = node.get("$ref") or node["allOf"][0]["$ref"]
            name = ref.rsplit("/", 1)[1]
            if name.endswith(("PodTemplateSpec", "ObjectMeta")):
                return {"$pod": "template"} if name.endswith("PodTemplateSpec") else {}
            if name.endswith(("Quantity", "IntOrString")):
                return {"type": "int-or-string"}
            if name.endswith(("Time", "MicroTime")):
                return {"type": "string"}
            return tree(defs[name], depth + 1) if depth < 12 else {}
        out: Schema = {}
        kind = node.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), None)
        if kind:
            out["type"] = kind
        if "enum" in node:
            out["enum"] = node["enum"]
        if "properties" in node:
            out["properties"] = {k: tree(v, depth) for k, v in node["properties"].items()}
        if isinstance(node.get("items"), dict):
            out["items"] = tree(node["items"], depth)
        if isinstance(node.get("additionalProperties"), dict):
            out["additionalProperties"] = tree(node["additionalProperties"], depth)
        return out

    return tree(defs[definition], 0)


@dataclass(frozen=True)
class Leaf:
    path: tuple[str, ...]  # keys; "[0]" an array's first item, "[*]" a map's first key
    schema: Schema

    @property
    def text(self) -> str:
        return ".".join(self.path).replace(".[", "[")


def leaves(schema: Schema, path: tuple[str, ...] = ()) -> Iterator[Leaf]:
    if "$pod" in schema:
        return
    if schema.get("properties"):
        for key, sub in schema["properties"].items():
            yield from leaves(sub, (*path, key))
        return
    items = schema.get("items")
    if isinstance(items, dict) and items.get("properties"):
        yield from leaves(items, (*path, "[0]"))
        return
    values = schema.get("additionalProperties")
    if isinstance(values, dict) and values.get("properties"):
        yield from leaves(values, (*path, "[*]"))
        return
    yield Leaf(path, schema)


def sample(schema: Schema) -> Any:
    """A value of the field's type unlike its default: the last enum value, 3, true, ..."""
    if schema.get("enum"):
        return schema["enum"][-1]
    kind = schema.get("type")
    if kind == "boolean":
        return True
    if kind in ("integer", "number", "int-or-string"):
        return 3
    if kind == "array":
        return [sample(schema.get("items") or {"type": "string"})]
    if kind == "object" or "additionalProperties" in schema:
        values = schema.get("additionalProperties")
        return {"sample-key": sample(values if isinstance(values, dict) else {"type": "string"})}
    return "sample-value"


def put(body: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node: Any = body
    for i, key in enumerate(path):
        last = i == len(path) - 1
        if key == "[0]":
            if not node:
                node.append({})
            if last:
                node[0] = value
            node = node[0]
            continue
        if key == "[*]":
            first = next(iter(node), "sample-key")
            if last:
                node[first] = value
            node = node.setdefault(first, {})
            continue
        if last:
            node[key] = value
            return
        nxt = path[i + 1]
        default: Any = [] if nxt == "[0]" else {}
        if not isinstance(node.get(key), type(default)):
            node[key] = default
        node = node[key]


def _names(path: tuple[str, ...]) -> list[str]:
    return [p for p in path if not p.startswith("[") and p not in GENERIC]


def _mentions(text: str, names: list[str]) -> bool:
    """A name as a word or a word's start (`priorityClass` in `priorityClassName`), any case."""
    return any(re.search(rf"\b{re.escape(n)}", text, re.IGNORECASE) for n in names)


def classify(objects: list[dict[str, Any]], index: int, root: tuple[str, ...], leaf: Leaf) -> str:
    """`refused`, `noted`, `read`, or `silent` (see the module docstring)."""
    base = load_objects(raw(*objects))
    changed = copy.deepcopy(objects)
    put(changed[index], (*root, *leaf.path), sample(leaf.schema))
    names = _names((*root, *leaf.path))
    try:
        model = load_objects(raw(*changed))
    except ManifestError as err:
        return "refused" if _mentions(str(err), names) else f"refused elsewhere: {err}"
    new_notes = [n for n in model.notes if n not in base.notes]
    if any(_mentions(n, names) for n in new_notes):
        return "noted"
    without = model.model_copy(update={"notes": ()}).model_dump_json()
    if without != base.model_copy(update={"notes": ()}).model_dump_json():
        return "read"
    return "silent"
