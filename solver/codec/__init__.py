"""The wire codec: `gangplan.v1` protobuf messages <-> the domain model, both directions.

    snapshot_from_proto, delta_from_proto, job_from_proto   requests in (the server)
    decision_to_proto                                        answers out (the server)
    cluster_to_proto, decision_from_proto                    the CLI as a client
    goal_from_proto, plan_to_proto (and back)                Defragment

Shared by `server/` and `clients/remote.py`; the thin `gangplan.Client` needs none of it.
"""

from solver.codec._answers import (
    certificate_to_proto,
    cluster_to_proto,
    decision_from_proto,
    decision_to_proto,
)
from solver.codec._cluster import delta_from_proto, job_from_proto, snapshot_from_proto
from solver.codec._defrag import goal_from_proto, goal_to_proto, plan_from_proto, plan_to_proto
from solver.codec._errors import MAX_VIOLATIONS, ConvertError, Violations
from solver.codec._messages import (
    gang_from_proto,
    node_from_proto,
    pod_from_proto,
    queue_from_proto,
    topology_from_proto,
)

__all__ = [
    "MAX_VIOLATIONS",
    "ConvertError",
    "Violations",
    "certificate_to_proto",
    "cluster_to_proto",
    "decision_from_proto",
    "decision_to_proto",
    "delta_from_proto",
    "gang_from_proto",
    "goal_from_proto",
    "goal_to_proto",
    "job_from_proto",
    "node_from_proto",
    "plan_from_proto",
    "plan_to_proto",
    "pod_from_proto",
    "queue_from_proto",
    "snapshot_from_proto",
    "topology_from_proto",
]
