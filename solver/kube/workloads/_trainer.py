"""Kubeflow Trainer v2 `TrainJob` (`trainer.kubeflow.org/v1alpha1`) -> the JobSet, pods and
PodGroup its controller makes from the `ClusterTrainingRuntime` or `TrainingRuntime` it names
(kubeflow/trainer at 8c0f5059: `pkg/runtime/framework/plugins/jobset/builder.go`,
`plainml`/`torch` `EnforceMLPolicy`, `coscheduling`/`volcano` `EnforcePodGroupPolicy`):

- the runtime must be in the input (same namespace for a `TrainingRuntime`; `runtimeRef.kind`
  defaults to `ClusterTrainingRuntime`); without it the controller makes nothing (noted);
- `spec.runtimePatches[].trainingRuntimeSpec` are merged into the runtime first, in order,
  as the admission webhook merges them (mappings key by key; lists of named items, such as
  `replicatedJobs` and `containers`, item by name; other lists replaced);
- the JobSet is named after the TrainJob, from the runtime's `template.spec`: replicated
  jobs labelled `trainer.kubeflow.org/trainjob-ancestor-step` `dataset-initializer`,
  `model-initializer` or `trainer` get 1 replica; the trainer's Job runs `numNodes` pods
  (`spec.trainer.numNodes`, else the runtime's `mlPolicy.numNodes`) and its `node`
  container takes `spec.trainer.resourcesPerNode`; with `mlPolicy.mpi` the Job named
  `node` runs them instead (one fewer with `runLauncherAsNode`, the launcher being one),
  and only when the TrainJob sets `numNodes` (`mpi.EnforceMLPolicy`); the JobSet is then
  expanded as any
  JobSet (its `dependsOn` included: a trainer that waits for its initializers is not
  placed now);
- `podGroupPolicy.coscheduling`: a `scheduling.x-k8s.io` PodGroup named after the
  TrainJob, `minMember` every pod of the JobSet, the pods labelled to join it, its
  `scheduleTimeoutSeconds`; `podGroupPolicy.volcano`: a Volcano PodGroup the same way (pods
  annotated `scheduling.k8s.io/group-name`), its queue from the TrainJob's annotation
  `scheduling.volcano.sh/queue-name`, its priority class from the pod templates, its
  `networkTopology`.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from solver.kube.fields import ignored
from solver.kube.gangs import ANNOTATION_VOLCANO_GROUP, LABEL_POD_GROUP_X, api_group
from solver.kube.loader import RawObject
from solver.kube.workloads._jobset import JOBSET_NAME, expand_jobset
from solver.kube.workloads._template import Expansion, Fields, meta_value

__all__ = ["RUNTIME_KINDS", "TRAINER_GROUP", "Runtimes", "expand_trainjob", "training_runtimes"]

TRAINER_GROUP = "trainer.kubeflow.org"
RUNTIME_KINDS = ("ClusterTrainingRuntime", "TrainingRuntime")
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
INITIALIZERS = ("dataset-initializer", "model-initializer")
VOLCANO_QUEUE = "scheduling.volcano.sh/queue-name"
READ = {"runtimeRef", "trainer", "runtimePatches", "suspend"} | ignored(
    "trainer.kubeflow.org/TrainJob"
)
TRAINER_READ = {"numNodes", "resourcesPerNode"} | ignored(
    "trainer.kubeflow.org/TrainJob", "spec.trainer."
)
RUNTIME_READ = {"mlPolicy", "podGroupPolicy", "template"}
Runtimes = dict[tuple[str, str, str], RawObject]  # (kind, namespace, name) -> the runtime


def training_runtimes(objects: Iterable[RawObject]) -> Runtimes:
    """The runtimes in the input, by (kind, namespace or "" for a cluster one, name)."""
    out: Runtimes = {}
    for raw in objects:
        if api_group(raw.api_version) == TRAINER_GROUP and raw.kind in RUNTIME_KINDS:
            f = Fields(raw)
            ns = f.namespace if raw.kind == "TrainingRuntime" else ""
            out[(raw.kind, ns, f.name)] = raw
    return out


def merge(base: Any, patch: Any) -> Any:
    """`patch` over `base` as the TrainJob webhook merges a runtime patch (module docstring)."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for key, value in patch.items():
            out[key] = merge(base[key], value) if key in base else copy.deepcopy(value)
        return out
    if isinstance(base, list) and isinstance(patch, list) and _named(base) and _named(patch):
        out_list = list(base)
        index = {item["name"]: i for i, item in enumerate(out_list)}
        for item in patch:
            if item["name"] in index:
                out_list[index[item["name"]]] = merge(out_list[index[item["name"]]], item)
            else:
                out_list.append(copy.deepcopy(item))
        return out_list
    return copy.deepcopy(patch)


def _named(items: list[Any]) -> bool:
    return all(isinstance(i, dict) and isinstance(i.get("name"), str) for i in items)


def expand_trainjob(raw: RawObject, runtimes: Runtimes) -> Expansion:
    f = Fields(raw)
    spec = f.spec
    out = Expansion(owns=lambda pod: meta_value(pod, "labels", JOBSET_NAME) == f.name)
    ref = f.dict(spec.get("runtimeRef"), "spec.runtimeRef") if "runtimeRef" in spec else None
    if ref is None:
        raise raw.error("missing required field", field="spec.runtimeRef")
    kind = f.text(ref.get("kind"), "spec.runtimeRef.kind", "ClusterTrainingRuntime")
    name = f.text(ref.get("name"), "spec.runtimeRef.name")
    if kind not in RUNTIME_KINDS:
        raise raw.error(f"must be one of {', '.join(RUNTIME_KINDS)}", field="spec.runtimeRef.kind")
    found = runtimes.get((kind, f.namespace if kind == "TrainingRuntime" else "", name))
    label = f"TrainJob {f.namespace}/{f.name}"
    if found is None:
        out.notes.append(
            f"{label}: its {kind} {name!r} is not in the input: the controller makes nothing "
            "for it, so nothing is placed"
        )
        return out
    runtime = Fields(found)
    rspec = runtime.spec
    for i, patch in enumerate(f.dicts(spec.get("runtimePatches"), "spec.runtimePatches")):
        body = patch.get("trainingRuntimeSpec")
        if body is not None:
            rspec = merge(rspec, f.dict(body, f"spec.runtimePatches[{i}].trainingRuntimeSpec"))
    trainer = f.dict(spec.get("trainer") or {}, "spec.trainer")
    out.notes += f.unread(TRAINER_READ, trainer, "spec.trainer")
    ml = runtime.dict(rspec.get("mlPolicy") or {}, "spec.mlPolicy")
    nodes = f.count(
        trainer.get("numNodes"),
        "spec.trainer.numNodes",
        runtime.count(ml.get("numNodes"), "spec.mlPolicy.numNodes", 1),
    )
    mpi = runtime.dict(ml["mpi"] or {}, "spec.mlPolicy.mpi") if "mpi" in ml else None
    if mpi is not None:  # `mpi.EnforceMLPolicy`: the `node` Job counts, beside the launcher
        if mpi.get("runLauncherAsNode") is True:
            nodes = max(nodes - 1, 1)
        if trainer.get("numNodes") is None:
            nodes = 0  # the runtime's own node Job size stands
    template = runtime.dict(rspec.get("template") or {}, "spec.template")
    jobset_spec = copy.deepcopy(runtime.dict(template.get("spec") or {}, "spec.template.spec"))
    rjobs = runtime.dicts(jobset_spec.get("replicatedJobs"), "spec.template.spec.replicatedJobs")
    resources = trainer.get("resourcesPerNode")
    for i, rjob in enumerate(rjobs):
        where = f"spec.template.spec.replicatedJobs[{i}].template"
        job = runtime.dict(rjob.setdefault("template", {}), where)
        meta = runtime.dict(job.get("metadata") or {}, f"{where}.metadata")
        step = runtime.map(meta, f"{where}.metadata.labels").get(ANCESTOR)
        given = {"replicas"} & set(rjob)
        if step in (*INITIALIZERS, "trainer"):
            rjob["replicas"] = 1
        counts = rjob.get("name") == "node" if mpi is not None else step == "trainer"
        if counts and nodes:
            job_spec = runtime.dict(job.setdefault("spec", {}), f"{where}.spec")
            for key in ("parallelism", "completions"):  # typed by the CRD before replaced
                runtime.count(job_spec.get(key), f"{where}.spec.{key}", 1)
            replaced = sorted(given | {"parallelism", "completions"} & set(job_spec))
            if replaced:
                out.notes.append(
                    f"{label}: the trainer's Job {rjob.get('name')} runs {nodes} pod(s) "
                    f"(numNodes); its {', '.join(replaced)} in the runtime are replaced"
                )
            job_spec["parallelism"] = job_spec["completions"] = nodes
            pod = runtime.dict(job_spec.get("template") or {}, f"{where}.spec.template")
            pod_spec = runtime.dict(pod.get("spec") or {}, f"{where}.spec.template.spec")
            for c in runtime.list(
                pod_spec.get("containers"), f"{where}.spec.template.spec.containers"
            ):
                if isinstance(c, dict) and c.get("name") == "node" and resources is not None:
                    c["resources"] = f.dict(resources, "spec.trainer.resourcesPerNode")
    group = _pod_group(f, runtime, rspec, rjobs)
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": f.name, "namespace": f.namespace},
        "spec": jobset_spec,
    }
    made = expand_jobset(RawObject(raw.source, raw.document, jobset))
    if group is not None:
        out.objects.append(group)
    out.objects += made.objects
    out.notes += made.notes
    if made.ungrouped and group is None:
        out.ungrouped = f"{label}: its runtime has no podGroupPolicy: {made.ungrouped}"
    if spec.get("suspend"):
        out.notes.append(f"{label}: spec.suspend: the controller makes no pods while suspended")
    out.notes += runtime.unread(RUNTIME_READ, rspec, "spec")
    out.notes += f.unread(READ)
    return out


def _pod_group(
    f: Fields, runtime: Fields, rspec: dict[str, Any], rjobs: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """The PodGroup `podGroupPolicy` asks for (None without one), its link written into
    every replicated job's pod template."""
    policy = runtime.dict(rspec.get("podGroupPolicy") or {}, "spec.podGroupPolicy")
    if not policy:
        return None
    total = 0
    priority = ""
    for i, rjob in enumerate(rjobs):
        where = f"spec.template.spec.replicatedJobs[{i}]"
        job_spec = runtime.dict(rjob["template"].setdefault("spec", {}), f"{where}.template.spec")
        parallelism = runtime.count(
            job_spec.get("parallelism"), f"{where}.template.spec.parallelism", 1
        )
        completions = runtime.count(
            job_spec.get("completions"), f"{where}.template.spec.completions", parallelism
        )
        replicas = runtime.count(rjob.get("replicas"), f"{where}.replicas", 1)
        total += replicas * min(parallelism, completions)
        pod = runtime.dict(job_spec.setdefault("template", {}), f"{where}.template.spec.template")
        meta = runtime.dict(
            pod.setdefault("metadata", {}), f"{where}.template.spec.template.metadata"
        )
        key, link = (
            ("annotations", ANNOTATION_VOLCANO_GROUP)
            if "volcano" in policy
            else ("labels", LABEL_POD_GROUP_X)
        )
        meta[key] = {
            **runtime.map(meta, f"{where}.template.spec.template.metadata.{key}"),
            link: f.name,
        }
        pod_spec = pod.get("spec")
        if isinstance(pod_spec, dict) and isinstance(pod_spec.get("priorityClassName"), str):
            priority = pod_spec["priorityClassName"] or priority
    group_spec: dict[str, Any] = {"minMember": total}
    if "volcano" in policy:
        volcano = runtime.dict(policy["volcano"] or {}, "spec.podGroupPolicy.volcano")
        api = "scheduling.volcano.sh/v1beta1"
        meta = f.dict(f.raw.body.get("metadata") or {}, "metadata")
        queue = f.map(meta, "metadata.annotations").get(VOLCANO_QUEUE)
        if queue:
            group_spec["queue"] = queue
        if priority:
            group_spec["priorityClassName"] = priority
        if volcano.get("networkTopology"):
            group_spec["networkTopology"] = volcano["networkTopology"]
    else:
        api = "scheduling.x-k8s.io/v1alpha1"
        cosched = runtime.dict(policy.get("coscheduling") or {}, "spec.podGroupPolicy.coscheduling")
        if cosched.get("scheduleTimeoutSeconds") is not None:
            group_spec["scheduleTimeoutSeconds"] = cosched["scheduleTimeoutSeconds"]
    return {
        "apiVersion": api,
        "kind": "PodGroup",
        "metadata": {"name": f.name, "namespace": f.namespace},
        "spec": group_spec,
    }
