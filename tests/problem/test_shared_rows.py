"""`SharedRows`: the greedy's fill rows kept between the calls on a snapshot and carried to
its later generations. A call through them answers exactly what a call on a freshly built
snapshot (no memo) answers, whatever the generations in between bound or removed."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from solver import SchedulerConf, compile_problem, schedule, snapshot_of
from solver.config import PluginConf, TierConf
from solver.model import ClusterModel
from solver.problem import SharedRows
from solver.problem._shared import MAX_SHARED
from solver.snapshot import Delta
from tests.builders import model, node, pod
from tests.test_properties import CONFS, clusters


def _placements(decision: object) -> dict[str, str | None]:
    return {k: p.node for k, p in decision.placements.items()}  # type: ignore[attr-defined]


@settings(max_examples=60, deadline=None)
@given(clusters(), st.sampled_from(CONFS), st.integers(0, 10**6))
def test_calls_through_carried_rows_answer_as_a_fresh_snapshot(
    cluster: ClusterModel, conf: SchedulerConf, pick: int
) -> None:
    snapshot = snapshot_of(cluster)
    first = schedule(snapshot, conf, engine="greedy")
    # the next generation binds some of the placed pods and removes one running pod
    placed = sorted((k, n) for k, n in _placements(first).items() if n is not None)
    bound = placed[: pick % (len(placed) + 1)]
    rows = snapshot.running.rows().tolist()
    gone = (snapshot.running.key(int(rows[pick % len(rows)])),) if rows else ()
    later = snapshot.apply(Delta(bindings=tuple(bound), remove_pods=gone))
    carried = compile_problem(later, conf).shared_rows
    assert carried is compile_problem(snapshot, conf).shared_rows  # the same nodes: carried
    assert _placements(schedule(later, conf, engine="greedy")) == _placements(
        schedule(later.rebuild(), conf, engine="greedy")
    )


def test_a_second_call_reads_the_rows_the_first_stored() -> None:
    snapshot = snapshot_of(
        model(
            *(node(f"n{i}").cpu("8").gpu(8).obj() for i in range(4)),
            pod("a").requests(cpu="1", gpu=1).obj(),
        )
    )
    conf = SchedulerConf.default()
    shared = compile_problem(snapshot, conf).shared_rows
    assert isinstance(shared, SharedRows) and len(shared) == 0
    first = schedule(snapshot, conf, engine="greedy")
    assert len(shared) == 1
    assert _placements(schedule(snapshot, conf, engine="greedy")) == _placements(first)
    assert len(shared) == 1


def test_the_shared_rows_keep_at_most_max_shared_shapes() -> None:
    objects = [node(f"n{i}").cpu("64").obj() for i in range(3)]
    objects += [pod(f"p{k}").requests(cpu=f"{100 + k}m").obj() for k in range(MAX_SHARED + 5)]
    snapshot = snapshot_of(model(*objects))
    conf = SchedulerConf.default()
    schedule(snapshot, conf, engine="greedy")
    shared = compile_problem(snapshot, conf).shared_rows
    assert shared is not None and len(shared) == MAX_SHARED


def test_rows_scored_under_other_binpack_weights_are_not_reused() -> None:
    """The usage-dependent score is part of what a shared entry depends on
    (`Block.score_key`): n0 is fuller in cpu, n1 in GPUs, so weighing cpu only picks n0
    and GPUs only picks n1 — also when the other conf's call stored its rows first."""
    snapshot = snapshot_of(
        model(
            node("n0").cpu("8").gpu(8).obj(),
            node("n1").cpu("8").gpu(8).obj(),
            pod("r0").requests(cpu="6", gpu=0).on("n0").obj(),
            pod("r1").requests(cpu="1", gpu=6).on("n1").obj(),
            pod("p").requests(cpu="1", gpu=1).obj(),
        )
    )

    def conf(cpu: int, gpu: int) -> SchedulerConf:
        arguments = {
            "binpack.cpu": cpu,
            "binpack.memory": 0,
            "binpack.resources": "nvidia.com/gpu",
            "binpack.resources.nvidia.com/gpu": gpu,
        }
        plugins = [PluginConf(name="predicates"), PluginConf(name="binpack", arguments=arguments)]
        return SchedulerConf(tiers=(TierConf(plugins=plugins),))

    by_cpu, by_gpu = conf(1, 0), conf(0, 1)
    assert _placements(schedule(snapshot, by_cpu, engine="greedy"))["default/p"] == "n0"
    assert _placements(schedule(snapshot, by_gpu, engine="greedy"))["default/p"] == "n1"
    assert _placements(schedule(snapshot, by_cpu, engine="greedy"))["default/p"] == "n0"
