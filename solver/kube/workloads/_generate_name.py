"""`metadata.generateName` without `metadata.name`, as `kubectl create -f` accepts it: the API
server names the object `generateName` + 5 random characters (apiserver
`pkg/storage/names/generate.go`: `utilrand.String(5)` over the alphabet
`bcdfghjklmnpqrstvwxz2456789`, the prefix cut to 58 characters). Here the suffix is drawn
from a hash of where the object was read (file, document) and its prefix, so that a file
gives the same names on every run; each naming is noted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from solver.kube.loader import RawObject

__all__ = ["generated_names"]

ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand
SUFFIX = 5
MAX_PREFIX = 63 - SUFFIX  # names.maxGeneratedNameLength


def _suffix(raw: RawObject, prefix: str) -> str:
    digest = hashlib.sha1(f"{raw.source}\0{raw.document}\0{prefix}".encode()).digest()
    return "".join(ALPHABET[b % len(ALPHABET)] for b in digest[:SUFFIX])


def generated_names(objects: Iterable[RawObject]) -> tuple[list[RawObject], list[str]]:
    """The objects, each one named by its `generateName` given its name; the notes."""
    out: list[RawObject] = []
    notes: list[str] = []
    for raw in objects:
        meta = raw.body.get("metadata")
        prefix = meta.get("generateName") if isinstance(meta, dict) else None
        if not isinstance(meta, dict) or meta.get("name") or not isinstance(prefix, str):
            out.append(raw)
            continue
        name = prefix[:MAX_PREFIX] + _suffix(raw, prefix)
        body = {**raw.body, "metadata": {**meta, "name": name}}
        out.append(RawObject(raw.source, raw.document, body))
        notes.append(
            f"{raw.source}: document {raw.document}: {raw.kind} named {name!r} from its "
            f"metadata.generateName {prefix!r} (the API server would add a random suffix)"
        )
    return out, notes
