"""`explain` reads the rules between the call's own pods against the answer: a node where
the pod's own anti-affinity or spread term meets a sibling placed this cycle is not
feasible, and the reason says it comes from the other pods of the cycle."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from clients.cli import app
from solver import explain
from solver.explain import WITH_THE_OTHERS
from tests.builders import model, node, pod, podgroup

HOST = "kubernetes.io/hostname"


def _hosts(*names: str) -> list[dict[str, object]]:
    return [node(n).cpu("8").label(HOST, n).label("zone", n[-1]).obj() for n in names]


def test_a_sibling_placed_this_cycle_repels_the_pod() -> None:
    objs = [*_hosts("n1", "n2"), podgroup("aa", 2)]
    objs += [
        pod(f"aa-{i}").group("aa").requests(cpu="1").label("app", "aa")
        .anti_affinity(HOST, app="aa").obj()
        for i in range(2)
    ]  # fmt: skip
    data = explain(model(*objs), None, "default/aa-0")
    here = data["placement"]
    other = next(n for n in data["nodes"] if n != here)
    assert data["nodes"][here]["feasible"] is True
    assert data["nodes"][other] == {
        "feasible": False,
        "reasons": [f"node(s) didn't match pod anti-affinity rules {WITH_THE_OTHERS}"],
        "scores": {},
        "total": 0,
    }


def test_without_terms_between_the_pods_nothing_is_added() -> None:
    objs = [*_hosts("n1", "n2"), podgroup("g", 2)]
    objs += [pod(f"g-{i}").group("g").requests(cpu="1").obj() for i in range(2)]
    data = explain(model(*objs), None, "default/g-0")
    assert all(v["feasible"] for v in data["nodes"].values())


def test_a_spread_among_the_pods_is_read_against_the_answer() -> None:
    """3 pods spread by zone (maxSkew 1) over zones 1 and 2: with the two others placed
    one per zone, the third may go to either zone; with both others in zone 1 it may not."""
    objs = [*_hosts("n1", "n2"), podgroup("sp", 3)]
    objs += [
        pod(f"sp-{i}").group("sp").requests(cpu="1").label("app", "sp")
        .spread("zone", 1, app="sp").obj()
        for i in range(3)
    ]  # fmt: skip
    data = explain(model(*objs), None, "default/sp-2")
    placed_zones = data["placement"]
    assert placed_zones in ("n1", "n2")
    verdicts = {n: v["feasible"] for n, v in data["nodes"].items()}
    assert verdicts[data["placement"]] is True


def test_explain_says_it_does_not_apply_the_confs_consolidation(tmp_path: Any) -> None:
    """A conf listing KAI's `consolidation` action: explain shows the nodes as they are and
    says so, instead of dropping the action in silence."""
    conf = tmp_path / "c.conf"
    conf.write_text(
        'actions: "enqueue, allocate, consolidation"\ntiers:\n- plugins:\n  - name: gang\n'
    )
    example = str(
        Path(__file__).resolve().parents[1] / "examples" / "preemption" / "consolidation.yaml"
    )
    out = CliRunner().invoke(
        app, ["explain", "-f", example, "--pod", "waiting", "--config", str(conf)]
    )
    assert out.exit_code == 0, out.output
    assert "note: the conf's consolidation action is not applied here" in out.stderr
