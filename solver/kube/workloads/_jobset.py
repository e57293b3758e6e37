"""`jobset.x-k8s.io/v1alpha2` JobSet -> its child Jobs' pods, and the Workload API gangs
`spec.scheduling` asks for.

Pods (kubernetes-sigs/jobset `pkg/controllers/jobset_controller.go` constructJob,
labelAndAnnotateObject; defaults from `pkg/webhooks/jobset_webhook.go` Default and the
API's kubebuilder defaults): each replicated job (`replicas` default 1, `groupName`
default `default`) makes child Jobs `<jobset>-<replicatedJob>-<jobIndex>`, completion
mode Indexed unless set, whose pods the Job controller makes (`_batch.py`). Pod template
and pods carry, as labels and as annotations, `jobset.sigs.k8s.io/{jobset-name,
jobset-uid, replicatedjob-name, restart-attempt (0), replicatedjob-replicas,
global-replicas, job-index, job-key (sha1 of <namespace>/<job>), job-global-index,
group-name, group-replicas, job-group-index}`.

Gangs: a JobSet makes none unless `spec.scheduling` is set (jobset KEP-969 "Workload-Aware
Scheduling Integration", alpha with Kubernetes v1.37). Then one Workload and Workload API
PodGroups (`scheduling.k8s.io/v1beta1`), every pod joined by `spec.schedulingGroup`:

- top-level mode (`schedulingPolicy` / `schedulingConstraints` / `disruptionMode`, no
  `replicatedJobs`, startup not `InOrder` and no `dependsOn`): one PodGroup for all pods,
  gang by default, `minCount` defaulting to every pod; with sequenced startup, one
  PodGroup per replicated job instead (a single one could never fill);
- `replicatedJobs` entries (every replicated job targeted by exactly one): one PodGroup per
  entry (its targets' names joined by `-`), or with `job`, one per child Job (the
  KEP's gang of gangs: "one gang per replica").

A replicated job with `dependsOn` (`pkg/controllers/depends_on.go`: its Jobs are created
once the jobs it names are Ready or Complete) gets no pods here: nothing of it is placed
now, with a note.

The KEP suffixes each name with a 10-character SHA-1 of the object's identity; the hash
input is not specified, so here it is sha1("<kind>/<namespace>/<name>[/<index>]") — the
names only link pods to their group. The JobSet's exclusive-placement annotation
(`alpha.jobset.sigs.k8s.io/exclusive-topology`) works through pod affinity, which
gangplan does not read yet: noted, not guessed.
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass, field
from typing import Any

from solver.kube.fields import ignored
from solver.kube.loader import RawObject
from solver.kube.workloads._batch import JOB_READ, job_pods
from solver.kube.workloads._template import Expansion, Fields, meta_value

__all__ = ["REPLICATED_JOB", "expand_jobset"]

PREFIX = "jobset.sigs.k8s.io/"
JOBSET_NAME = f"{PREFIX}jobset-name"
REPLICATED_JOB = f"{PREFIX}replicatedjob-name"
EXCLUSIVE = "alpha.jobset.sigs.k8s.io/exclusive-topology"
WAS_API = "scheduling.k8s.io/v1beta1"
READ = {"replicatedJobs", "scheduling"} | ignored("jobset.x-k8s.io/JobSet")
RJOB_READ = {"name", "replicas", "template", "groupName", "dependsOn"}
POLICY_FIELDS = ("schedulingPolicy", "schedulingConstraints", "disruptionMode")
MAX_TEMPLATES = 8  # podGroupTemplates per Workload (the JobSet webhook rejects more)


@dataclass
class _Group:
    """One PodGroup to make: its name, the fields copied into it, its pods."""

    item: str  # the KEP's WorkloadItem name
    name: str
    fields: dict[str, Any]
    where: str  # where its fields are in the JobSet, for errors
    pods: list[dict[str, Any]] = field(default_factory=list)


def _hash(*identity: str) -> str:
    return hashlib.sha1("/".join(identity).encode()).hexdigest()[:10]


def expand_jobset(raw: RawObject) -> Expansion:
    f = Fields(raw)
    spec = f.spec
    out = Expansion(owns=lambda pod: meta_value(pod, "labels", JOBSET_NAME) == f.name)
    rjobs = f.dicts(spec.get("replicatedJobs"), "spec.replicatedJobs")
    names = [f.text(r.get("name"), f"spec.replicatedJobs[{i}].name") for i, r in enumerate(rjobs)]
    replicas = [
        f.count(r.get("replicas"), f"spec.replicatedJobs[{i}].replicas", 1)
        for i, r in enumerate(rjobs)
    ]
    groups = [
        f.text(r.get("groupName"), f"spec.replicatedJobs[{i}].groupName", "default") or "default"
        for i, r in enumerate(rjobs)
    ]
    # pods[i][j]: the pods of child Job j of replicated job i
    pods: list[list[list[dict[str, Any]]]] = []
    for i, rjob in enumerate(rjobs):
        where = f"spec.replicatedJobs[{i}].template"
        template = f.dict(rjob.get("template"), where) if "template" in rjob else None
        if template is None:
            raise raw.error("missing required field", field=where)
        job_spec = f.dict(template.get("spec") or {}, f"{where}.spec")
        out.notes += f.unread({"metadata", "spec"}, template, where)
        out.notes += f.unread(JOB_READ, job_spec, f"{where}.spec")
        pods.append([])
        if rjob.get("dependsOn"):
            deps = f.dicts(rjob["dependsOn"], f"spec.replicatedJobs[{i}].dependsOn")
            waits = ", ".join(f"{d.get('name')} {d.get('status', 'Ready')}" for d in deps)
            out.notes.append(
                f"JobSet {f.namespace}/{f.name}: replicated job {names[i]} depends on {waits}: "
                "the JobSet controller creates its Jobs once that holds, so it is not placed now"
            )
            pods[i] = [[] for _ in range(replicas[i])]
            continue
        for j in range(replicas[i]):
            job = f"{f.name}-{names[i]}-{j}"
            marks = {
                JOBSET_NAME: f.name,
                f"{PREFIX}jobset-uid": f.uid,
                REPLICATED_JOB: names[i],
                f"{PREFIX}restart-attempt": "0",
                f"{PREFIX}replicatedjob-replicas": str(replicas[i]),
                f"{PREFIX}global-replicas": str(sum(replicas)),
                f"{PREFIX}job-index": str(j),
                f"{PREFIX}job-key": hashlib.sha1(f"{f.namespace}/{job}".encode()).hexdigest(),
                f"{PREFIX}job-global-index": str(sum(replicas[:i]) + j),
                f"{PREFIX}group-name": groups[i],
                f"{PREFIX}group-replicas": str(
                    sum(r for r, g in zip(replicas, groups, strict=True) if g == groups[i])
                ),
                f"{PREFIX}job-group-index": str(
                    sum(r for r, g in zip(replicas[:i], groups[:i], strict=True) if g == groups[i])
                    + j
                ),
            }
            pods[i].append(
                job_pods(
                    f, job_spec, f"{where}.spec", job, default_mode="Indexed",
                    labels=marks, annotations=marks,
                )
            )  # fmt: skip
    scheduling = spec.get("scheduling")
    if scheduling is None:
        out.ungrouped = (
            f"JobSet {f.namespace}/{f.name}: no spec.scheduling: no gang is made, its pods are "
            "placed one by one unless their templates name one"
        )
    else:
        made = _groups(f, f.dict(scheduling, "spec.scheduling"), rjobs, names, pods)
        if len(made) > MAX_TEMPLATES:
            raise raw.error(
                f"makes {len(made)} PodGroups; a Workload holds at most {MAX_TEMPLATES}",
                field="spec.scheduling",
            )
        _link(f, made, out)
    out.objects.extend(p for per_job in pods for job in per_job for p in job)
    meta = f.dict(raw.body.get("metadata") or {}, "metadata")
    if EXCLUSIVE in f.map(meta, "metadata.annotations"):
        out.notes.append(
            f"JobSet {f.namespace}/{f.name}: {EXCLUSIVE} (exclusive placement by pod "
            "affinity) is not enforced"
        )
    for i, rjob in enumerate(rjobs):
        out.notes += f.unread(RJOB_READ, rjob, f"spec.replicatedJobs[{i}]")
    out.notes += f.unread(READ)
    return out


def _sequenced(spec: dict[str, Any], rjobs: list[dict[str, Any]]) -> bool:
    startup = spec.get("startupPolicy")
    in_order = isinstance(startup, dict) and startup.get("startupPolicyOrder") == "InOrder"
    return in_order or any(r.get("dependsOn") for r in rjobs)


def _groups(
    f: Fields,
    scheduling: dict[str, Any],
    rjobs: list[dict[str, Any]],
    names: list[str],
    pods: list[list[list[dict[str, Any]]]],
) -> list[_Group]:
    """The PodGroups `spec.scheduling` asks for, with their pods (module docstring)."""
    ns, js = f.namespace, f.name
    entries = f.dicts(scheduling.get("replicatedJobs"), "spec.scheduling.replicatedJobs")
    top = {k: scheduling[k] for k in POLICY_FIELDS if scheduling.get(k) is not None}
    if entries and top:
        raise f.raw.error(
            "set either the top-level policy or replicatedJobs, not both (no composite "
            "PodGroup links them)",
            field="spec.scheduling.replicatedJobs",
        )
    if not entries:
        everyone = [p for per_job in pods for job in per_job for p in job]
        if not _sequenced(f.spec, rjobs):
            group = _Group(js, f"{js}-{_hash('JobSet', ns, js)}", top, "spec.scheduling", everyone)
            return [group]
        # sequenced startup: one gang per replicated job, minCount its own pods
        policy = f.dict(top.get("schedulingPolicy") or {}, "spec.scheduling.schedulingPolicy")
        gang = policy.get("gang")
        if isinstance(gang, dict) and gang.get("minCount") is not None:
            raise f.raw.error(
                "an explicit minCount cannot be used with InOrder or dependsOn startup",
                field="spec.scheduling.schedulingPolicy.gang.minCount",
            )
        fields = {**top, "schedulingPolicy": {"basic": {}} if "basic" in policy else {"gang": {}}}
        return [
            _Group(
                name,
                f"{js}-{name}-{_hash('ReplicatedJob', ns, js, name)}",
                fields,
                "spec.scheduling",
                [p for job in pods[i] for p in job],
            )
            for i, name in enumerate(names)
        ]
    out: list[_Group] = []
    targeted: dict[str, str] = {}
    for k, entry in enumerate(entries):
        where = f"spec.scheduling.replicatedJobs[{k}]"
        targets = f.texts(entry.get("targetReplicatedJobs"), f"{where}.targetReplicatedJobs")
        if not targets:
            raise f.raw.error(
                "must name at least one ReplicatedJob", field=f"{where}.targetReplicatedJobs"
            )
        for t in targets:
            if t not in names:
                raise f.raw.error(
                    f"no ReplicatedJob named {t!r}", field=f"{where}.targetReplicatedJobs"
                )
            if t in targeted:
                raise f.raw.error(
                    f"{t!r} is already targeted by {targeted[t]}",
                    field=f"{where}.targetReplicatedJobs",
                )
            targeted[t] = where
        fields = {k2: entry[k2] for k2 in POLICY_FIELDS if entry.get(k2) is not None}
        job = entry.get("job")
        if job is not None:
            if len(targets) != 1 or fields:
                raise f.raw.error(
                    "job needs exactly one target and no policy of its own beside it",
                    field=f"{where}.job",
                )
            job = f.dict(job, f"{where}.job")
            i = names.index(targets[0])
            job_fields = {k2: job[k2] for k2 in POLICY_FIELDS if job.get(k2) is not None}
            for j, job_pods_ in enumerate(pods[i]):
                item = f"{targets[0]}-{j}"
                name = f"{js}-{item}-{_hash('Job', ns, js, targets[0], str(j))}"
                out.append(_Group(item, name, job_fields, f"{where}.job", job_pods_))
            continue
        item = "-".join(targets)
        group_pods = [p for t in targets for job in pods[names.index(t)] for p in job]
        name = f"{js}-{item}-{_hash('ReplicatedJob', ns, js, item)}"
        out.append(_Group(item, name, fields, where, group_pods))
    missing = [n for n in names if n not in targeted]
    if missing:
        raise f.raw.error(
            f"every ReplicatedJob must be targeted once; not targeted: {', '.join(missing)}",
            field="spec.scheduling.replicatedJobs",
        )
    return out


def _link(f: Fields, groups: list[_Group], out: Expansion) -> None:
    """The Workload and PodGroup objects; each pod joins its group by `schedulingGroup`."""
    templates = []
    for group in groups:
        policy = f.dict(
            group.fields.get("schedulingPolicy") or {"gang": {}}, f"{group.where}.schedulingPolicy"
        )
        if "gang" in policy:
            gang = f.dict(policy["gang"] or {}, f"{group.where}.schedulingPolicy.gang")
            count = f.count(
                gang.get("minCount"),
                f"{group.where}.schedulingPolicy.gang.minCount",
                len(group.pods),
            )
            if count > len(group.pods):
                raise f.raw.error(
                    f"minCount {count} is more than the {len(group.pods)} pod(s) it covers",
                    field=f"{group.where}.schedulingPolicy.gang.minCount",
                )
            policy = {"gang": {"minCount": count}}
        spec = copy.deepcopy({**group.fields, "schedulingPolicy": policy})
        templates.append({"name": group.item, **copy.deepcopy(spec)})
        out.objects.append(
            {
                "apiVersion": WAS_API,
                "kind": "PodGroup",
                "metadata": {"name": group.name, "namespace": f.namespace},
                "spec": {
                    "workloadRef": {"workloadName": _workload_name(f), "templateName": group.item},
                    **spec,
                },
            }
        )
        for pod in group.pods:
            pod["spec"]["schedulingGroup"] = {"podGroupName": group.name}
    out.objects.insert(
        0,
        {
            "apiVersion": WAS_API,
            "kind": "Workload",
            "metadata": {"name": _workload_name(f), "namespace": f.namespace},
            "spec": {
                "controllerRef": {"apiGroup": "jobset.x-k8s.io", "kind": "JobSet", "name": f.name},
                "podGroupTemplates": templates,
            },
        },
    )


def _workload_name(f: Fields) -> str:
    return f"{f.name}-{_hash('JobSet', f.namespace, f.name)}"
