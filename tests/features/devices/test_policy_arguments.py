"""deviceshare's arguments: each policy's node score, GPU-model access of the target shapes,
and hostile argument values (ignored with a note, as Volcano ignores them; never an
exception, never a Decision `verify` refuses).

    a: 1 GPU (model A)    b: 1 GPU (model B)    one running 0.4 share on each
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver import solve, verify
from solver.config import PluginConf, SchedulerConf, TierConf
from tests.builders import model, node, pod

MODEL = "nvidia.com/gpu.product"


def conf(**args: Any) -> SchedulerConf:
    plugins = [
        PluginConf(name="predicates"),
        PluginConf(name="gang"),
        PluginConf.model_validate({"name": "deviceshare", "arguments": args}),
    ]
    return SchedulerConf(tiers=(TierConf(plugins=plugins),))


def gpu(name: str, gpu_model: str) -> dict[str, Any]:
    return node(name).cpu("16").memory("64Gi").gpu(1).label(MODEL, gpu_model).obj()


def share(name: str, milli: int, on: str | None = None) -> dict[str, Any]:
    b = pod(name).requests(cpu="1").annotate("alibabacloud.com/gpu-milli", str(milli))
    b.annotate("alibabacloud.com/gpu-count", "1")
    if on:
        b.annotate("alibabacloud.com/gpu-index", "0").on(on)
    return b.obj()


def cluster(*pending: dict[str, Any]) -> Any:
    return model(
        gpu("a", "A"), gpu("b", "B"), share("ra", 400, "a"), share("rb", 300, "b"), *pending
    )


def placed(c: SchedulerConf, *pending: dict[str, Any]) -> dict[str, str | None]:
    m = cluster(*pending)
    decision = solve(m, c, engine="greedy")
    assert verify(m, c, decision) == []
    return {k: p.node for k, p in decision.placements.items()}


def test_bestfit_takes_the_node_with_least_left() -> None:
    """a has 0.6 GPU left, b 0.7: a 0.5 share leaves 0.1 on a, 0.2 on b."""
    assert placed(conf(**{"deviceshare.SchedulePolicy": "bestfit"}), share("p", 500)) == {
        "default/p": "a"
    }


@pytest.mark.parametrize(("models", "node_name"), [(None, "a"), (["A"], "b"), ("B", "a")])
def test_fgd_target_shapes_count_only_the_models_they_may_use(models: Any, node_name: str) -> None:
    """Target: 0.5-GPU pods; a 0.1 share. Where a target pod may run, 0.6 or 0.7 left minus
    0.1 still holds one: no fragment either way (a tie: a, the smaller name). On a model
    the target may not use, all free GPU is fragment, and the share shrinks it: FGD prefers
    to fill that node (b when the target pods need A, a when they need B)."""
    shape: dict[str, Any] = {"cpu": 1000, "gpuMilli": 500, "gpus": 1, "count": 10}
    if models is not None:
        shape["gpuModels"] = models
    c = conf(**{"deviceshare.SchedulePolicy": "fgd", "deviceshare.fgd.targetWorkload": [shape]})
    assert placed(c, share("p", 100)) == {"default/p": node_name}


@pytest.mark.parametrize(
    ("args", "note"),
    [
        ({"deviceshare.SchedulePolicy": "spread"}, "SchedulePolicy='spread' is none of"),
        ({"deviceshare.ScheduleWeight": "heavy"}, "ScheduleWeight='heavy' is not a number"),
        (
            {"deviceshare.SchedulePolicy": "fgd", "deviceshare.fgd.targetWorkload": "x"},
            "targetWorkload is not a list",
        ),
        (
            {
                "deviceshare.SchedulePolicy": "fgd",
                "deviceshare.fgd.targetWorkload": [{"gpuMilli": 5000}],
            },
            "targetWorkload[0]: negative, or gpuMilli over 1000",
        ),
    ],
)
def test_a_bad_argument_is_ignored_with_a_note(args: dict[str, Any], note: str) -> None:
    m = cluster(share("p", 500))
    c = conf(**args)
    for _ in range(2):  # the second call reads the parsed target from the cache: same notes
        decision = solve(m, c, engine="greedy")
        assert verify(m, c, decision) == []
        assert any(note in n for n in decision.notes), decision.notes


EXTREMES = [math.inf, -math.inf, math.nan, 1e300, 10**400, "1e400"]


@pytest.mark.parametrize("value", EXTREMES, ids=repr)
@pytest.mark.parametrize("key", ["cpu", "gpus", "count", "weight"])
def test_a_number_past_any_real_one_is_refused_with_a_note(value: Any, key: str) -> None:
    """YAML `.inf`, `.nan`, 1e300 or a 400-digit integer: a note naming the argument, no
    exception (int(inf) raised OverflowError), and no NaN score."""
    shape: dict[str, Any] = {"cpu": 1000, "gpuMilli": 500, "gpus": 1, "count": 3}
    args: dict[str, Any] = {"deviceshare.SchedulePolicy": "fgd"}
    if key == "weight":
        args["deviceshare.ScheduleWeight"] = value
    else:
        shape[key] = value
    args["deviceshare.fgd.targetWorkload"] = [shape]
    m = cluster(share("p", 500))
    c = conf(**args)
    decision = solve(m, c, engine="greedy")
    assert verify(m, c, decision) == []
    refused = [n for n in decision.notes if "out of range" in n or "not a number" in n]
    assert len(refused) == 1 and len(refused[0]) < 200, decision.notes


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=8)
    | st.sampled_from(EXTREMES),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
SHAPE = st.dictionaries(
    st.sampled_from(["cpu", "gpuMilli", "gpus", "count", "gpuModels", "x"]), JSON, max_size=5
)


@settings(max_examples=60, deadline=None)
@given(
    policy=st.sampled_from(["fgd", "bestfit", "binpack"]) | JSON,
    weight=JSON,
    target=st.lists(SHAPE, max_size=3) | JSON,
    label=JSON,
    engine=st.sampled_from(["greedy", "cpsat"]),
)
def test_hostile_arguments_never_break_a_call(
    policy: Any, weight: Any, target: Any, label: Any, engine: str
) -> None:
    args = {
        "deviceshare.SchedulePolicy": policy,
        "deviceshare.ScheduleWeight": weight,
        "deviceshare.fgd.targetWorkload": target,
        "deviceshare.fgd.gpuModelLabel": label,
    }
    m = cluster(share("p", 500), share("q", 600))
    c = conf(**args)
    decision = solve(m, c, engine=engine, time_limit=5.0, workers=1)
    assert verify(m, c, decision) == []
