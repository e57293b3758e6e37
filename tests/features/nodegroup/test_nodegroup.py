"""Volcano nodegroup: predicate order, scores, strict mode and hierarchical inheritance.

ng1: n-ng1    ng2: n-ng2    ng3: n-ng3    (no label): n-none
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from solver import SchedulerConf, schedule
from solver.config import PluginConf, TierConf
from solver.features.nodegroup import (
    REASON_AFFINITY_UNSET,
    REASON_LABEL_MISSING,
    REASON_NOT_SATISFIED,
    nodegroup_verdict,
)
from solver.model import ClusterModel
from solver.schedule import snapshot_of
from tests.builders import model, node, queue, volcano_job

NODES = [
    node("n-ng1").label("volcano.sh/nodegroup-name", "ng1").obj(),
    node("n-ng2").label("volcano.sh/nodegroup-name", "ng2").obj(),
    node("n-ng3").label("volcano.sh/nodegroup-name", "ng3").obj(),
    node("n-none").obj(),
]


def _verdict(
    cluster: ClusterModel, conf: SchedulerConf, queue: str
) -> tuple[list[str | None], np.ndarray]:
    snapshot = snapshot_of(cluster)
    return nodegroup_verdict(snapshot.nodes, snapshot.queues, conf, queue)


def conf(**arguments: Any) -> SchedulerConf:
    plugin = PluginConf.model_validate(
        {
            "name": "nodegroup",
            "enableHierarchy": arguments.pop("hierarchy", True),
            "arguments": arguments,
        }
    )
    return SchedulerConf(
        tiers=(TierConf(plugins=[PluginConf(name="predicates"), PluginConf(name="gang"), plugin]),)
    )


def verdict(
    queue_objs: list[dict[str, Any]], name: str, **arguments: Any
) -> tuple[list[str | None], list[float]]:
    reasons, scores = _verdict(model(*NODES, *queue_objs), conf(**arguments), name)
    return reasons, scores.tolist()


CASES: dict[str, tuple[dict[str, Any], list[str | None], list[float]]] = {
    "required and preferred add up": (
        {"affinity": {"required": ["ng1", "ng2"], "preferred": ["ng1"]}},
        [None, None, REASON_NOT_SATISFIED, REASON_LABEL_MISSING],
        [150, 100, 0, 0],
    ),
    "preferred only allows": (
        {"affinity": {"preferred": ["ng2"]}},
        [REASON_NOT_SATISFIED, None, REASON_NOT_SATISFIED, REASON_LABEL_MISSING],
        [0, 50, 0, 0],
    ),
    "anti-required removes": (
        {"affinity": {"required": ["ng1", "ng2"]}, "anti": {"required": ["ng2"]}},
        [None, REASON_NOT_SATISFIED, REASON_NOT_SATISFIED, REASON_LABEL_MISSING],
        [100, 100, 0, 0],
    ),
    "anti-preferred re-allows and scores -1": (
        {"affinity": {"required": ["ng1"]}, "anti": {"required": ["ng3"], "preferred": ["ng3"]}},
        [None, REASON_NOT_SATISFIED, None, REASON_LABEL_MISSING],
        [100, 0, -1, 0],
    ),
    "anti only: unmentioned groups are never allowed": (
        {"anti": {"required": ["ng1"]}},
        [REASON_NOT_SATISFIED, REASON_NOT_SATISFIED, REASON_NOT_SATISFIED, REASON_LABEL_MISSING],
        [0, 0, 0, 0],
    ),
    "no affinity, strict": ({}, [REASON_AFFINITY_UNSET] * 3 + [REASON_LABEL_MISSING], [0, 0, 0, 0]),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_predicate_and_score(case: tuple[dict[str, Any], list[str | None], list[float]]) -> None:
    spec, reasons, scores = case
    got_reasons, got_scores = verdict([queue("q", **spec)], "q", strict=True)
    assert got_reasons == reasons
    assert got_scores == scores


def test_non_strict_opens_unlabelled_nodes_only_for_queues_without_affinity() -> None:
    reasons, _ = verdict([queue("q")], "q", strict=False)
    assert reasons == [REASON_AFFINITY_UNSET] * 3 + [None]
    reasons, _ = verdict([queue("q", affinity={"required": ["ng1"]})], "q", strict=False)
    assert reasons[3] == REASON_LABEL_MISSING


def test_preferred_order() -> None:
    _, scores = verdict(
        [queue("q", affinity={"preferred": ["ng1", "ng3"]})], "q", enablePreferredOrder=True
    )
    assert scores == [50, 0, 25, 0]


INHERIT = [
    queue("root", affinity={"required": ["ng1"]}),
    queue("eng", "root"),
    queue("backend", "eng"),
    queue("frontend", "eng", affinity={"required": ["ng2"]}),
    queue("mid", "root", affinity={"required": ["ng3"]}),
    queue("leaf", "mid"),
    queue("orphan"),
]


@pytest.mark.parametrize(
    ("name", "allowed"),
    [
        ("eng", "n-ng1"),
        ("backend", "n-ng1"),
        ("frontend", "n-ng2"),
        ("leaf", "n-ng3"),
        ("orphan", "n-ng1"),
    ],
    ids=["direct", "ancestor", "override", "nearest-ancestor", "root"],
)
def test_inheritance(name: str, allowed: str) -> None:
    reasons, _ = verdict(INHERIT, name)
    assert [
        n
        for n, why in zip(["n-ng1", "n-ng2", "n-ng3", "n-none"], reasons, strict=True)
        if why is None
    ] == [allowed]


def test_no_inheritance_without_hierarchy() -> None:
    reasons, _ = verdict(INHERIT, "backend", hierarchy=False)
    assert reasons == [REASON_AFFINITY_UNSET] * 3 + [REASON_LABEL_MISSING]


def test_schedule_prefers_and_explains() -> None:
    objs = [
        *NODES,
        queue("nlp", affinity={"required": ["ng1", "ng2"], "preferred": ["ng2"]}),
        *volcano_job("j", "nlp", 1, gpu=0),
    ]
    d = schedule(model(*objs), conf(strict=True), engine="greedy")
    assert d.placements["default/j-0"].node == "n-ng2"
    # Jobs in no queue are not affected by the plugin.
    plain = [
        *NODES,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c"}]},
        },
    ]
    assert (
        schedule(model(*plain), conf(strict=True), engine="greedy").placements["default/p"].node
        is not None
    )
