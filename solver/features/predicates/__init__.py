"""The `predicates` plugin: node fit apart from resources (kube-scheduler's filters).

Per pod type the verdict row (a reason code per node, 0 = fits) depends only on the nodes
and the pod's eligibility signature (nodeSelector, required node affinity, tolerations),
so it is computed once per node generation and signature, memoised on the snapshot's node
table with the reason texts shared by those rows; a call maps them to its own codes.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from functools import partial

import numpy as np

from solver.config import Plugin
from solver.features._base import CompileContext, Feature
from solver.features.predicates._filters import (
    REASON_AFFINITY,
    REASON_NOT_READY,
    REASON_UNSCHEDULABLE,
    matches_requirement,
    matches_term,
    node_fit_reason,
    parses,
    tolerates,
    untolerated_taint_reason,
)
from solver.features.predicates._labels import (
    label_integer,
    valid_field_requirement,
    valid_label_requirement,
)
from solver.model import Pod
from solver.problem import IntArray
from solver.snapshot import NodeTable

__all__ = [
    "FEATURE",
    "REASON_AFFINITY",
    "REASON_NOT_READY",
    "REASON_UNSCHEDULABLE",
    "eligibility_signature",
    "label_integer",
    "matches_requirement",
    "matches_term",
    "node_fit_reason",
    "parses",
    "tolerates",
    "untolerated_taint_reason",
    "valid_field_requirement",
    "valid_label_requirement",
    "verdict_row",
]


def eligibility_signature(pod: Pod) -> Hashable:
    """What the verdict depends on: pods with equal signatures get equal rows."""
    return (
        tuple(sorted(pod.node_selector.items())),
        pod.required_affinity,
        pod.tolerations,
        pod.scheduling_gates,
    )


class _Texts:
    """Reason texts of one node generation's verdict rows (codes never change meaning)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.texts: list[str] = [""]
        self.codes: dict[str, int] = {"": 0}

    def code(self, text: str) -> int:
        with self.lock:
            found = self.codes.get(text)
            if found is None:
                found = self.codes[text] = len(self.texts)
                self.texts.append(text)
            return found


def verdict_row(nodes: NodeTable, pod: Pod) -> tuple[IntArray, list[str]]:
    """[N] shared reason code per node for pods like `pod`, and the shared texts."""
    texts: _Texts = nodes.memo(("predicates", "texts"), _Texts)

    def compute() -> IntArray:
        row = np.fromiter(
            (texts.code(node_fit_reason(pod, node) or "") for node in nodes.nodes),
            dtype=np.int64,
            count=len(nodes),
        )
        row.flags.writeable = False
        return row

    row = nodes.memo(("predicates", eligibility_signature(pod)), compute)
    with texts.lock:
        return row, list(texts.texts)


REASON_GATED = "pod has scheduling gates ({gates}): not placed until they are removed"


def _compile(ctx: CompileContext) -> None:
    for t in range(ctx.num_types):
        if gates := ctx.first_pod(t).scheduling_gates:  # kube-scheduler's SchedulingGates
            nowhere = np.zeros(len(ctx.nodes), dtype=bool)
            ctx.restrict([t], nowhere, REASON_GATED.format(gates=", ".join(gates)))
            continue
        row, texts = verdict_row(ctx.nodes, ctx.first_pod(t))
        if row.any():
            ctx.restrict_codes(
                [t], ctx.memo(("predicates", id(row)), partial(_local, ctx, row, texts))
            )


def _local(ctx: CompileContext, row: IntArray, texts: list[str]) -> IntArray:
    """A shared verdict row in this call's reason codes."""
    present = np.unique(row[row > 0])
    local = np.zeros(len(texts), dtype=np.int64)
    local[present] = [ctx.code(texts[c]) for c in present.tolist()]
    return local[row]


FEATURE = Feature(
    name="predicates",
    plugins=(Plugin.PREDICATES,),
    compile=_compile,
    type_key=eligibility_signature,
)
