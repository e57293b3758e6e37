"""KAI's fair-share division, translated from upstream's own tests.

Source: NVIDIA/KAI-Scheduler
`pkg/scheduler/plugins/proportion/resource_division/resource_division_test.go`
(Describe "Proportion"). Each row names its Context and It (or DescribeTable Entry). The
Go tests call the unexported steps with kValue 0: `setResourceShare` (steps 1-3),
`divideOverQuotaResource` (steps 2-3, on queues whose FairShare is preset) and
`SetResourcesShare` (per resource); rows say which. Upstream's queues default to priority
0 (not KAI's 100) and share one creation time unless a row sets them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from solver.features.kaishare import Share, divide, set_resource_share
from solver.features.kaishare.division import divide_over_quota

U = -1.0  # commonconstants.UnlimitedResourceQuantity


@dataclass
class Row:
    name: str
    call: str  # "setResourceShare" or "divideOverQuotaResource"
    total: float
    queues: dict[str, dict[str, float]]
    remaining: float
    fair: dict[str, float]
    priority: dict[str, int] = field(default_factory=dict)


def within(**changes: float) -> dict[str, dict[str, float]]:
    """Context "single queue within quota (sanity)": Deserved 3, weight 0, Request 2."""
    return {"1": {"deserved": 3, "weight": 0, "limit": U, "request": 2, **changes}}


def over(**changes: float) -> dict[str, dict[str, float]]:
    """Context "single queue over quota (sanity)": Deserved 3, FairShare 3, weight 1, Request 5."""
    return {"1": {"deserved": 3, "fair": 3, "weight": 1, "limit": U, "request": 5, **changes}}


def two(
    request: tuple[float, float] = (6, 6),
    weight: tuple[float, float] = (2, 2),
    limit: tuple[float, float] = (U, U),
) -> dict[str, dict[str, float]]:
    """DescribeTable "two queues": Deserved 2 each, weight 2, Request 6, no limit."""
    return {
        str(i + 1): {"deserved": 2, "weight": weight[i], "limit": limit[i], "request": request[i]}
        for i in range(2)
    }


S, D = "setResourceShare", "divideOverQuotaResource"
ROWS = [
    # Context "single queue within quota (sanity)"
    Row("gives requested GPUs - no remaining", S, 2, within(), 0, {"1": 2}),
    Row("gives requested GPUs with remaining", S, 3, within(), 1, {"1": 2}),
    Row("doesn't give more GPUs than allowed", S, 3, within(limit=2), 1, {"1": 2}),
    Row("gives up to deserved when over subscribed", S, 1, within(), 0, {"1": 2}),
    Row("gives up to full quota", S, 7, within(request=5), 4, {"1": 3}),
    Row("gives with fraction, if stated in deserved", S, 2, within(deserved=1.5), 0.5, {"1": 1.5}),
    Row("gives with fraction, if stated in request", S, 2, within(request=1.5), 0.5, {"1": 1.5}),
    Row("doesn't give if deserved is zero", S, 2, within(deserved=0), 2, {"1": 0}),
    # Context "single queue over quota (sanity)"
    Row("gives requested GPUs no remaining", D, 2, over(), 0, {"1": 5}),
    Row("over quota: gives requested GPUs with remaining", D, 3, over(), 1, {"1": 5}),
    Row("over quota: doesn't give more GPUs than allowed", D, 2, over(limit=4), 1, {"1": 4}),
    Row("doesn't give when over quota weight is zero", D, 2, over(weight=0), 2, {"1": 3}),
    Row("gives with fraction if requested", D, 2, over(request=4.5), 0.5, {"1": 4.5}),
    Row("gives remainder fraction", D, 0.5, over(), 0, {"1": 3.5}),
    Row("gives when deserved is zero", D, 6, over(deserved=0, fair=0), 1, {"1": 5}),
    Row("doesn't break when there are zero resources to divide", D, 0, over(), 0, {"1": 3}),
    Row("doesn't give when over quota weight is zero (10)", D, 10, over(weight=0), 10, {"1": 3}),
    # Context "two queues over quota (sanity)"
    Row(
        "two queues: doesn't give when over quota weight is zero",
        D,
        10,
        {
            "1": {"deserved": 3, "fair": 3, "weight": 0, "limit": U, "request": 5},
            "2": {"deserved": 3, "fair": 3, "weight": 1, "limit": U, "request": 3},
        },
        10,
        {"1": 3},
    ),
    # DescribeTable "two queues"
    Row("allocates many available gpus", S, 15, two(), 3, {"1": 6, "2": 6}),
    Row("allocates exact requested amount gpus", S, 12, two(), 0, {"1": 6, "2": 6}),
    Row("allocates GPUs proportionally", S, 8, two(weight=(1, 3)), 0, {"1": 3, "2": 5}),
    Row("doesn't allocate more than allowed", S, 12, two(limit=(5, U)), 1, {"1": 5, "2": 6}),
    Row(
        "distributes remainder between queues based on largest remaining",
        S,
        11,
        two(request=(10, 10), weight=(1, 4)),
        0,
        {"1": 3, "2": 8},
    ),
    Row(
        "distributes remainder between queues based on creation time",
        S,
        11,
        two(),
        0,
        {"1": 6, "2": 5},
    ),
    Row("priority doesn't affect deserved", S, 4, two(), 0, {"1": 2, "2": 2}, {"1": 1, "2": 2}),
    Row("priority does affect over-quota", S, 6, two(), 0, {"1": 2, "2": 4}, {"1": 1, "2": 2}),
    Row(
        "priority does affect over-quota, even when overQuotaWeight is set",
        S,
        6,
        two(weight=(100, 1)),
        0,
        {"1": 2, "2": 4},
        {"1": 1, "2": 2},
    ),
    # It "divides the remainder even when using priorities"
    Row(
        "divides the remainder even when using priorities",
        S,
        5,
        {
            "1": {"deserved": 2, "weight": 2, "limit": U, "request": 5},
            "2": {"deserved": 2, "weight": 2, "limit": U, "request": 5},
            "3": {"deserved": 1, "weight": 2, "limit": U, "request": 0},
        },
        0,
        {"1": 3, "2": 2, "3": 0},
        {"1": 2, "2": 2, "3": 1},
    ),
    # Describe "SetResourcesShare", Context "advanced scenarios"
    Row(
        "fractional fair share",
        S,
        45,
        {
            "1": {"deserved": 12, "weight": 12, "limit": U, "request": 32.54999999999996},
            "2": {"deserved": 7, "weight": 7, "limit": U, "request": 9.5},
            "3": {"deserved": 2, "weight": 2, "limit": 2, "request": 1.65},
        },
        45 - 32.54999999999996 - 9.5 - 1.65,
        {"1": 32.54999999999996, "2": 9.5, "3": 1.65},
    ),
    Row(
        "divide last remaining GPU based to similar queues",
        S,
        5,
        {
            "1": {"deserved": 2, "weight": 2, "limit": U, "request": 3},
            "2": {"deserved": 2, "weight": 2, "limit": U, "request": 3},
        },
        0,
        {"1": 3, "2": 2},
    ),
]


def shares(row: Row) -> list[Share]:
    return [
        Share(name=n, priority=row.priority.get(n, 0), **q)  # type: ignore[arg-type]
        for n, q in row.queues.items()
    ]


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_upstream_division(row: Row) -> None:
    queues = shares(row)
    if row.call == S:
        remaining = set_resource_share(row.total, 0.0, queues)
    else:
        remaining = divide_over_quota(row.total, 0.0, queues)
    assert remaining == pytest.approx(row.remaining, abs=1e-9)
    got = {q.name: q.fair for q in queues}
    for name, want in row.fair.items():
        assert got[name] == want, (name, got)


def test_set_resources_share_one_queue_per_resource() -> None:
    """Describe "SetResourcesShare", Context "one queue", both Its: each resource divided
    on its own (GPU 10 / CPU 2,500 / memory 1,000, then 1 / 1,000 / 3,000)."""
    cases = [
        ({"gpu": (1, 1, 10), "cpu": (200, 500, 2500), "memory": (1000, 500, 1000)},
         {"gpu": 1, "cpu": 500, "memory": 500}),
        ({"gpu": (2, 3, 1), "cpu": (20000, 2500, 1000), "memory": (1000, 5000, 3000)},
         {"gpu": 2, "cpu": 2500, "memory": 3000}),
    ]  # fmt: skip
    for spec, want in cases:
        for resource, (deserved, request, total) in spec.items():
            q = Share(name="1", deserved=deserved, weight=1, request=request)
            set_resource_share(total, 0.0, [q])
            assert q.fair == want[resource], resource


def test_a_parent_divides_its_fair_share_among_its_children() -> None:
    """`setFairShareForQueues`: the department's fair share is its children's total.

    cluster 10 GPUs
    ├── dept-a (quota 2, weight 1)        fair 5
    │   ├── a1 (quota 1, weight 1, asks 5)   1 + 2 = 3
    │   └── a2 (quota 1, weight 1, asks 2)   1 + 1 = 2
    └── dept-b (quota 2, weight 1)        fair 5 (asks 8)
    """
    q = {
        "dept-a": Share(name="dept-a", deserved=2, weight=1, request=7),
        "dept-b": Share(name="dept-b", deserved=2, weight=1, request=8),
        "a1": Share(name="a1", deserved=1, weight=1, request=5),
        "a2": Share(name="a2", deserved=1, weight=1, request=2),
    }
    divide(10, q, {"dept-a": ["a1", "a2"]}, ["dept-a", "dept-b"], k=1.0)
    assert (q["dept-a"].fair, q["dept-b"].fair) == (5, 5)
    assert (q["a1"].fair, q["a2"].fair) == (3, 2)
