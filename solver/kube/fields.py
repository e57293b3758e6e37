"""What gangplan does with every field of the core objects it reads, so that nothing is
dropped in silence: each upstream field (the API's OpenAPI schema, which
`tests/kube/test_fields.py` walks) is read (the pydantic model in `objects.py` names it),
noted when present (`NOTED`: it can change where kube-scheduler puts a pod, and gangplan
does not model it yet), or not scheduling input (`IGNORED`, with why).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["ACTED", "CRD_IGNORED", "IGNORED", "NOTED", "spec_note", "unmodelled_notes"]

NOTED: dict[str, dict[str, str]] = {
    "PodSpec": {
        "hostNetwork": "host-network pods' ports (kube-scheduler's NodePorts) are not modelled",
        "volumes": "volumes' topology, binding and per-node volume limits (VolumeBinding, "
        "VolumeZone, NodeVolumeLimits) are not modelled",
        "runtimeClassName": "a RuntimeClass's overhead and scheduling (added at admission) are "
        "not in a manifest; spec.overhead, nodeSelector and tolerations are read",
    },
    "Container": {
        "ports": "host ports (kube-scheduler's NodePorts) are not modelled",
        "resizePolicy": "in-place resize is not modelled",
    },
    "PodStatus": {
        "allocatedResources": "a resized running pod is counted at its spec's requests",
        "resources": "a resized running pod is counted at its spec's requests",
    },
}
"""Fields that can change placement and are not modelled yet: a note when a pending pod
(or a node) carries them."""

IGNORED: dict[str, dict[str, str]] = {
    "PodSpec": dict.fromkeys(
        (
            "automountServiceAccountToken",
            "dnsConfig",
            "dnsPolicy",
            "enableServiceLinks",
            "ephemeralContainers",
            "evictionResponders",
            "hostAliases",
            "hostIPC",
            "hostPID",
            "hostUsers",
            "hostname",
            "hostnameOverride",
            "imagePullSecrets",
            "os",
            "readinessGates",
            "restartPolicy",
            "securityContext",
            "serviceAccount",
            "serviceAccountName",
            "setHostnameAsFQDN",
            "shareProcessNamespace",
            "subdomain",
            "terminationGracePeriodSeconds",
        ),
        "the kubelet's, not a scheduling input",
    ),
    "Container": dict.fromkeys(
        (
            "args",
            "command",
            "env",
            "envFrom",
            "image",
            "imagePullPolicy",
            "lifecycle",
            "livenessProbe",
            "readinessProbe",
            "restartPolicyRules",
            "securityContext",
            "startupProbe",
            "stdin",
            "stdinOnce",
            "terminationMessagePath",
            "terminationMessagePolicy",
            "tty",
            "volumeDevices",
            "volumeMounts",
            "workingDir",
        ),
        "the kubelet's, not a scheduling input",
    ),
    "NodeSpec": {
        **dict.fromkeys(
            ("configSource", "externalID", "podCIDR", "podCIDRs", "providerID"),
            "not a scheduling input",
        ),
        "podPreemptionPolicy": "the kubelet's node-pressure eviction, not the scheduler's",
    },
    "NodeStatus": dict.fromkeys(
        (
            "addresses",
            "config",
            "daemonEndpoints",
            "declaredFeatures",
            "features",
            "images",
            "nodeInfo",
            "phase",
            "runtimeHandlers",
            "volumesAttached",
            "volumesInUse",
        ),
        "not a scheduling input (images: kube-scheduler's ImageLocality score, not modelled)",
    ),
    "PodStatus": dict.fromkeys(
        (
            "containerStatuses",
            "ephemeralContainerStatuses",
            "extendedResourceClaimStatus",
            "hostIP",
            "hostIPs",
            "initContainerStatuses",
            "message",
            "nodeAllocatableResourceClaimStatuses",
            "observedGeneration",
            "podIP",
            "podIPs",
            "qosClass",
            "reason",
            "resize",
            "resourceClaimStatuses",
            "volumeHealth",
        ),
        "the kubelet's report, not a scheduling input",
    ),
}


def _present(value: Any) -> bool:
    return value not in (None, False, "", [], {})


def unmodelled_notes(pods: Iterable[dict[str, Any]]) -> list[str]:
    """A note per NOTED field that pending pods carry, with how many do (a container's
    `ports` only when one sets a `hostPort`)."""
    counts: dict[tuple[str, str], int] = {}
    for body in pods:
        spec = body.get("spec")
        if not isinstance(spec, dict) or spec.get("nodeName"):
            continue
        seen: set[tuple[str, str]] = set()
        for field in NOTED["PodSpec"]:
            if _present(spec.get(field)):
                seen.add(("spec", field))
        for key in ("containers", "initContainers"):
            for c in spec.get(key) or []:
                if not isinstance(c, dict):
                    continue
                ports = c.get("ports") or []
                if any(isinstance(p, dict) and p.get("hostPort") for p in ports):
                    seen.add(("spec.containers[]", "ports"))
                if _present(c.get("resizePolicy")):
                    seen.add(("spec.containers[]", "resizePolicy"))
        for found in seen:
            counts[found] = counts.get(found, 0) + 1
    out = []
    for (path, field), n in sorted(counts.items()):
        kind = "PodSpec" if path == "spec" else "Container"
        out.append(f"{n} pending pod(s) set {path}.{field}, not acted on: {NOTED[kind][field]}")
    return out


CRD_IGNORED: dict[str, dict[str, str]] = {
    "jobset.x-k8s.io/JobSet": {
        "spec.network": "the pods' Service and DNS names, not scheduling input",
        "spec.replicatedJobs[0].template.metadata": "the Job object's own metadata; its pods "
        "take their template's",
        "spec.replicatedJobs[0].template.spec.selector": "which pods the Job owns; gangplan "
        "makes them from the template",
    },
    **{
        f"apps/{kind}": {
            "spec.selector": "which pods the controller owns; gangplan makes them from the template"
        }
        for kind in ("Deployment", "ReplicaSet", "StatefulSet")
    },
    "batch/Job": {
        "spec.selector": "which pods the controller owns; gangplan makes them from the template"
    },
    "scheduling.godel.kubewharf.io/PodGroup": {
        "spec.application": "a label for Godel's own bookkeeping, not scheduling input"
    },
    "scheduling.k8s.io/PodGroup": {
        "spec.workloadRef": "the Workload the PodGroup was made from; the PodGroup's own spec "
        "carries its policy, which is what the scheduler reads"
    },
}
"""Fields of the custom resources (and built-in workloads) gangplan reads that are not
scheduling input, per `group/Kind`, with why; a listed object covers its fields
(`tests/kube/test_crd_fields.py` walks the rest). `ignored(kind)` gives an expander the
top-level names to leave out of its note."""
CRD_IGNORED["apps/StatefulSet"]["spec.serviceName"] = "the pods' DNS names, not scheduling input"
for _kind, _field in (
    ("PyTorchJob", "pytorchReplicaSpecs"),
    ("TFJob", "tfReplicaSpecs"),
    ("XGBoostJob", "xgbReplicaSpecs"),
    ("PaddleJob", "paddleReplicaSpecs"),
    ("JAXJob", "jaxReplicaSpecs"),
    ("MPIJob", "mpiReplicaSpecs"),
):
    CRD_IGNORED[f"kubeflow.org/{_kind}"] = {
        f"spec.{_field}[*].restartPolicy": "the operator's restarts, not scheduling input",
        **dict.fromkeys(
            (
                f"spec.runPolicy.{f}"
                for f in (
                    "activeDeadlineSeconds",
                    "backoffLimit",
                    "cleanPodPolicy",
                    "managedBy",
                    "ttlSecondsAfterFinished",
                )
            ),
            "the operator's run-time and clean-up handling, not scheduling input",
        ),
    }
CRD_IGNORED["trainer.kubeflow.org/TrainJob"] = {
    "spec.activeDeadlineSeconds": "the controller's run-time limit, not scheduling input",
    "spec.managedBy": "which controller reconciles it, not scheduling input",
    "spec.initializer": "where the initializers fetch data and models from; their Jobs come "
    "from the runtime",
    **{
        f"spec.trainer.{f}": "the trainer container's program, not scheduling input"
        for f in ("image", "command", "args", "env", "numProcPerNode")
    },
    "spec.runtimePatches[0].manager": "who owns the patch, not scheduling input",
    "spec.runtimePatches[0].time": "when the patch was stamped, not scheduling input",
    "spec.runtimePatches[0].trainingRuntimeSpec.template.metadata": "the JobSet object's own "
    "metadata; its pods take their templates'",
    "spec.runtimeRef.apiGroup": "the runtime's API group, trainer.kubeflow.org",
}
_JOBSET_IN_RUNTIME = "spec.template.spec."
CRD_IGNORED["trainer.kubeflow.org/ClusterTrainingRuntime"] = {
    **{
        f"spec.mlPolicy.{f}": "the framework's launch settings (environment), not scheduling input"
        for f in ("torch", "jax", "xgboost", "flux")
    },
    "spec.template.metadata": "the JobSet object's own metadata; its pods take their templates'",
    **{
        _JOBSET_IN_RUNTIME + path.removeprefix("spec."): why
        for path, why in CRD_IGNORED["jobset.x-k8s.io/JobSet"].items()
        if not path.endswith("template.metadata")
    },
    **{
        f"{_JOBSET_IN_RUNTIME}replicatedJobs[0].template.metadata.{f}": "the Job object's own "
        "metadata; its pods take their template's (its labels are read: the ancestor step)"
        for f in ("annotations", "finalizers", "name", "namespace")
    },
}
CRD_IGNORED["kubeflow.org/MPIJob"] |= {
    "spec.slotsPerWorker": "the MPI hostfile's slots, not scheduling input",
    "spec.mpiImplementation": "the launcher's MPI flavour, not scheduling input",
}

ACTED: dict[str, frozenset[str]] = {
    "scheduling.volcano.sh/Queue": frozenset(
        {"parent", "capability", "deserved", "guarantee", "weight", "priority", "affinity"}
    ),
    "scheduling.volcano.sh/PodGroup": frozenset(
        {
            "minMember",
            "minTaskMember",
            "minResources",
            "queue",
            "priorityClassName",
            "networkTopology",
            "subGroupPolicy",
        }
    ),
    "scheduling.sigs.k8s.io/PodGroup": frozenset({"minMember", "minResources"}),
    "kueue.x-k8s.io/ClusterQueue": frozenset(
        {"resourceGroups", "cohort", "cohortName", "fairSharing", "queueingStrategy", "stopPolicy"}
    ),
    "kueue.x-k8s.io/Cohort": frozenset({"resourceGroups", "parent", "parentName", "fairSharing"}),
    "kueue.x-k8s.io/LocalQueue": frozenset({"clusterQueue", "stopPolicy"}),
    "scheduling.x-k8s.io/PodGroup": frozenset({"minMember", "minResources"}),
    "scheduling.godel.kubewharf.io/PodGroup": frozenset(
        {"minMember", "affinity", "priorityClassName"}
    ),
    "scheduling.run.ai/PodGroup": frozenset(
        {
            "minMember",
            "priorityClassName",
            "topologyConstraint",
            "subGroups",
            "queue",
            "preemptibility",
        }
    ),
}
"""The `spec` fields gangplan acts on, per kind read through a typed model (whose parse
alone would drop the rest in silence): any other `spec` field gets a note (`spec_note`)."""


def ignored(kind: str, prefix: str = "spec.") -> set[str]:
    """The top-level names under `prefix` that `CRD_IGNORED` lists for `kind`."""
    return {
        path[len(prefix) :].split(".", 1)[0].split("[", 1)[0]
        for path in CRD_IGNORED.get(kind, {})
        if path.startswith(prefix)
    }


MISSPELT: dict[str, dict[str, str]] = {
    "scheduling.run.ai/PodGroup": {
        "subgroups": "subGroups (KAI's docs/topology/multilevel.md writes subgroups, which "
        "the API server drops)",
    },
}
"""Spellings the projects' own docs use for a field of another name: the note names it."""


def spec_note(kind: str, where: str, spec: object) -> str | None:
    """A note naming the `spec` fields of an object (`where`: its source and name) that
    gangplan does not act on, for the kinds in `ACTED`; None when there are none."""
    if not isinstance(spec, dict):
        return None
    unread = sorted(set(spec) - ACTED[kind] - ignored(kind))
    if not unread:
        return None
    meant = MISSPELT.get(kind, {})
    named = [f"spec.{f}" + (f" (the field is {meant[f]})" if f in meant else "") for f in unread]
    return f"{where}: not acted on: {', '.join(named)}"
