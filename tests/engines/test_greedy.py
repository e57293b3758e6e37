"""The greedy engine end to end (manifests -> Decision, verified): gangs, GangGroups, fit, order."""

from __future__ import annotations

from typing import Any

from solver import SchedulerConf, schedule
from solver.config import PluginConf, TierConf
from solver.decision import Decision
from tests.builders import groups_annotation, model, node, pod, podgroup


def run(*objects: dict[str, Any], conf: SchedulerConf | None = None) -> Decision:
    return schedule(model(*objects), conf, engine="greedy")  # schedule() verifies before returning


def nodes_of(decision: Decision, prefix: str) -> dict[str, str | None]:
    return {k: p.node for k, p in decision.placements.items() if k.startswith(f"default/{prefix}")}


def gpu_nodes(*counts: int) -> list[dict[str, Any]]:
    return [node(f"n{i}").cpu("64").gpu(c).obj() for i, c in enumerate(counts, 1)]


def gang(
    name: str, size: int, min_member: int, gpu: int = 1, **annotations: str
) -> list[dict[str, Any]]:
    pods = [pod(f"{name}-{i}").group(name).requests(cpu="1", gpu=gpu).obj() for i in range(size)]
    return [podgroup(name, min_member, **annotations), *pods]


def conf_with(*plugins: str, **arguments: dict[str, Any]) -> SchedulerConf:
    tier = TierConf(plugins=[PluginConf(name=p, arguments=arguments.get(p, {})) for p in plugins])
    return SchedulerConf(tiers=(tier,))


#   n1 [4 GPU]   n2 [4 GPU]      gang of 8 × 1 GPU: exactly fits, binpack fills n1 first
def test_gang_fits_exactly_and_packs_node_by_node() -> None:
    d = run(*gpu_nodes(4, 4), *gang("w", 8, 8))
    placed = nodes_of(d, "w")
    assert sorted(placed.values()) == ["n1"] * 4 + ["n2"] * 4
    assert d.podgroups["default/w"].placed


#   n1 [4 GPU]   n2 [4 GPU]      gang of 10 × 1 GPU: all or nothing -> nothing
def test_oversized_gang_is_fully_unplaced_with_counted_reason() -> None:
    d = run(*gpu_nodes(4, 4), *gang("big", 10, 10))
    assert set(nodes_of(d, "big").values()) == {None}
    reason = d.podgroups["default/big"].reason
    assert "8 of 10 required pod(s) fit" in reason
    assert "needs 10 nvidia.com/gpu, eligible nodes have 8 free" in reason
    assert "0/2 nodes are available: 2 Insufficient nvidia.com/gpu." in reason
    assert d.placements["default/big-0"].reason == reason


def test_members_beyond_min_are_placed_when_they_fit() -> None:
    d = run(*gpu_nodes(3), *gang("w", 5, 2))
    placed = [n for n in nodes_of(d, "w").values() if n]
    assert len(placed) == 3
    outcome = d.podgroups["default/w"]
    assert outcome.placed and "2 optional member(s) pending" in outcome.reason


#   n1 [4 GPU]                    master (1 cpu pod) + workers (8 × 1 GPU) as one GangGroup
def test_ganggroup_is_all_or_nothing_across_gangs() -> None:
    ids = ("default/master", "default/worker")
    master = [
        podgroup("master", 1, **groups_annotation(*ids)),
        pod("master-0").group("master").obj(),
    ]
    workers = gang("worker", 8, 8, **groups_annotation(*ids))
    d = run(*gpu_nodes(4), *master, *workers)
    assert d.placements["default/master-0"].node is None
    assert "gang default/worker" in d.placements["default/master-0"].reason
    # With room for the workers, both gangs go.
    d = run(*gpu_nodes(4, 4), *master, *workers)
    assert d.placements["default/master-0"].node is not None
    assert all(nodes_of(d, "worker").values())


def test_asymmetric_groups_follow_each_gangs_own_list() -> None:
    # b waits for a (b lists both); a lists nobody, so a may go alone when b cannot.
    a = [podgroup("a", 1), pod("a-0").group("a").requests(cpu="1").obj()]
    b = gang("b", 9, 9, **groups_annotation("default/a", "default/b"))
    d = run(*gpu_nodes(4), *a, *b)
    assert d.placements["default/a-0"].node == "n1"
    assert set(nodes_of(d, "b").values()) == {None}


def test_group_member_that_does_not_exist_blocks_the_gang() -> None:
    d = run(*gpu_nodes(4), *gang("w", 2, 2, **groups_annotation("default/w", "default/ghost")))
    assert "default/ghost do not exist" in d.podgroups["default/w"].reason
    assert set(nodes_of(d, "w").values()) == {None}


def test_not_enough_members_is_a_counted_reason_not_an_error() -> None:
    d = run(*gpu_nodes(4), *gang("w", 2, 3))
    assert "only 2 member pod(s) exist, minMember is 3" in d.podgroups["default/w"].reason


def test_once_satisfied_group_schedules_pod_by_pod() -> None:
    # One member already bound: the gang was satisfied once, remaining pods go one by one.
    objs = [*gpu_nodes(2), *gang("w", 4, 4)]
    objs[2 + 0] = pod("w-0").group("w").requests(cpu="1", gpu=1).on("n1").obj()
    d = run(*objs)
    placed = [n for n in nodes_of(d, "w").values() if n]
    assert len(placed) == 1  # only one GPU left; the other pending pod stays, gang not rolled back


def with_bound_first(
    nodes: list[dict[str, Any]], policy: str, size: int, min_member: int
) -> list[dict[str, Any]]:
    objs = [
        *nodes,
        *gang("w", size, min_member, **{"gang.scheduling.koordinator.sh/match-policy": policy}),
    ]
    objs[len(nodes) + 1] = pod("w-0").group("w").requests(cpu="1", gpu=1).on("n1").obj()
    return objs


def pending_placed(d: Decision) -> list[str]:
    return [n for k, n in nodes_of(d, "w").items() if k != "default/w-0" and n]


def test_waiting_and_running_counts_bound_members() -> None:
    # minMember 4, one bound: 3 new pods needed. n2 has 3 GPUs -> all three go.
    d = run(*with_bound_first(gpu_nodes(1, 3), "waiting-and-running", 4, 4))
    assert len(pending_placed(d)) == 3
    # n2 has 2 GPUs -> 2 < 3 needed -> none.
    d = run(*with_bound_first(gpu_nodes(1, 2), "waiting-and-running", 4, 4))
    assert pending_placed(d) == []
    assert "2 of 3 required pod(s) fit" in d.podgroups["default/w"].reason


def test_only_waiting_ignores_bound_members() -> None:
    # minMember 2, one bound, one pending: only-waiting needs 2 new pods, impossible.
    d = run(*with_bound_first(gpu_nodes(1, 3), "only-waiting", 2, 2))
    assert pending_placed(d) == []
    assert "needs 2 pending pod(s) placed, only 1 are pending" in d.podgroups["default/w"].reason


def test_default_match_policy_argument() -> None:
    conf = conf_with("predicates", "gang", gang={"defaultMatchPolicy": "waiting-and-running"})
    objs = [*gpu_nodes(1, 2), *gang("w", 4, 4)]
    objs[3] = pod("w-0").group("w").requests(cpu="1", gpu=1).on("n1").obj()
    assert pending_placed(run(*objs, conf=conf)) == []  # 3 needed, 2 free
    assert len(pending_placed(run(*objs))) == 2  # once-satisfied (default): pod by pod


def test_without_gang_plugin_pods_stand_alone() -> None:
    d = run(*gpu_nodes(4, 4), *gang("big", 10, 10), conf=conf_with("predicates", "binpack"))
    assert len([n for n in nodes_of(d, "big").values() if n]) == 8


def test_without_predicates_plugin_taints_do_not_filter() -> None:
    objs = [node("n1").taint("dedicated", "x").obj(), pod("p").obj()]
    assert run(*objs).placements["default/p"].node is None
    assert run(*objs, conf=conf_with("gang")).placements["default/p"].node == "n1"


def test_higher_priority_gang_goes_first() -> None:
    low = [podgroup("a-low", 4)] + [
        pod(f"a-low-{i}").group("a-low").requests(gpu=1).priority(1).obj() for i in range(4)
    ]
    high = [podgroup("z-high", 4)] + [
        pod(f"z-high-{i}").group("z-high").requests(gpu=1).priority(100).obj() for i in range(4)
    ]
    d = run(*gpu_nodes(4), *low, *high)
    assert all(nodes_of(d, "z-high").values())
    assert set(nodes_of(d, "a-low").values()) == {None}


def test_failed_gang_rolls_back_and_frees_room_for_the_next() -> None:
    # a (first by name) places 4 of 5 then fails; its 4 GPUs must go back for b.
    d = run(*gpu_nodes(4), *gang("a", 5, 5), *gang("b", 4, 4))
    assert set(nodes_of(d, "a").values()) == {None}
    assert all(nodes_of(d, "b").values())


#   n1 [8 GPU, 6 used]   n2 [8 GPU, 0 used]    one 2-GPU pod: binpack picks the fuller n1
def test_binpack_prefers_the_fuller_node_and_name_breaks_ties() -> None:
    running = pod("running").requests(cpu="1", gpu=6).on("n1").obj()
    d = run(*gpu_nodes(8, 8), running, pod("p").requests(cpu="1", gpu=2).obj())
    assert d.placements["default/p"].node == "n1"
    d = run(*gpu_nodes(8, 8), pod("p").requests(cpu="1", gpu=2).obj())
    assert d.placements["default/p"].node == "n1"


def test_bound_pods_use_capacity_and_finished_pods_do_not() -> None:
    used = pod("used").requests(gpu=4).on("n1").obj()
    done = pod("done").requests(gpu=4).on("n2", phase="Succeeded").obj()
    d = run(*gpu_nodes(4, 4), used, done, pod("p").requests(gpu=4).obj())
    assert d.placements["default/p"].node == "n2"
    assert "default/used" not in d.placements  # only pending pods are decided


def test_pod_count_and_missing_extended_resource() -> None:
    d = run(node("n1").pods(2).obj(), *[pod(f"p{i}").obj() for i in range(3)])
    assert sum(1 for p in d.placements.values() if p.node) == 2
    assert "Insufficient pods" in d.placements["default/p2"].reason
    d = run(node("cpu-only").obj(), pod("g").requests(gpu=1).obj())
    assert (
        "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
        in d.placements["default/g"].reason
    )


def test_decision_json_shape_is_stable() -> None:
    d = run(*gpu_nodes(4), *gang("w", 2, 2))
    data = d.to_dict()
    assert list(data)[:10] == [
        "placements",
        "podgroups",
        "victims",
        "engine",
        "status",
        "objective",
        "tiers",
        "bound",
        "gap",
        "seconds",
    ]
    assert data["placements"]["default/w-0"] == {
        "node": "n1",
        "card": None,
        "nominated": None,
        "reason": "",
    }
    assert data["podgroups"]["default/w"] == {"enqueued": True, "placed": True, "reason": ""}
    assert (data["engine"], data["status"], data["victims"]) == ("greedy", "HEURISTIC", [])
    assert data["tiers"] == {"placed_groups": 1, "placed_pods": 2, "opened_nodes": 1}


#   n1 [1 GPU]: room a preemption freed for b (nominated to n1); a has the same priority
#   and an earlier name: b goes first (order criterion 3), as kube-scheduler holds a
#   nominated pod's room against pods of no higher priority
def test_a_nominated_pod_goes_first_among_its_priority() -> None:
    a = pod("a").requests(cpu="1", gpu=1).priority(1000).obj()
    b = pod("b").requests(cpu="1", gpu=1).priority(1000).nominated("n1").obj()
    d = run(*gpu_nodes(1), a, b)
    assert nodes_of(d, "") == {"default/a": None, "default/b": "n1"}
    higher = pod("c").requests(cpu="1", gpu=1).priority(2000).obj()
    d = run(*gpu_nodes(1), higher, b)  # a higher priority still goes first
    assert nodes_of(d, "") == {"default/c": "n1", "default/b": None}
