"""`gangplan config show`, and the default conf agreeing with Volcano's."""

from __future__ import annotations

from pathlib import Path

import yaml
from typer.testing import CliRunner

from clients.cli import app
from solver import SchedulerConf, load_conf, schedule
from tests.builders import model, node, podgroup, queue
from tests.builders import pod as pod_

runner = CliRunner()


def test_show_prints_a_conf_that_reads_back_the_same(tmp_path: Path) -> None:
    result = runner.invoke(app, ["config", "show"])
    assert result.exit_code == 0, result.output
    shown = yaml.safe_load(result.stdout)
    names = [p["name"] for p in shown["tiers"][0]["plugins"]]
    assert "nodegroup" not in names and {"gang", "predicates", "capacity"} <= set(names)
    path = tmp_path / "shown.conf"
    path.write_text(result.stdout)
    assert load_conf(str(path)).tiers == SchedulerConf.default().tiers


def test_default_conf_places_queues_without_affinity_on_labelled_nodes() -> None:
    # Volcano's default conf has no nodegroup plugin: a node-group label alone restricts
    # nothing (with nodegroup listed, a queue without affinity fails on labelled nodes).
    labelled = node("n0").gpu(8).label("volcano.sh/nodegroup-name", "pool-a").obj()
    group = podgroup("job", 2, "volcano")
    group["spec"]["queue"] = "team"
    pods = [
        pod_(f"w{i}").annotate("scheduling.k8s.io/group-name", "job").requests(gpu=1).obj()
        for i in (0, 1)
    ]
    cluster = model(labelled, queue("team"), group, *pods)
    assert schedule(cluster, engine="greedy").podgroups["default/job"].placed
    nodegroup = load_conf(str(Path(__file__).parents[2] / "examples" / "queues" / "nodegroup.conf"))
    assert not schedule(cluster, nodegroup, engine="greedy").podgroups["default/job"].placed


def test_the_table_says_which_plugins_gangplan_acts_on(tmp_path: Path) -> None:
    path = tmp_path / "c.conf"
    path.write_text(
        "tiers:\n- plugins:\n  - name: pdb\n  - name: drf\n  - name: tdm\n  - name: foo\n"
    )
    result = runner.invoke(app, ["config", "show", "--config", str(path), "-o", "table"])
    assert result.exit_code == 0, result.output
    rows = {
        line.split("│")[2].strip(): line.split("│")[4].strip()
        for line in result.stdout.splitlines()
        if line.count("│") >= 5
    }
    assert rows == {
        "pdb": "acted on", "drf": "acted on", "tdm": "not implemented yet", "foo": "unknown",
    }  # fmt: skip
