"""`batch/v1` Job -> its pods, as the Job controller makes them (kubernetes/kubernetes
`pkg/controller/job/job_controller.go` manageJob, `indexed_job_utils.go`
podGenerateNameWithIndex / addCompletionIndexAnnotation; the selector labels come from
`pkg/registry/batch/job/strategy.go` generateSelector):

- min(parallelism, completions) pods at once (`parallelism` defaults to 1, `completions`
  to `parallelism`); with `completionMode: Indexed`, pods `<job>-<index>-…` for indexes
  0.., with annotation and label `batch.kubernetes.io/job-completion-index`; otherwise
  `<job>-…` (here `<job>-<i>`, standing in for the random suffix);
- labels `batch.kubernetes.io/job-name` and `job-name` on every pod (and the
  `controller-uid` pair when the job has a uid).

A Job creates no gang itself: a template label or annotation (a coscheduling
`scheduling.x-k8s.io/pod-group` label, a Koordinator gang annotation) makes its pods one.
"""

from __future__ import annotations

from solver.kube.loader import RawObject
from solver.kube.workloads._template import Expansion, Fields, meta_value, pod_from_template

__all__ = ["expand_batch_job"]

JOB_NAME = "batch.kubernetes.io/job-name"
LEGACY_JOB_NAME = "job-name"
CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
LEGACY_CONTROLLER_UID = "controller-uid"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
READ = {"template", "parallelism", "completions", "completionMode", "selector"}


def expand_batch_job(raw: RawObject) -> Expansion:
    f = Fields(raw)
    spec = f.spec
    parallelism = f.count(spec.get("parallelism"), "spec.parallelism", 1)
    completions = f.count(spec.get("completions"), "spec.completions", parallelism)
    mode = f.text(spec.get("completionMode"), "spec.completionMode", "NonIndexed")
    if mode not in ("NonIndexed", "Indexed"):
        raise raw.error(f"must be NonIndexed or Indexed, got {mode!r}", field="spec.completionMode")
    labels = {JOB_NAME: f.name, LEGACY_JOB_NAME: f.name}
    if f.uid:
        labels |= {CONTROLLER_UID: f.uid, LEGACY_CONTROLLER_UID: f.uid}
    out = Expansion(owns=lambda pod: meta_value(pod, "labels", JOB_NAME) == f.name)
    for i in range(min(parallelism, completions)):
        indexed = {COMPLETION_INDEX: str(i)} if mode == "Indexed" else {}
        out.objects.append(
            pod_from_template(
                f,
                spec.get("template"),
                "spec.template",
                f"{f.name}-{i}",
                labels={**labels, **indexed},
                annotations=indexed,
            )
        )
    out.notes += f.unread(READ)
    return out
