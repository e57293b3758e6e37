"""Workload objects -> the pods and gang their controllers would create, so `-f job.yaml`
answers "where would this job go" without hand-written pods (`gangplan expand` prints the
result). One module per controller, each citing the source it follows.

A workload whose pods are already in the input (a dump holds both) is not expanded: its
real pods stand, with a note. Expanded objects keep the workload's file and document in
their error messages.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from solver.kube.gangs import DEFAULT_NAMESPACE, api_group
from solver.kube.loader import RawObject
from solver.kube.workloads._apps import expand_deployment, expand_stateful_set
from solver.kube.workloads._batch import expand_batch_job
from solver.kube.workloads._generate_name import generated_names
from solver.kube.workloads._jobset import expand_jobset
from solver.kube.workloads._kubeflow import KUBEFLOW_KINDS, expand_kubeflow_job
from solver.kube.workloads._kueue import expand_kueue_workload
from solver.kube.workloads._kueue_jobs import kueue_workloads
from solver.kube.workloads._lws import expand_leader_worker_set
from solver.kube.workloads._template import Expansion
from solver.kube.workloads._trainer import (
    RUNTIME_KINDS,
    TRAINER_GROUP,
    expand_trainjob,
    training_runtimes,
)
from solver.kube.workloads._volcano import expand_volcano_job

__all__ = ["EXPANDERS", "expand_workloads", "generated_names"]

Expander = Callable[[RawObject], Expansion]
EXPANDERS: dict[tuple[str, str], Expander] = {
    ("batch.volcano.sh", "Job"): expand_volcano_job,
    ("batch", "Job"): expand_batch_job,
    ("apps", "StatefulSet"): expand_stateful_set,
    ("apps", "Deployment"): expand_deployment,
    ("apps", "ReplicaSet"): expand_deployment,  # a Deployment's pods are its ReplicaSet's
    ("jobset.x-k8s.io", "JobSet"): expand_jobset,
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): expand_leader_worker_set,
    ("kueue.x-k8s.io", "Workload"): expand_kueue_workload,
    **{("kubeflow.org", kind): expand_kubeflow_job for kind in KUBEFLOW_KINDS},
}


def _namespace(body: dict[str, Any]) -> str:
    meta = body.get("metadata")
    ns = meta.get("namespace") if isinstance(meta, dict) else None
    return ns if isinstance(ns, str) and ns else DEFAULT_NAMESPACE


def expand_workloads(objects: Iterable[RawObject]) -> tuple[list[RawObject], list[str]]:
    """The input with each workload replaced by what it expands to, and the notes."""
    objects, notes = generated_names(objects)
    pods = [o.body for o in objects if o.kind == "Pod" and api_group(o.api_version) == ""]
    runtimes = training_runtimes(objects)  # read by the TrainJobs naming them
    out: list[RawObject] = []
    for raw in objects:
        key = (api_group(raw.api_version), raw.kind)
        if key[0] == TRAINER_GROUP and key[1] in RUNTIME_KINDS:
            continue
        expander = EXPANDERS.get(key)
        if key == (TRAINER_GROUP, "TrainJob"):
            expansion = expand_trainjob(raw, runtimes)
        elif expander is None:
            out.append(raw)
            continue
        else:
            expansion = expander(raw)
        kueue_workloads(raw, expansion)
        notes.extend(expansion.notes)
        if expansion.ungrouped:
            notes.append(expansion.ungrouped)
        ns = _namespace(raw.body)
        if any(_namespace(p) == ns and expansion.owns(p) for p in pods):
            notes.append(f"{raw.label}: its pods are in the input, not expanded")
            continue
        document = f"{raw.document} ({raw.label})"
        out.extend(RawObject(raw.source, document, body) for body in expansion.objects)
    return out, notes
