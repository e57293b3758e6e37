"""`gangplan schedule --server`: the CLI as a client of a gangplan server.

Reads the manifests locally, sends the cluster inline (through the wire codec) and turns
the answer back into a Decision for the CLI's renderers.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from clients.client import Client
from gangplan.v1 import placement_service_pb2 as spb
from solver.changes import Change
from solver.codec import cluster_to_proto, decision_from_proto
from solver.decision import Decision
from solver.model import ClusterModel, PodSelection
from solver.plan import Catalog

__all__ = ["schedule_remote", "why_remote"]


def _client(server: str) -> Client:
    """A client of `server`: `GANGPLAN_TOKEN` gives a bearer token, `GANGPLAN_CA_CERT` a CA
    file for TLS."""
    ca = os.environ.get("GANGPLAN_CA_CERT") or None
    return Client(server, token=os.environ.get("GANGPLAN_TOKEN") or None, ca_cert=ca)


def schedule_remote(
    server: str,
    model: ClusterModel,
    conf_path: str | None,
    *,
    engine: str,
    time_limit: float,
    workers: int,
    seed: int,
    preempt: bool = False,
    consolidate: bool = False,
    selection: PodSelection | None = None,
) -> Decision:
    """`gangplan schedule --server`: send the manifests' cluster inline, get the Decision.

    The conf file (already checked locally) is sent as text. `GANGPLAN_TOKEN` gives a bearer
    token and `GANGPLAN_CA_CERT` a CA file for TLS; the call's deadline is `time_limit` (the
    server answers within it, its engine given the rest less the round trip). `preempt` asks the Preempt RPC, which also proposes victims.
    `selection` travels as the request's scheduler names and namespaces: the server places
    only those pods, and the others (nominated ones holding their room) stay in the cluster.
    """
    conf_text = Path(conf_path).read_text(encoding="utf-8") if conf_path else ""
    with _client(server) as client:
        ask = client.preempt if preempt else client.place_job
        response = ask(
            cluster=cluster_to_proto(model),
            engine=engine,
            scheduler_conf=conf_text,
            workers=workers,
            seed=seed,
            scheduler_names=sorted(selection.scheduler_names or ()) if selection else (),
            namespaces=sorted(selection.namespaces or ()) if selection else (),
            consolidate=consolidate,
            timeout=time_limit,
        )
    return decision_from_proto(response.decision)


def why_remote(
    server: str,
    model: ClusterModel,
    conf_path: str | None,
    gang: str,
    *,
    engine: str,
    time_limit: float,
    workers: int,
    seed: int,
    selection: PodSelection,
    now: datetime,
    default_runtime: timedelta | None,
    catalog: Catalog | None,
) -> tuple[Decision, list[dict[str, Any]], dict[str, Any] | None]:
    """`gangplan why --server`: the `Why` RPC on the manifests' cluster, inline. The
    cycle's Decision, the changes and the start estimate as the server found them (the
    same shapes as `Change.to_dict` and `Estimate.to_dict`; no estimate when placed)."""
    conf_text = Path(conf_path).read_text(encoding="utf-8") if conf_path else ""
    with _client(server) as client:
        response = client.why(
            gang,
            cluster=cluster_to_proto(model),
            engine=engine,
            scheduler_conf=conf_text,
            now=now,
            default_runtime=default_runtime.total_seconds() if default_runtime else 0.0,
            node_types=_node_types(catalog),
            workers=workers,
            seed=seed,
            scheduler_names=sorted(selection.scheduler_names or ()),
            timeout=time_limit,
        )
    found = [
        Change(c.kind, c.change, c.size, c.target, c.dimension).to_dict() for c in response.changes
    ]
    start = None
    if not response.placed:
        at = (
            response.start.at.ToDatetime(tzinfo=now.tzinfo)
            if response.start.HasField("at")
            else None
        )
        start = {
            "at": at.isoformat() if at else None,
            "nodes": list(response.start.nodes),
            "after": list(response.start.after),
            "unknownEnds": response.start.unknown_ends,
            "ahead": list(response.start.ahead),
            "text": response.start.text,
        }
    return decision_from_proto(response.decision), found, start


def _node_types(catalog: Catalog | None) -> list[spb.PlanNodeType]:
    """A catalogue's node types on the wire (its allocatable in the cluster's units)."""
    out = []
    for nt in catalog.types if catalog is not None else ():
        wire = spb.PlanNodeType(name=nt.name, cost=nt.cost, gpu_model=nt.gpu_model or "",
                                allocatable=nt.cluster_units(), labels=dict(nt.labels),
                                nodes_per_block=nt.nodes_per_block or 0)  # fmt: skip
        if nt.max_count is not None:
            wire.max_count = nt.max_count
        out.append(wire)
    return out
