"""`gangplan queues tree` with `drf`'s `enableHierarchy`: the hDRF tree of the annotated
paths, with the shares the running pods give.

    root
    ├ sci    weight 50   queue root-sci: 2 of 10 cpus running   share 0.2
    └ eng    weight 50   rescaled from dev alone                 share 0.1
      ├ dev  weight 50   queue root-eng-dev: 1 cpu running       share 0.1
      └ prod weight 50   queue root-eng-prod: nothing running
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from clients.cli import app
from solver.schedule import snapshot_of
from solver.views import hdrf_tree
from tests.builders import model, node, pod
from tests.features.drf.test_hdrf import conf, hqueue

OBJECTS = [
    node("n").cpu("10").memory("10G").obj(),
    hqueue("root-sci", "root/sci", "100/50"),
    hqueue("root-eng-dev", "root/eng/dev", "100/50/50"),
    hqueue("root-eng-prod", "root/eng/prod", "100/50/50"),
    *(pod(f"s{i}").annotate("scheduling.volcano.sh/queue-name", "root-sci")
      .requests(cpu=1).on("n").obj() for i in range(2)),
    pod("d0").annotate("scheduling.volcano.sh/queue-name", "root-eng-dev")
    .requests(cpu=1).on("n").obj(),
]  # fmt: skip


def find(view: dict[str, Any], name: str) -> dict[str, Any]:
    """The part called `name` (depth first)."""
    stack = [view]
    while stack:
        part = stack.pop()
        if part["name"] == name:
            return part
        stack.extend(part["children"])
    raise KeyError(name)


def test_the_view_gives_each_part_its_rescaled_share() -> None:
    view = hdrf_tree(snapshot_of(model(*OBJECTS)), conf())
    assert view is not None
    assert find(view, "sci")["share"] == pytest.approx(0.2)
    assert find(view, "eng")["share"] == pytest.approx(0.1)
    assert find(view, "dev")["queues"] == ["root-eng-dev"]
    assert find(view, "prod") == {"name": "prod", "weight": 50.0, "share": 0.0,
                                  "saturated": False, "holds": False,
                                  "queues": ["root-eng-prod"], "children": []}  # fmt: skip
    assert hdrf_tree(snapshot_of(model(*OBJECTS)), conf(hierarchy=False)) is None


def test_queues_tree_draws_it(tmp_path: Path) -> None:
    manifests = tmp_path / "c.yaml"
    manifests.write_text("\n---\n".join(json.dumps(o) for o in OBJECTS))
    conf_file = Path(__file__).resolve().parents[3] / "examples" / "fairshare" / "hdrf.conf"
    runner = CliRunner()
    table = runner.invoke(app, ["queues", "tree", "-f", str(manifests), "--config", str(conf_file)])
    assert table.exit_code == 0, table.output
    assert "sci weight 50 share 0.2 saturated queues root-sci" in table.output
    out = runner.invoke(
        app, ["queues", "tree", "-f", str(manifests), "--config", str(conf_file), "-o", "json"]
    )
    assert out.exit_code == 0, out.output
    assert find(json.loads(out.output)["hdrf"], "eng")["share"] == pytest.approx(0.1)
