"""YAML with limits: every file gangplan reads from users goes through here.

PyYAML (and libyaml under it) trusts its input: `[` × 100,000 overflows the C stack of
libyaml's recursive composer (a segmentation fault, not an exception), and a few lines of
nested aliases ("billion laughs") describe a document whose expansion is exponential in
its size — harmless while PyYAML shares the aliased objects, fatal for whoever walks it
(validation, conversion). So before anything is built, one pass over libyaml's event
stream (iterative, no recursion) checks:

* size: at most `MAX_BYTES` of text;
* depth: collections nested at most `MAX_DEPTH` deep (Kubernetes objects need ~15);
* aliases: the document, with every alias expanded, at most `ALIAS_FACTOR` times the
  nodes written, plus `ALIAS_ALLOWANCE` (go-yaml, which kubectl uses, refuses "excessive
  aliasing" the same way), so what follows is linear in the file's size.

A violation is a `YAMLLimitError` (a `yaml.YAMLError`, with the line where it happened), so
callers report it like any other malformed YAML.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = [
    "ALIAS_ALLOWANCE",
    "ALIAS_FACTOR",
    "MAX_BYTES",
    "MAX_DEPTH",
    "YAMLLimitError",
    "not_text",
    "one_line",
    "safe_load",
    "safe_load_all",
]

MAX_BYTES = 512 * 2**20  # 200k pods of plain manifests are ~150 MB
MAX_DEPTH = 100
ALIAS_FACTOR = 10
ALIAS_ALLOWANCE = 10_000

_Loader: type[yaml.SafeLoader] | type[yaml.CSafeLoader] = getattr(
    yaml, "CSafeLoader", yaml.SafeLoader
)  # libyaml's C loader when PyYAML was built with it


class YAMLLimitError(yaml.YAMLError):
    """The text is YAML but beyond a limit (size, nesting, aliases)."""

    def __init__(self, problem: str, mark: Any = None) -> None:  # a yaml.Mark (Python or C)
        super().__init__(problem)
        self.problem = problem
        self.problem_mark = mark

    def __str__(self) -> str:
        where = f" (line {self.problem_mark.line + 1})" if self.problem_mark else ""
        return f"{self.problem}{where}"


def check_limits(text: str) -> None:
    """Raise YAMLLimitError when `text` is beyond a limit; yaml.YAMLError when malformed."""
    if len(text) > MAX_BYTES:
        raise YAMLLimitError(f"larger than {MAX_BYTES // 2**20} MiB")
    try:
        _walk(text)
    except yaml.MarkedYAMLError as exc:
        # libyaml >= 0.2.6 (PyYAML 6.0.4's wheels) stops deep nesting itself: the limit is
        # ours to name, in our words
        if "nesting depth" in str(exc.problem or ""):
            raise YAMLLimitError(f"nested deeper than {MAX_DEPTH}", exc.problem_mark) from None
        raise


def _walk(text: str) -> None:
    """Every parser event of `text`: nesting depth and alias expansion within the limits."""
    # Per open collection: its expanded size so far and its anchor (None without one).
    open_sizes: list[int] = []
    open_anchors: list[str | None] = []
    anchored: dict[str, int] = {}  # anchor -> expanded size of its node
    written = expanded = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, yaml.CollectionStartEvent):
            if len(open_sizes) >= MAX_DEPTH:
                raise YAMLLimitError(f"nested deeper than {MAX_DEPTH}", event.start_mark)
            written += 1
            open_sizes.append(1)
            open_anchors.append(event.anchor)
            continue
        if isinstance(event, yaml.CollectionEndEvent):
            size = open_sizes.pop()
            anchor = open_anchors.pop()
            if anchor is not None:
                anchored[anchor] = size
        elif isinstance(event, yaml.ScalarEvent):
            written += 1
            size = 1
            if event.anchor is not None:
                anchored[event.anchor] = 1
        elif isinstance(event, yaml.AliasEvent):
            written += 1
            size = anchored.get(event.anchor or "", 1)
        else:  # stream and document boundaries
            continue
        if open_sizes:
            open_sizes[-1] += size
        else:
            expanded += size
        if size > ALIAS_FACTOR * written + ALIAS_ALLOWANCE:
            raise YAMLLimitError(
                f"aliases expand to more than {ALIAS_FACTOR}x the document", event.start_mark
            )
    if expanded > ALIAS_FACTOR * written + ALIAS_ALLOWANCE:
        raise YAMLLimitError(f"aliases expand to more than {ALIAS_FACTOR}x the document")


def safe_load(text: str) -> Any:
    """`yaml.safe_load` within the limits (libyaml's C loader when available)."""
    check_limits(text)
    return yaml.load(text, Loader=_Loader)


def safe_load_all(text: str) -> list[Any]:
    """Every document of `text`, within the limits."""
    check_limits(text)
    return list(yaml.load_all(text, Loader=_Loader))


def one_line(exc: yaml.YAMLError) -> str:
    """A YAML error as one line: `line L, column C: what is wrong` (the parser's own
    message spans lines and quotes the text)."""
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    problem = getattr(exc, "problem", None) or str(exc).strip().splitlines()[0]
    return f"{where}{problem}"


def not_text(exc: UnicodeDecodeError) -> str:
    """Why bytes are not UTF-8 text, in one line."""
    return f"not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})"
