"""capacity-card: discovery, demand, quotas (job vs task mode), scores, and both engines.

a100-1 [4 × NVIDIA-A100]   h100-1 [4 × NVIDIA-H100]   (queue team-a: quotas per test)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from clients.cli import app
from solver import ConfigError, SchedulerConf, load_conf, schedule, solve, verify
from solver.config import PluginConf, TierConf
from solver.model import ClusterModel, node_cards
from tests.builders import model, node, pod, podgroup, queue

ROOT = Path(__file__).resolve().parents[3]


def card_node(name: str, product: str, count: int = 4, **extra: Any) -> dict[str, Any]:
    b = (
        node(name)
        .cpu("64")
        .label("nvidia.com/gpu.product", product)
        .label("nvidia.com/gpu.count", str(count))
    )
    b.label("nvidia.com/gpu.memory", str(extra.pop("memory", 81920))).gpu(count)
    for k, v in extra.items():
        b.alloc(k, str(v))
    return b.obj()


def conf(**arguments: Any) -> SchedulerConf:
    plugins = [
        PluginConf(name="predicates"),
        PluginConf(name="gang"),
        PluginConf(name="binpack"),
        PluginConf.model_validate({"name": "capacity-card", "arguments": arguments}),
    ]
    return SchedulerConf(tiers=(TierConf(plugins=plugins),))


def card_queue(
    name: str, quota: dict[str, int] | None, capability: dict[str, Any] | None = None
) -> dict[str, Any]:
    q = queue(name, capability=capability)
    if quota is not None:
        q["metadata"]["annotations"] = {"volcano.sh/card.quota": json.dumps(quota)}
    return q


def card_job(
    name: str,
    q: str,
    pods: int,
    card: str,
    *,
    min_member: int | None = None,
    gpu: int = 1,
    request: dict[str, int] | None = None,
    cpu: str = "1",
) -> list[dict[str, Any]]:
    pg = podgroup(name, pods if min_member is None else min_member, "volcano")
    pg["spec"]["queue"] = q
    if request:
        pg["metadata"]["annotations"]["volcano.sh/card.request"] = json.dumps(request)
    out = [pg]
    for i in range(pods):
        b = (
            pod(f"{name}-{i}")
            .annotate("scheduling.k8s.io/group-name", name)
            .requests(cpu=cpu, gpu=gpu)
        )
        if card:
            b.annotate("volcano.sh/card.name", card)
        out.append(b.obj())
    return out


# ----------------------------------------------------------------------------- discovery

DISCOVERY: dict[str, tuple[dict[str, Any], dict[str, tuple[str, int]]]] = {
    "whole": (card_node("n", "NVIDIA-A100", 8), {"NVIDIA-A100": ("nvidia.com/gpu", 8)}),
    "mps": (
        node("n")
        .label("nvidia.com/gpu.product", "NVIDIA-A100")
        .label("nvidia.com/gpu.count", "4")
        .label("nvidia.com/gpu.memory", "81920")
        .label("nvidia.com/gpu.replicas", "8")
        .alloc("nvidia.com/gpu.shared", "32")
        .obj(),
        {"NVIDIA-A100/mps-80g*1/8": ("nvidia.com/gpu.shared", 32)},
    ),
    "mig": (
        node("n")
        .label("nvidia.com/gpu.product", "NVIDIA-A100")
        .label("nvidia.com/gpu.count", "8")
        .label("nvidia.com/gpu.memory", "81920")
        .label("nvidia.com/mig-1g.5gb.count", "7")
        .alloc("nvidia.com/mig-1g.5gb", "7")
        .alloc("nvidia.com/mig-2g.10gb", "4")
        .obj(),
        {
            "NVIDIA-A100/mig-1g.5gb-mixed": ("nvidia.com/mig-1g.5gb", 7),
            "NVIDIA-A100/mig-2g.10gb-mixed": ("nvidia.com/mig-2g.10gb", 4),
        },
    ),
    "mps without replicas is skipped": (
        node("n")
        .label("nvidia.com/gpu.product", "X")
        .label("nvidia.com/gpu.count", "1")
        .label("nvidia.com/gpu.memory", "1024")
        .alloc("nvidia.com/gpu.shared", "4")
        .obj(),
        {},
    ),
    "no count/memory labels": (node("n").label("nvidia.com/gpu.product", "X").gpu(4).obj(), {}),
    "unparsable memory": (
        node("n")
        .label("nvidia.com/gpu.product", "X")
        .label("nvidia.com/gpu.count", "1")
        .label("nvidia.com/gpu.memory", "lots")
        .label("nvidia.com/gpu.replicas", "2")
        .alloc("nvidia.com/gpu.shared", "2")
        .obj(),
        {"X/mps-0g*1/2": ("nvidia.com/gpu.shared", 2)},
    ),
    "zero allocatable is no card": (card_node("n", "NVIDIA-A100", 0), {}),
}


@pytest.mark.parametrize("case", DISCOVERY.values(), ids=DISCOVERY.keys())
def test_discovery(case: tuple[dict[str, Any], dict[str, tuple[str, int]]]) -> None:
    body, expected = case
    assert node_cards(model(body).nodes[0]) == expected


def test_cards_cli() -> None:
    runner = CliRunner()
    out = runner.invoke(
        app, ["cards", "-f", str(ROOT / "examples" / "cards" / "mps.yaml"), "-o", "json"]
    )
    assert json.loads(out.stdout) == {
        "nodes": {"mps-1": {"NVIDIA-A100/mps-80g*1/8": 32}},
        "total": {"NVIDIA-A100/mps-80g*1/8": 32},
    }
    table = runner.invoke(
        app, ["cards", "-f", str(ROOT / "examples" / "cards" / "basic-quota.yaml")]
    )
    assert table.exit_code == 0 and "NVIDIA-A100" in table.stdout


# ----------------------------------------------------------------------------- quotas

NODES = [card_node("a100-1", "NVIDIA-A100"), card_node("h100-1", "NVIDIA-H100")]


def run(*objects: dict[str, Any], engine: str = "greedy", **arguments: Any) -> Any:
    return schedule(model(*objects), conf(**arguments), engine=engine, workers=1)


def test_job_mode_sums_alternatives_task_mode_charges_the_node_type() -> None:
    # quota A100 2 + H100 3 = 5 >= 4: enqueues; pods then split 2 A100 + 2 H100.
    d = run(
        *NODES,
        card_queue("q", {"NVIDIA-A100": 2, "NVIDIA-H100": 3}, {"cpu": 10}),
        *card_job("j", "q", 4, "NVIDIA-A100|NVIDIA-H100", request={"NVIDIA-A100|NVIDIA-H100": 4}),
    )
    cards = sorted(p.card for p in d.placements.values())
    assert cards == ["NVIDIA-A100"] * 2 + ["NVIDIA-H100"] * 2
    # 6 > 2 + 3: not enqueued
    d = run(
        *NODES,
        card_queue("q", {"NVIDIA-A100": 2, "NVIDIA-H100": 3}, {"cpu": 10}),
        *card_job("j", "q", 6, "NVIDIA-A100|NVIDIA-H100"),
    )
    assert d.podgroups["default/j"].reason == (
        "not enqueued: InsufficientScalarQuota: queue q: NVIDIA-A100|NVIDIA-H100 6 requested + 0 in use > quota 5"
    )


def test_unset_quota_is_zero_and_empty_capability() -> None:
    d = run(
        *NODES,
        card_queue("q", {"NVIDIA-H100": 4}, {"cpu": 10}),
        *card_job("j", "q", 1, "NVIDIA-A100"),
    )
    assert (
        "InsufficientScalarQuota: queue q: NVIDIA-A100 1 requested + 0 in use > quota 0"
        in d.podgroups["default/j"].reason
    )
    d = run(*NODES, card_queue("e", None), *card_job("j", "e", 1, "NVIDIA-A100"))
    assert "EmptyQueueCapability" in d.podgroups["default/j"].reason


def test_cpu_quota_and_unlimited_cpu_memory() -> None:
    objs = [
        *NODES,
        card_queue("q", {"NVIDIA-A100": 4}, {"cpu": 2}),
        *card_job("j", "q", 3, "NVIDIA-A100", cpu="1"),
    ]
    d = run(*objs)
    assert not d.podgroups["default/j"].placed
    assert (
        "InsufficientCPUQuota" in d.podgroups["default/j"].reason
        or "insufficient cpu quota" in d.podgroups["default/j"].reason
    )
    d = run(*objs, cardUnlimitedCpuMemory=True)
    assert d.podgroups["default/j"].placed


def test_card_request_annotation_only_without_card_pods() -> None:
    # The PodGroup asks for 8 A100s (over quota 4) but its pods ask for 2: pods win.
    objs = [
        *NODES,
        card_queue("q", {"NVIDIA-A100": 4}, {"cpu": 10}),
        *card_job("j", "q", 2, "NVIDIA-A100", request={"NVIDIA-A100": 8}),
    ]
    assert run(*objs).podgroups["default/j"].placed
    # Without card pods (plain pods), the annotation is the demand: 8 > 4.
    objs = [
        *NODES,
        card_queue("q", {"NVIDIA-A100": 4}, {"cpu": 10}),
        *card_job("j", "q", 1, "", request={"NVIDIA-A100": 8}),
    ]
    assert "NVIDIA-A100 8 requested" in run(*objs).podgroups["default/j"].reason


def test_unknown_card_is_get_task_request_resource_failed() -> None:
    d = run(
        *NODES,
        card_queue("q", {"NVIDIA-V100": 4}, {"cpu": 10}),
        *card_job("j", "q", 1, "NVIDIA-V100"),
    )
    assert (
        "GetTaskRequestResourceFailed: card type NVIDIA-V100 exists on no node"
        in d.podgroups["default/j"].reason
    )


@pytest.mark.parametrize(("weight", "expected"), [(1.0, [100.0, 50.0]), (2.0, [200.0, 100.0])])
def test_scores_with_weights(weight: float, expected: list[float]) -> None:
    from solver import explain

    objs = [
        *NODES,
        card_queue("q", {"NVIDIA-A100": 4, "NVIDIA-H100": 4}, {"cpu": 10}),
        *card_job("j", "q", 1, "NVIDIA-A100|NVIDIA-H100"),
    ]
    data = explain(model(*objs), conf(nodeOrderWeight=weight), "default/j-0")
    assert [data["nodes"][n]["scores"]["capacity-card"] for n in ("a100-1", "h100-1")] == expected
    assert data["card"] == "NVIDIA-A100"


def test_capacity_and_capacity_card_together_is_a_config_error(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("tiers:\n- plugins:\n  - name: capacity\n  - name: capacity-card\n")
    with pytest.raises(ConfigError, match="must not be enabled together"):
        load_conf(f)


def test_hierarchical_card_quota_checked_at_the_parent() -> None:
    parent = card_queue("dept", {"NVIDIA-A100": 3}, {"cpu": 100})
    a = card_queue("a", {"NVIDIA-A100": 4}, {"cpu": 10})
    a["spec"]["parent"] = "dept"
    b = card_queue("b", {"NVIDIA-A100": 4}, {"cpu": 10})
    b["spec"]["parent"] = "dept"
    c = conf()
    c = SchedulerConf(
        tiers=(
            TierConf(
                plugins=[
                    *c.tiers[0].plugins[:-1],
                    PluginConf.model_validate({"name": "capacity-card", "enableHierarchy": True}),
                ]
            ),
        )
    )
    objs = [
        *NODES,
        parent,
        a,
        b,
        *card_job("ja", "a", 2, "NVIDIA-A100"),
        *card_job("jb", "b", 2, "NVIDIA-A100"),
    ]
    for engine in ("greedy", "cpsat"):
        d = solve(model(*objs), c, engine=engine, workers=1)
        assert sum(1 for p in d.placements.values() if p.node) == 2, engine  # dept holds 3
        assert verify(model(*objs), c, d) == []


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_seed_examples(engine: str) -> None:
    from solver import load_manifests

    base = ROOT / "examples" / "cards"
    c1 = load_conf(base / "capacity-card.conf")
    d = schedule(load_manifests(str(base / "basic-quota.yaml")), c1, engine=engine, workers=1)
    assert d.podgroups["default/training"].placed and not d.podgroups["default/more"].enqueued
    d = schedule(load_manifests(str(base / "multi-card.yaml")), c1, engine=engine, workers=1)
    assert (
        sorted(p.card or "" for p in d.placements.values())
        == ["NVIDIA-A100"] * 2 + ["NVIDIA-H100"] * 2
    )
    d = schedule(load_manifests(str(base / "mps.yaml")), c1, engine=engine, workers=1)
    assert len(d.placed) == 16 and {p.card for p in d.placements.values()} == {
        "NVIDIA-A100/mps-80g*1/8"
    }
    c2 = load_conf(base / "capacity-card-weight2.conf")
    d = schedule(load_manifests(str(base / "node-order.yaml")), c2, engine=engine, workers=1)
    assert set(d.placed.values()) == {"a100-1"}


# ----------------------------------------------------------------------------- property


@st.composite
def card_worlds(draw: st.DrawFn) -> ClusterModel:
    products = ["NVIDIA-A100", "NVIDIA-H100", "NVIDIA-T4"]
    objects: list[dict[str, Any]] = [
        card_node(f"n{i}", draw(st.sampled_from(products)), draw(st.sampled_from([2, 4])))
        for i in range(draw(st.integers(1, 4)))
    ]
    quota = {p: draw(st.integers(0, 6)) for p in products}
    objects.append(card_queue("q", quota, {"cpu": 64}))
    for j in range(draw(st.integers(1, 4))):
        alternatives = draw(
            st.lists(st.sampled_from(products), min_size=1, max_size=3, unique=True)
        )
        size = draw(st.integers(1, 4))
        objects += card_job(
            f"j{j}",
            "q",
            size,
            "|".join(alternatives),
            min_member=draw(st.integers(1, size)),
            gpu=draw(st.integers(1, 2)),
        )
    return model(*objects)


def _check_cards(cluster: ClusterModel, engine: str) -> None:
    c = conf()
    d = solve(cluster, c, engine=engine, workers=1, time_limit=20)
    assert verify(cluster, c, d) == []
    used: dict[str, int] = {}
    for key, p in d.placements.items():
        if p.node is None:
            continue
        alternatives = cluster.pod_by_key[key].annotations["volcano.sh/card.name"].split("|")
        offered = node_cards(cluster.node_by_name[p.node])
        assert p.card in alternatives and p.card in offered
        used[p.card] = used.get(p.card, 0) + cluster.pod_by_key[key].requests["nvidia.com/gpu"]
    quota = json.loads(cluster.queues["q"].annotations["volcano.sh/card.quota"])
    assert all(v <= quota.get(card, 0) for card, v in used.items()), (used, quota)


@given(card_worlds(), st.sampled_from(["greedy", "cpsat"]))
@settings(max_examples=40)
def test_no_decision_exceeds_a_card_quota(cluster: ClusterModel, engine: str) -> None:
    _check_cards(cluster, engine)


@pytest.mark.slow
@given(card_worlds(), st.sampled_from(["greedy", "cpsat"]))
@settings(max_examples=400)
def test_no_decision_exceeds_a_card_quota_long(cluster: ClusterModel, engine: str) -> None:
    _check_cards(cluster, engine)


def test_card_awareness_without_queues() -> None:
    # A Koordinator gang (no queue) asking for H100: only the H100 node, and `card` reported.
    pods = [
        pod(f"w-{i}")
        .group("w")
        .requests(gpu=1)
        .annotate("volcano.sh/card.name", "NVIDIA-H100")
        .obj()
        for i in range(2)
    ]
    d = run(*NODES, podgroup("w", 2), *pods)
    assert {p.node for p in d.placements.values()} == {"h100-1"}
    assert {p.card for p in d.placements.values()} == {"NVIDIA-H100"}
