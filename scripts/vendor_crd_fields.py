"""Vendor the field trees of the custom resources gangplan reads, from their projects' own CRDs,
into `tests/kube/crd_fields.json` (what `tests/kube/test_crd_fields.py` walks).

    .venv/bin/python scripts/vendor_crd_fields.py MIRRORS   # MIRRORS: a folder of git mirrors

Each CRD is read from its repository at a pinned commit (`git show COMMIT:PATH` in
`MIRRORS/<owner>+<name>/repo`), its served version's `openAPIV3Schema` kept as a tree of
`type`, `properties`, `items`, `additionalProperties` and `enum` (descriptions and validation
rules dropped), `metadata` and `status` left out, and every pod template (an object with
`metadata` and a `spec` holding `containers`) replaced by `{"$pod": "template"}`: the core
objects' walk (`tests/kube/test_fields.py`) covers pods. The output records each source.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

OUT = Path(__file__).resolve().parents[1] / "tests" / "kube" / "crd_fields.json"

# (API group, kind, version, repository, commit, path)
SOURCES: list[tuple[str, str, str, str, str, str]] = [
    ("batch.volcano.sh", "Job", "v1alpha1", "volcano-sh/volcano", "ed72c7c815a9fd547a787134676f73d42e9d049c", "config/crd/volcano/bases/batch.volcano.sh_jobs.yaml"),
    ("scheduling.volcano.sh", "PodGroup", "v1beta1", "volcano-sh/volcano", "ed72c7c815a9fd547a787134676f73d42e9d049c", "config/crd/volcano/bases/scheduling.volcano.sh_podgroups.yaml"),
    ("scheduling.volcano.sh", "Queue", "v1beta1", "volcano-sh/volcano", "ed72c7c815a9fd547a787134676f73d42e9d049c", "config/crd/volcano/bases/scheduling.volcano.sh_queues.yaml"),
    ("topology.volcano.sh", "HyperNode", "v1alpha1", "volcano-sh/volcano", "ed72c7c815a9fd547a787134676f73d42e9d049c", "config/crd/volcano/bases/topology.volcano.sh_hypernodes.yaml"),
    ("scheduling.run.ai", "PodGroup", "v2alpha2", "NVIDIA/KAI-Scheduler", "72de64fc8eca10fa8cca26a20156178f3edbe092", "deployments/kai-scheduler/crds/scheduling.run.ai_podgroups.yaml"),
    ("scheduling.run.ai", "Queue", "v2", "NVIDIA/KAI-Scheduler", "72de64fc8eca10fa8cca26a20156178f3edbe092", "deployments/kai-scheduler/crds/scheduling.run.ai_queues.yaml"),
    ("kai.scheduler", "Topology", "v1alpha1", "NVIDIA/KAI-Scheduler", "72de64fc8eca10fa8cca26a20156178f3edbe092", "deployments/kai-scheduler/crds/kai.scheduler_topologies.yaml"),
    ("kueue.x-k8s.io", "Topology", "v1beta2", "kubernetes-sigs/kueue", "ff69552e79ad", "config/components/crd/bases/kueue.x-k8s.io_topologies.yaml"),
    ("kueue.x-k8s.io", "ResourceFlavor", "v1beta2", "kubernetes-sigs/kueue", "ff69552e79ad", "config/components/crd/bases/kueue.x-k8s.io_resourceflavors.yaml"),
    ("kueue.x-k8s.io", "Workload", "v1beta2", "kubernetes-sigs/kueue", "ff69552e79ad", "config/components/crd/bases/kueue.x-k8s.io_workloads.yaml"),
    ("scheduling.koordinator.sh", "ClusterNetworkTopology", "v1alpha1", "koordinator-sh/koordinator", "a7a1b76b", "config/crd/bases/scheduling.koordinator.sh_clusternetworktopologies.yaml"),
    ("scheduling.sigs.k8s.io", "PodGroup", "v1alpha1", "koordinator-sh/koordinator", "a7a1b76b", "config/crd/bases/scheduling.sigs.k8s.io_podgroups.yaml"),
    ("scheduling.x-k8s.io", "PodGroup", "v1alpha1", "kubernetes-sigs/scheduler-plugins", "903da7df", "config/crd/bases/scheduling.x-k8s.io_podgroups.yaml"),
    ("scheduling.godel.kubewharf.io", "PodGroup", "v1alpha1", "kubewharf/godel-scheduler", "90de2d0", "manifests/base/crds/scheduling.godel.kubewharf.io_podgroups.yaml"),
    ("jobset.x-k8s.io", "JobSet", "v1alpha2", "kubernetes-sigs/jobset", "08dfbdfd", "config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml"),
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet", "v1", "kubernetes-sigs/lws", "060ab4d", "config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml"),
    ("trainer.kubeflow.org", "TrainJob", "v1alpha1", "kubeflow/trainer", "8c0f5059bd51ec3ba6d6a6a7b2e1471de7bc13b3", "manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml"),
    ("trainer.kubeflow.org", "ClusterTrainingRuntime", "v1alpha1", "kubeflow/trainer", "8c0f5059bd51ec3ba6d6a6a7b2e1471de7bc13b3", "manifests/base/crds/trainer.kubeflow.org_clustertrainingruntimes.yaml"),
    *(
        ("kubeflow.org", kind, "v1", "kubeflow/training-operator", "6f74c7f6b2ed6c27aabd82d0a316b23f0646059c", f"manifests/base/crds/kubeflow.org_{kind.lower()}s.yaml")
        for kind in ("PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob", "MPIJob")
    ),
]  # fmt: skip

KEEP = ("type", "enum")


def _is_pod_template(node: dict[str, Any]) -> bool:
    props = node.get("properties") or {}
    spec = (props.get("spec") or {}).get("properties") or {}
    return "metadata" in props and "containers" in spec


def trim(node: dict[str, Any]) -> dict[str, Any]:
    if _is_pod_template(node):
        return {"$pod": "template"}
    out: dict[str, Any] = {k: node[k] for k in KEEP if k in node}
    if "properties" in node:
        out["properties"] = {k: trim(v) for k, v in sorted(node["properties"].items())}
    if isinstance(node.get("items"), dict):
        out["items"] = trim(node["items"])
    if isinstance(node.get("additionalProperties"), dict):
        out["additionalProperties"] = trim(node["additionalProperties"])
    if node.get("x-kubernetes-int-or-string"):
        out["type"] = "int-or-string"
    return out


def main(mirrors: Path) -> None:
    out: dict[str, Any] = {}
    for group, kind, version, repo, commit, path in SOURCES:
        git = mirrors / repo.replace("/", "+") / "repo"
        text = subprocess.run(
            ["git", "-C", str(git), "show", f"{commit}:{path}"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        crd = yaml.safe_load(text)
        (served,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
        schema = served["schema"]["openAPIV3Schema"]
        props = {
            k: v
            for k, v in schema["properties"].items()
            if k not in ("metadata", "status", "apiVersion", "kind")
        }
        out[f"{group}/{kind}"] = {
            "apiVersion": f"{group}/{version}",
            "source": f"{repo}@{commit}:{path}",
            "schema": trim({"type": "object", "properties": props}),
        }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT} ({len(out)} kinds)")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
