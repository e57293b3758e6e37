"""deploy/grafana/gangplan-dashboard.json: a well-formed Grafana dashboard whose every query
asks for metrics and labels a real server exports (scraped after a few calls, one failing,
a CP-SAT solve and a snapshot with queue cards), so no panel stays empty for a typo."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from clients.client import Client, ClientError
from gangplan.v1 import cluster_pb2 as pb
from server import Settings, create_server
from tests.server.conftest import gang_job, gpu_pod, small_cluster
from tests.server.scrape import scrape

DASHBOARD = json.loads(
    (Path(__file__).resolve().parents[2] / "deploy/grafana/gangplan-dashboard.json").read_text()
)
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
# the PromQL functions, aggregations and keywords the queries may use
FUNCTIONS = {"sum", "rate", "histogram_quantile"}
KEYWORDS = {"by", "without", "and", "or", "unless", "bool", "on", "ignoring"}
TARGET_LABELS = {"instance", "job"}  # added by Prometheus to every scraped series
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_TOKEN = re.compile(r"\$\w+|\[[^\]]*\]|[A-Za-z_:][\w:]*|[0-9.]+|\S")


def _series_labels(text: str) -> dict[str, set[str]]:
    """Every sample name a query can select (also of families with no sample yet) and the
    labels its series carry."""
    labels: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(text):
        suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_sum", "_count"]}
        for suffix in suffixes.get(family.type, [""]):
            labels.setdefault(family.name + suffix, set())
        for sample in family.samples:
            labels.setdefault(sample.name, set()).update(sample.labels)
    return labels


def _parse(expr: str) -> tuple[set[str], set[str], set[str]]:
    """(metrics, labels, functions) a PromQL expression names."""
    metrics: set[str] = set()
    labels: set[str] = set()
    functions: set[str] = set()
    tokens = _TOKEN.findall(_STRING.sub('""', expr))
    braces = 0
    grouping = False  # inside `by (...)` / `without (...)`
    for i, token in enumerate(tokens):
        following = tokens[i + 1] if i + 1 < len(tokens) else ""
        if token == "{":
            braces += 1
        elif token == "}":
            braces -= 1
        elif token == ")":
            grouping = False
        elif token in ("by", "without"):
            grouping = True
        elif not re.fullmatch(r"[A-Za-z_:][\w:]*", token) or token in KEYWORDS:
            continue
        elif braces or grouping:
            labels.add(token)
        elif following in ("(", "by", "without"):  # a call, or an aggregation
            functions.add(token)
        else:
            metrics.add(token)
    return metrics, labels, functions


def _queries() -> Iterator[tuple[str, str, str]]:
    """(where, expression, legend) of every panel target and template variable."""
    for panel in DASHBOARD["panels"]:
        for target in panel["targets"]:
            yield (
                f"panel {panel['title']!r} {target['refId']}",
                target["expr"],
                target.get("legendFormat", ""),
            )
    for variable in DASHBOARD["templating"]["list"]:
        if variable["type"] == "query":
            # label_values(metric{...}, label) asks what `sum by (label) (metric{...})` does
            query = re.sub(
                r"^label_values\((.*), (\w+)\)$", r"sum by (\2) (\1)", variable["query"]["query"]
            )
            yield f"variable {variable['name']}", query, ""


@pytest.fixture(scope="module")
def exported() -> Iterator[dict[str, set[str]]]:
    srv, port = create_server(Settings(host="127.0.0.1", port=0, metrics_port=0, grace=1.0))
    srv.start()
    cluster = small_cluster()
    for node in cluster.nodes:
        node.labels.update({"nvidia.com/gpu.product": "NVIDIA-A100", "nvidia.com/gpu.count": "4"})
    cluster.queues.append(
        pb.Queue(name="team-a", annotations={"volcano.sh/card.quota": '{"NVIDIA-A100": 5}'})
    )
    running = gpu_pod("r0", gang="default/run", gpus=2, node="n1")
    running.annotations["volcano.sh/card.name"] = "NVIDIA-A100"
    cluster.pods.append(running)
    cluster.gangs.append(pb.Gang(namespace="default", name="run", min_member=1, queue="team-a"))
    try:
        with Client(f"127.0.0.1:{port}") as client:
            client.put_snapshot(cluster, "s")
            client.place_job(gang_job("j", 2), snapshot="s")
            client.place_job(gang_job("j", 2), snapshot="s", engine="cpsat")
            with pytest.raises(ClientError):
                client.place_job(gang_job("j", 2), snapshot="missing")
        yield _series_labels(scrape(srv.metrics_port))
    finally:
        srv.stop(0)


def test_every_query_names_exported_metrics_and_their_labels(
    exported: dict[str, set[str]],
) -> None:
    asked = set()
    for where, expr, legend in _queries():
        metrics, labels, functions = _parse(expr)
        assert metrics, (where, expr)
        assert functions <= FUNCTIONS, (where, functions - FUNCTIONS)
        assert metrics <= set(exported), (where, metrics - set(exported))
        carried = set().union(*(exported[m] for m in metrics))
        assert labels <= carried, (where, labels - carried)
        shown = set(re.findall(r"\{\{(\w+)\}\}", legend))
        assert shown <= carried | TARGET_LABELS, (where, shown - carried)
        asked |= metrics
    # the families the issue asks the dashboard for are all on it
    for family in (
        "grpc_server_handled_total",
        "grpc_server_handling_seconds_bucket",
        "gangplan_solves_total",
        "gangplan_solve_duration_seconds_bucket",
        *(
            f"volcano_queue_card_{kind}"
            for kind in ("deserved", "capacity", "allocated", "request")
        ),
        "process_resident_memory_bytes",
    ):
        assert family in asked, family


def test_the_query_parser_sees_metrics_labels_and_functions() -> None:
    metrics, labels, functions = _parse(
        "histogram_quantile(0.9, sum by (le, grpc_method) (rate(grpc_server_handling_seconds_bucket"
        '{grpc_service=~"$service",grpc_code!="a{b}"}[$__rate_interval])))'
    )
    assert metrics == {"grpc_server_handling_seconds_bucket"}
    assert labels == {"le", "grpc_method", "grpc_service", "grpc_code"}
    assert functions == {"histogram_quantile", "sum", "rate"}


def test_it_is_a_well_formed_grafana_dashboard() -> None:
    assert DASHBOARD["uid"] and DASHBOARD["title"] and DASHBOARD["schemaVersion"] >= 36
    variables = {v["name"]: v for v in DASHBOARD["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    for variable in variables.values():
        if variable["type"] == "query":
            assert variable["datasource"] == DATASOURCE, variable["name"]
    used = {name for _, expr, _ in _queries() for name in re.findall(r"\$(\w+)", expr)}
    assert used - {"__rate_interval"} <= set(variables), used
    ids = [p["id"] for p in DASHBOARD["panels"]]
    assert len(ids) == len(set(ids))
    cells: set[tuple[int, int]] = set()
    for panel in DASHBOARD["panels"]:
        where = panel["title"]
        assert panel["type"] in ("timeseries", "stat", "gauge", "table"), where
        assert panel["datasource"] == DATASOURCE, where
        box = panel["gridPos"]
        assert box["x"] >= 0 and box["w"] > 0 and box["x"] + box["w"] <= 24, where
        covered = {
            (box["y"] + dy, box["x"] + dx) for dy in range(box["h"]) for dx in range(box["w"])
        }
        assert not covered & cells, f"{where} overlaps another panel"
        cells |= covered
        refs = [t["refId"] for t in panel["targets"]]
        assert refs and len(refs) == len(set(refs)), where
        for target in panel["targets"]:
            assert target["datasource"] == DATASOURCE and target["expr"].strip(), where
        assert panel["fieldConfig"]["defaults"]["unit"], where


def test_a_misspelt_metric_or_label_would_fail(exported: dict[str, set[str]]) -> None:
    """The check above is not vacuous."""
    metrics, labels, _ = _parse('sum by (grpc_methd) (rate(grpc_server_handled{x="1"}[5m]))')
    assert not metrics <= set(exported)
    assert not labels <= exported["grpc_server_handled_total"]
