"""KAI-Scheduler's objects (NVIDIA/KAI-Scheduler): PodGroup `scheduling.run.ai/v2alpha2`,
Topology `kai.scheduler/v1alpha1`, Queue `scheduling.run.ai/v2`.

Read as KAI reads them (`pkg/apis/scheduling/v2alpha2/podgroup_types.go`,
`pkg/scheduler/plugins/topology/topology_plugin_job_filtering.go`):

- a pod joins the PodGroup its annotation `pod-group-name` names (`getPodGroupID`; KAI's
  pod-grouper writes it), in the pod's namespace;
- the PodGroup is a gang of `minMember` pods (at least 1) with its `priorityClassName`;
- `topologyConstraint.requiredTopologyLevel`: every pod of the job in one domain of that
  node label, nodes without it ineligible (the one-domain rule every topology dialect
  shares, as the Workload API's `schedulingConstraints.topology`); a level its Topology
  does not list keeps the job pending with KAI's own message
  (`calculateRelevantDomainLevels`), a Topology not in the input is noted and the level
  is enforced as given;
- `topologyConstraint.preferredTopologyLevel`, `subGroups` (each sub-group's own
  `minMember`), the Queue's quotas, limits and over-quota weights, `preemptibility`: read
  and noted, not acted on yet (fair share across queues is its own feature).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from solver.kube.kueue import LevelsSpec
from solver.kube.loader import RawObject
from solver.kube.objects import Metadata, _K8s

__all__ = [
    "KAI_GROUP",
    "KAI_POD_GROUP_ANNOTATION",
    "KAI_TOPOLOGY_GROUP",
    "K8sKaiTopology",
    "kai_gang_fields",
    "kai_queue_note",
]

KAI_GROUP = "scheduling.run.ai"
KAI_TOPOLOGY_GROUP = "kai.scheduler"
KAI_POD_GROUP_ANNOTATION = "pod-group-name"  # commonconstants.PodGroupAnnotationForPod


class K8sKaiTopology(_K8s):
    """`kai.scheduler/v1alpha1` Topology: Kueue's shape (levels[].nodeLabel, 1..16)."""

    metadata: Metadata
    spec: LevelsSpec


class _Constraint(_K8s):
    topology: str = ""
    required: str = Field(default="", alias="requiredTopologyLevel")
    preferred: str = Field(default="", alias="preferredTopologyLevel")


def _constraint(raw: RawObject) -> _Constraint:
    spec = raw.body.get("spec")
    value = spec.get("topologyConstraint") if isinstance(spec, dict) else None
    if value is None:
        return _Constraint()
    if not isinstance(value, dict):
        raise raw.error("must be a mapping", field="spec.topologyConstraint")
    for key in ("topology", "requiredTopologyLevel", "preferredTopologyLevel"):
        if not isinstance(value.get(key, ""), str):
            raise raw.error("must be a string", field=f"spec.topologyConstraint.{key}")
    return _Constraint.model_validate(value)


def kai_gang_fields(
    raw: RawObject, gang_id: str, topologies: dict[str, tuple[str, ...]], notes: list[str]
) -> dict[str, Any]:
    """The Gang fields a KAI PodGroup sets beyond a plain gang's, and its notes."""
    c = _constraint(raw)
    spec = raw.body.get("spec") or {}
    out: dict[str, Any] = {"queue": None}
    if spec.get("queue"):
        notes.append(
            f"KAI PodGroup {gang_id}: queue {spec['queue']!r} is read, its quota, limit and "
            "over-quota weight are not acted on yet"
        )
    if spec.get("subGroups"):
        notes.append(
            f"KAI PodGroup {gang_id}: subGroups' own minMember are not enforced yet; the "
            "PodGroup's minMember is"
        )
    if spec.get("preemptibility"):
        notes.append(f"KAI PodGroup {gang_id}: preemptibility is not acted on yet")
    if not c.required and not c.preferred:
        return out
    job = gang_id.split("/", 1)[1]
    levels = topologies.get(c.topology)
    if levels is None:
        notes.append(
            f"KAI PodGroup {gang_id}: Topology {c.topology!r} is not in the input; its levels "
            "are taken as given"
        )
    for kind, level in (("required", c.required), ("preferred", c.preferred)):
        if level and levels is not None and level not in levels:
            out["refused"] = (
                f"the topology {c.topology} doesn't have a level matching the {kind}({level}) "
                f"specified for the job {job}"
            )
            return out
    if c.preferred:
        notes.append(
            f"KAI PodGroup {gang_id}: preferredTopologyLevel {c.preferred!r} is not acted on "
            "yet (a preference)"
        )
    if c.required:
        out["topology_key"] = c.required
    return out


def kai_queue_note(raw: RawObject) -> str:
    meta = raw.body.get("metadata") or {}
    return (
        f"{raw.source}: document {raw.document}: KAI Queue {meta.get('name')!r} read; its "
        "quota, limit, over-quota weight and priority are not acted on yet"
    )
