"""Reading /metrics as Prometheus does, for the observability tests."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

__all__ = ["PLACEMENT", "Samples", "rpc", "samples", "scrape"]

PLACEMENT = "gangplan.v1.PlacementService"
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(port: int | None) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        text: str = answer.read().decode()
    return text


def samples(text: str) -> Samples:
    """(sample name, labels) -> value, parsed as Prometheus parses the exposition."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def rpc(method: str, service: str = PLACEMENT, kind: str = "unary") -> frozenset[tuple[str, str]]:
    """The labels of one method's series (add `("grpc_code", ...)` for `handled`)."""
    labels = {"grpc_type": kind, "grpc_service": service, "grpc_method": method}
    return frozenset(labels.items())
