"""Cluster state for many calls: the running pods as columns, derived usage kept by deltas.

    Snapshot.from_model(model)        # or Snapshot.build(nodes, running, pending, ...)
    snapshot.apply(Delta(...))        # the next generation, in time proportional to the delta
    Workload.of(snapshot, pods)       # what one call asks about

See `_snapshot.py` for the design; `_columns.py` for how running pods are stored.
"""

from solver.snapshot._buffers import EMPTY_MAP
from solver.snapshot._columns import PREEMPTED, TERMINATING, RunningPod, RunningPods
from solver.snapshot._delta import KEEP, Delta, DeltaError, Keep
from solver.snapshot._facts import Fact, PodSchema, annotation_fact
from solver.snapshot._intern import NONE, Interner
from solver.snapshot._nodes import NodeTable
from solver.snapshot._snapshot import Lineage, Snapshot, running_pod
from solver.snapshot._usage import Usage, charged_queue
from solver.snapshot._workload import Workload, gang_of_one

__all__ = [
    "EMPTY_MAP",
    "KEEP",
    "NONE",
    "PREEMPTED",
    "TERMINATING",
    "Delta",
    "DeltaError",
    "Fact",
    "Interner",
    "Keep",
    "Lineage",
    "NodeTable",
    "PodSchema",
    "RunningPod",
    "RunningPods",
    "Snapshot",
    "Usage",
    "Workload",
    "annotation_fact",
    "charged_queue",
    "gang_of_one",
    "running_pod",
]
