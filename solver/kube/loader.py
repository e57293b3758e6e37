"""Read Kubernetes YAML as users have it: files or stdin, multi-document, `kind: List`."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from solver.errors import ManifestError
from solver.yaml_limits import not_text, one_line, safe_load_all

__all__ = ["RawObject", "read_sources"]

STDIN = "-"


@dataclass(frozen=True)
class RawObject:
    """One Kubernetes object as parsed YAML, with where it came from (for error messages)."""

    source: str  # file name, or `<stdin>`
    document: str  # 1-based document index; `3.items[4]` inside a List
    body: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.body.get("kind", ""))

    @property
    def api_version(self) -> str:
        return str(self.body.get("apiVersion", ""))

    @property
    def label(self) -> str:
        """`Kind ns/name` (or `Kind name`) for error messages; best effort on bad input."""
        meta = self.body.get("metadata")
        name = ns = ""
        if isinstance(meta, dict):
            name = str(meta.get("name") or "")
            ns = str(meta.get("namespace") or "")
        ident = f"{ns}/{name}" if ns and name else name
        return f"{self.kind} {ident}".strip()

    def error(self, message: str, field: str | None = None) -> ManifestError:
        return ManifestError(
            message, source=self.source, document=self.document, obj=self.label or None, field=field
        )


def read_sources(paths: Iterable[str | Path]) -> list[RawObject]:
    """Every object of every file, in order; `-` reads standard input once."""
    objects: list[RawObject] = []
    for path in paths:
        if str(path) == STDIN:
            objects.extend(_parse_text(sys.stdin.read(), "<stdin>"))
            continue
        if Path(path).is_dir():
            found = sorted(
                p for p in Path(path).iterdir() if p.suffix in (".yaml", ".yml", ".json")
            )
            objects.extend(read_sources(found))
            continue
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ManifestError(
                f"cannot read file: {exc.strerror or exc}", source=str(path)
            ) from exc
        except UnicodeDecodeError as exc:
            raise ManifestError(f"file is {not_text(exc)}", source=str(path)) from None
        objects.extend(_parse_text(text, str(path)))
    return objects


def _parse_text(text: str, source: str) -> Iterator[RawObject]:
    docs: list[Any] = []
    try:
        docs = safe_load_all(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        document = text[: mark.index].count("\n---") + 1 if mark is not None else None
        raise ManifestError(
            f"malformed YAML: {one_line(exc)}", source=source, document=document
        ) from None
    for index, doc in enumerate(docs, start=1):
        if doc is None:
            continue
        yield from _objects_of(doc, source, str(index))


def _objects_of(doc: Any, source: str, document: str) -> Iterator[RawObject]:
    if not isinstance(doc, dict):
        raise ManifestError(
            f"expected a Kubernetes object (a mapping), got {type(doc).__name__}",
            source=source,
            document=document,
        )
    kind = doc.get("kind")
    if not isinstance(kind, str) or not kind:
        raise ManifestError(
            "missing required field", source=source, document=document, field="kind"
        )
    if kind == "List" or (kind.endswith("List") and "items" in doc):
        items = doc.get("items")
        if items is None:
            return
        if not isinstance(items, list):
            raise ManifestError(
                "must be a list", source=source, document=document, obj=kind, field="items"
            )
        for i, item in enumerate(items):
            sub = f"{document}.items[{i}]"
            if isinstance(item, dict) and "kind" not in item and kind != "List":
                # Typed lists (PodList, NodeList) may omit kind/apiVersion on their items.
                item = {
                    "kind": kind.removesuffix("List"),
                    "apiVersion": doc.get("apiVersion"),
                    **item,
                }
            yield from _objects_of(item, source, sub)
        return
    yield RawObject(source=source, document=document, body=doc)
