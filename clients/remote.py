"""`gangplan schedule --server`: the CLI as a client of a gangplan server.

Reads the manifests locally, sends the cluster inline (through the wire codec) and turns
the answer back into a Decision for the CLI's renderers.
"""

from __future__ import annotations

import os
from pathlib import Path

from clients.client import Client
from solver.codec import cluster_to_proto, decision_from_proto
from solver.decision import Decision
from solver.model import ClusterModel, PodSelection

__all__ = ["schedule_remote"]


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
    ca = os.environ.get("GANGPLAN_CA_CERT") or None
    with Client(server, token=os.environ.get("GANGPLAN_TOKEN") or None, ca_cert=ca) as client:
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
