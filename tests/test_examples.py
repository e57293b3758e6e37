"""Every bundled example loads, schedules, and passes verify; the README's claims hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from solver import load_conf, load_manifests, schedule
from solver.model import PodSelection

ROOT = Path(__file__).resolve().parents[1] / "examples"
# plan/ is a capacity planner's input; defrag/racks.yaml a cluster with nothing pending
# (tests/clients/test_defrag_cli.py runs it through `gangplan defrag`)
NOT_SCHEDULED = (ROOT / "defrag" / "racks.yaml",)
EXAMPLES = sorted(
    p for p in ROOT.rglob("*.yaml") if p.parent.name != "plan" and p not in NOT_SCHEDULED
)
CONFS = {  # an example folder whose examples run under a conf of their own
    "cards": ROOT / "cards" / "capacity-card.conf",
    "fairshare": ROOT / "fairshare" / "volcano-default.conf",
    "timeshare": ROOT / "timeshare" / "kai-usage.conf",
}


@pytest.mark.parametrize("engine", ["greedy", "auto"])
@pytest.mark.parametrize("path", EXAMPLES, ids=[f"{p.parent.name}/{p.name}" for p in EXAMPLES])
def test_example_schedules(path: Path, engine: str) -> None:
    conf = load_conf(CONFS[path.parent.name]) if path.parent.name in CONFS else None
    decision = schedule(load_manifests(str(path)), conf, engine=engine, workers=1)  # verified
    assert decision.placements


def test_topology_examples_place_as_the_references_describe() -> None:
    root = ROOT / "topology"
    d = schedule(load_manifests(str(root / "koordinator-gather.yaml")), engine="greedy")
    assert d.placed == {
        "default/llm-master-0": "node-3",
        "default/llm-worker-0": "node-6",
        "default/llm-worker-1": "node-4",
        "default/llm-worker-2": "node-5",
    }
    assert d.podgroups["default/train-big"].reason.startswith(
        "gang default/train-big needs 48 nvidia.com/gpu inside one SpineLayer domain "
        "(MustGather); the largest offers 32 (s2), the next 28 (s1); when its turn came: "
        "no candidate topology nodes can accommodate job, desiredOfferSlot: 6, "
        "topology topologyNode SpineLayer/s1: 3;topology topologyNode SpineLayer/s2: 0"
    )
    d = schedule(load_manifests(str(root / "godel-job-affinity.yaml")), engine="greedy")
    counts: dict[str, int] = {}
    for node in d.placed.values():
        counts[node] = counts.get(node, 0) + 1
    assert counts == {"worker": 5, "worker3": 6, "worker4": 4}


def test_kueue_group_example_places_leader_and_workers_as_kueue() -> None:
    d = schedule(
        load_manifests(str(ROOT / "topology" / "kueue-podset-group.yaml")), engine="greedy"
    )
    got = {a.pod_set: {"/".join(v): c for v, c in a.domains} for a in d.topology_assignments}
    assert got == {"leader": {"h3": 1}, "workers": {"h1": 1, "h2": 2, "h3": 1}}


def test_fairshare_example_shares_by_weight_as_its_header_says() -> None:
    path = ROOT / "fairshare" / "proportion.yaml"
    d = schedule(load_manifests(str(path)), load_conf(CONFS["fairshare"]), engine="greedy")
    placed = {g for g, o in d.podgroups.items() if o.placed}
    assert placed == {"default/llm-train", *(f"default/serve-{i}" for i in range(4)),
                      *(f"default/sweep-{i}" for i in range(4))}  # fmt: skip
    assert "deserved share (proportion) used up for nvidia.com/gpu" in (
        d.podgroups["default/sweep-4"].reason
    )
    default = schedule(load_manifests(str(path)), engine="greedy")  # no proportion: by name
    assert all(o.placed for g, o in default.podgroups.items() if "sweep" in g)


def test_hdrf_example_splits_the_gpus_down_the_tree_as_its_header_says() -> None:
    path = str(ROOT / "fairshare" / "hdrf.yaml")
    conf = load_conf(ROOT / "fairshare" / "hdrf.conf")
    d = schedule(load_manifests(path), conf, engine="auto", workers=1)
    per_job = {
        g.split("/")[1]: sum(1 for p in d.placed if p.startswith(g + "-")) for g in d.podgroups
    }
    assert per_job == {"sweep": 16, "pretrain": 8, "chat": 8}
    assert any("does not encode hierarchical DRF" in n for n in d.notes)
    flat = conf.model_copy(update={"tiers": tuple(
        t.model_copy(update={"plugins": [p for p in t.plugins if p.name != "drf"]})
        for t in conf.tiers)})  # fmt: skip
    whole = schedule(load_manifests(path), flat, engine="greedy")
    assert not any(p.startswith("default/sweep-") for p in whole.placed)


@pytest.mark.parametrize("engine", ["greedy", "auto"])
def test_kueue_example_gives_idle_quota_as_its_header_says(engine: str) -> None:
    path = str(ROOT / "fairshare" / "kueue.yaml")
    fair = schedule(load_manifests(path), load_conf(ROOT / "fairshare" / "kueue.conf"),
                    engine=engine, workers=1)  # fmt: skip
    gpus = {q: 0 for q in ("research", "prod")}
    for key in fair.placed:
        gpus[key.split("/")[0]] += 4
    assert gpus == {"research": 8, "prod": 16}
    assert {a.cluster_queue for a in fair.flavor_assignments} == {"research", "prod"}
    assert all(dict(a.flavors)["nvidia.com/gpu"] == "a100" for a in fair.flavor_assignments)
    assert all(fair.placements[k].node != "cpu-0" for k in fair.placed)
    classical = schedule(load_manifests(path), engine=engine, workers=1)
    gpus = {q: 0 for q in ("research", "prod")}
    for key in classical.placed:
        gpus[key.split("/")[0]] += 4
    assert gpus == {"research": 16, "prod": 8}


def test_volcano_example_counts_the_running_member() -> None:
    d = schedule(load_manifests(str(ROOT / "dialects" / "volcano.yaml")))
    assert d.podgroups["research/resnet"].placed
    assert len(d.placed) == 3


def test_godel_example_stays_pending_whole() -> None:
    d = schedule(load_manifests(str(ROOT / "dialects" / "godel.yaml")))
    assert d.placed == {} and not d.podgroups["default/nginx"].placed


def test_the_dump_walkthrough_answers_as_the_readme_says() -> None:
    dump = ROOT / "dump"
    model = load_manifests(
        str(dump / "cluster.yaml"), str(dump / "pytorchjob.yaml"), str(dump / "volcano-job.yaml")
    )
    assert len(model.nodes) == 56 and sum(1 for p in model.pods if p.bound) == 204
    selected = PodSelection().apply(model)  # the CLI's default: YuniKorn's backlog stays
    d = schedule(selected, engine="auto", workers=1, time_limit=5)
    assert d.podgroups["ml-train/llama-ft"].placed
    assert {n for k, n in d.placed.items() if "llama-ft" in k} <= {
        n.name for n in model.nodes if n.name.startswith("gpu-a100")
    }
    moe = d.podgroups["ml-train/moe-sweep"]
    assert not moe.placed and "16 Insufficient nvidia.com/gpu" in moe.reason
    assert "data/etl-exec-60" not in d.placements


def test_timeshare_example_runs_the_queue_with_less_usage() -> None:
    path = ROOT / "timeshare" / "kai-usage.yaml"
    model = load_manifests(str(path))
    d = schedule(model, load_conf(CONFS["timeshare"]), engine="greedy")
    assert {k.split("/")[1].rsplit("-", 1)[0] for k in d.placed} == {"finetune"}
    d = schedule(model, engine="greedy")  # no usageDBConfig: by weight, the older queue first
    assert {k.split("/")[1].rsplit("-", 1)[0] for k in d.placed} == {"sweep"}


def test_kai_subgroups_example_rolls_back_to_the_next_spine_as_its_header_says() -> None:
    """KAI's multilevel sample2: a and b under one spine, each of a, b, c in a rack of its
    own; spine s1 cannot hold b after a, so both go to s2 (the header's walk)."""
    path = ROOT / "topology" / "kai-subgroups.yaml"
    for engine in ("greedy", "cpsat"):
        d = schedule(load_manifests(str(path)), engine=engine, workers=1)
        racks: dict[str, set[str]] = {k.split("-")[1][0]: set() for k in d.placed}
        for key, node in d.placed.items():
            racks[key.split("-")[1][0]].add(node.rsplit("-", 1)[0])
        assert len(d.placed) == 8 and all(len(r) == 1 for r in racks.values()), racks
        assert len({r.split("-")[0] for rs in racks.values() for r in rs}) == 1  # one zone
        if engine == "greedy":
            assert racks == {"a": {"z1-r3"}, "b": {"z1-r4"}, "c": {"z1-r2"}}
