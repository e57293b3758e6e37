"""What a snapshot keeps of running pods' labels and annotations, beyond its own columns.

A running pod is stored as a row of columns, not as a `Pod` object: a snapshot of 200,000
running pods must stay small, and a call must not walk them. The snapshot keeps, for
itself, each pod's label set, its queue annotation and its card demand (they feed the
usage it keeps per queue), and its Volcano task role annotation (a gang's role minimums).
Whatever else a policy reads of a running pod is declared as a `Fact`: a function of the
pod's labels and annotations giving a short string (or None), evaluated once when the row
is stored and kept as an interned column. Policies declare theirs in their own package; the
registry passes them all in as a `PodSchema`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from solver.model import CARD_NAME, QUEUE_ANNOTATION, VOLCANO_TASK_SPEC

__all__ = ["Fact", "PodSchema", "annotation_fact"]

Extract = Callable[[Mapping[str, str], Mapping[str, str]], str | None]


@dataclass(frozen=True)
class Fact:
    """`extract(labels, annotations)` -> the value kept for a running pod (None: no value).

    `annotations` names the annotation keys `extract` reads: the snapshot keeps their raw
    values too (labels are kept whole), so an independent checker can re-derive the fact.
    """

    name: str
    extract: Extract
    annotations: tuple[str, ...] = ()


def annotation_fact(name: str, key: str) -> Fact:
    """The (stripped) value of one annotation, or None when absent or empty."""

    def extract(_labels: Mapping[str, str], annotations: Mapping[str, str]) -> str | None:
        return annotations.get(key, "").strip() or None

    return Fact(name, extract, (key,))


@dataclass(frozen=True)
class PodSchema:
    """The policies' facts a snapshot keeps per running pod."""

    facts: tuple[Fact, ...] = ()
    keep: frozenset[str] = frozenset()  # more annotation keys to keep raw (the verifier's)

    def __post_init__(self) -> None:
        names = [f.name for f in self.facts]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate pod facts: {names}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.facts)

    @property
    def annotation_keys(self) -> frozenset[str]:
        """Annotations kept raw: those the facts read, and the snapshot's own."""
        own = {QUEUE_ANNOTATION, CARD_NAME, VOLCANO_TASK_SPEC}  # the gang's task roles
        return frozenset(k for f in self.facts for k in f.annotations) | own | self.keep
