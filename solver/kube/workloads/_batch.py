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

from typing import Any

from solver.kube.fields import ignored
from solver.kube.loader import RawObject
from solver.kube.workloads._template import Expansion, Fields, meta_value, pod_from_template

__all__ = ["JOB_NAME", "JOB_READ", "expand_batch_job", "job_pods"]

JOB_NAME = "batch.kubernetes.io/job-name"
LEGACY_JOB_NAME = "job-name"
CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
LEGACY_CONTROLLER_UID = "controller-uid"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
JOB_READ = {"template", "parallelism", "completions", "completionMode"} | ignored("batch/Job")
"""The JobSpec fields a Job's pods follow (and those not scheduling input): others are noted."""


def job_pods(
    f: Fields,
    spec: dict[str, Any],
    path: str,
    name: str,
    *,
    uid: str = "",
    default_mode: str = "NonIndexed",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The pods of Job `name` with `spec` (at `path` in the workload `f`), the template's
    labels and annotations under `labels` / `annotations`, the controller's over both."""
    parallelism = f.count(spec.get("parallelism"), f"{path}.parallelism", 1)
    completions = f.count(spec.get("completions"), f"{path}.completions", parallelism)
    mode = f.text(spec.get("completionMode"), f"{path}.completionMode", default_mode)
    if mode not in ("NonIndexed", "Indexed"):
        raise f.raw.error(
            f"must be NonIndexed or Indexed, got {mode!r}", field=f"{path}.completionMode"
        )
    job_labels = {JOB_NAME: name, LEGACY_JOB_NAME: name}
    if uid:
        job_labels |= {CONTROLLER_UID: uid, LEGACY_CONTROLLER_UID: uid}
    pods = []
    for i in range(min(parallelism, completions)):
        indexed = {COMPLETION_INDEX: str(i)} if mode == "Indexed" else {}
        pods.append(
            pod_from_template(
                f,
                spec.get("template"),
                f"{path}.template",
                f"{name}-{i}",
                labels={**(labels or {}), **job_labels, **indexed},
                annotations={**(annotations or {}), **indexed},
            )
        )
    return pods


def expand_batch_job(raw: RawObject) -> Expansion:
    f = Fields(raw)
    out = Expansion(owns=lambda pod: meta_value(pod, "labels", JOB_NAME) == f.name)
    out.objects = job_pods(f, f.spec, "spec", f.name, uid=f.uid)
    out.notes += f.unread(JOB_READ)
    return out
