"""Write examples/dump/cluster.yaml: a realistic `kubectl get nodes,pods -A -o yaml` dump
(a `List` with managedFields, uids and status noise) of a 56-node GPU cluster running 204
pods across five namespaces and three schedulers, without PodGroup or Queue objects (a
plain dump does not export them). Deterministic; rerun after changing it.

    .venv/bin/python scripts/make_example_dump.py
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import yaml

OUT = Path(__file__).resolve().parents[1] / "examples" / "dump" / "cluster.yaml"
STAMP = "2026-11-20T08:00:00Z"


def uid(name: str) -> str:
    h = hashlib.sha1(name.encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def noise(kind: str, name: str, manager: str) -> dict[str, Any]:
    return {
        "creationTimestamp": STAMP,
        "resourceVersion": str(int(hashlib.sha1(name.encode()).hexdigest()[:6], 16)),
        "uid": uid(f"{kind}/{name}"),
        "managedFields": [
            {
                "apiVersion": "v1",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:labels": {}}},
                "manager": manager,
                "operation": "Update",
                "time": STAMP,
            }
        ],
    }


def node(
    name: str, cpu: int, mem_gi: int, gpus: int, labels: dict[str, str], **spec: Any
) -> dict[str, Any]:
    allocatable = {
        "cpu": str(cpu),
        "memory": f"{mem_gi}Gi",
        "pods": "110",
        "ephemeral-storage": "1800Gi",
    }
    if gpus:
        allocatable["nvidia.com/gpu"] = str(gpus)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", **labels},
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
            **noise("Node", name, "kubelet"),
        },
        "spec": {"podCIDR": "10.244.0.0/24", **spec},
        "status": {
            "allocatable": allocatable,
            "capacity": allocatable,
            "conditions": [
                {
                    "type": "MemoryPressure",
                    "status": "False",
                    "reason": "KubeletHasSufficientMemory",
                },
                {"type": "Ready", "status": "True", "reason": "KubeletReady"},
            ],
            "nodeInfo": {
                "kubeletVersion": "v1.34.2",
                "containerRuntimeVersion": "containerd://2.1.4",
            },
        },
    }


def pod(
    ns: str,
    name: str,
    requests: dict[str, str],
    *,
    node_name: str | None,
    scheduler: str = "default-scheduler",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    running = node_name is not None
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": labels or {},
            "annotations": annotations or {},
            **noise("Pod", f"{ns}/{name}", "kube-controller-manager"),
        },
        "spec": {
            "schedulerName": scheduler,
            "containers": [
                {
                    "name": "main",
                    "image": "registry.example/app:1.0",
                    "resources": {"requests": requests, "limits": requests},
                }
            ],
            "restartPolicy": "Always",
            **spec,
        },
        "status": {"phase": "Running" if running else "Pending", "qosClass": "Guaranteed"},
    }
    if running:
        body["spec"]["nodeName"] = node_name
        body["status"]["podIP"] = "10.244.1.17"
        body["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    return body


def main() -> None:
    items: list[dict[str, Any]] = []
    a100 = [f"gpu-a100-{i:02d}" for i in range(32)]
    h100 = [f"gpu-h100-{i:02d}" for i in range(16)]
    cpu = [f"cpu-{i:02d}" for i in range(8)]
    for i, name in enumerate(a100):
        items.append(
            node(
                name,
                96,
                1024,
                8,
                {
                    "topology.kubernetes.io/zone": f"zone-{'ab'[i // 16]}",
                    "rack": f"a{i // 4}",
                    "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
                },
                **({"unschedulable": True} if name == "gpu-a100-31" else {}),
            )
        )
    for i, name in enumerate(h100):
        items.append(
            node(
                name,
                192,
                2048,
                8,
                {
                    "topology.kubernetes.io/zone": "zone-c",
                    "rack": f"h{i // 4}",
                    "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                },
                taints=[{"key": "dedicated", "value": "llm", "effect": "NoSchedule"}],
            )
        )
    for name in cpu:
        items.append(
            node(name, 64, 256, 0, {"topology.kubernetes.io/zone": "zone-a", "pool": "cpu"})
        )
    everywhere = [{"operator": "Exists"}]
    for name in a100 + h100 + cpu:  # a DaemonSet's pods: one per node
        items.append(
            pod(
                "kube-system",
                f"node-exporter-{name}",
                {"cpu": "100m", "memory": "128Mi"},
                node_name=name,
                labels={"app": "node-exporter"},
                tolerations=everywhere,
            )
        )

    def gang(
        ns: str, job: str, queue: str, nodes: list[str], per_node: int, gpus: int, **spec: Any
    ) -> None:
        for i, name in enumerate(nodes * per_node):
            items.append(
                pod(
                    ns,
                    f"{job}-worker-{i}",
                    {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": str(gpus)},
                    node_name=name,
                    scheduler="volcano",
                    labels={"volcano.sh/job-name": job},
                    annotations={
                        "scheduling.k8s.io/group-name": job,
                        "scheduling.volcano.sh/queue-name": queue,
                    },
                    **spec,
                )
            )

    gang("ml-train", "bert-ft", "research", a100[0:4], 2, 4)  # 8 pods, 32 GPUs
    gang("ml-train", "resnet", "research", a100[4:8], 4, 1)  # 16 pods, 16 GPUs
    gang(
        "ml-train",
        "llm-pretrain",
        "prod",
        h100,
        1,
        8,  # 16 pods, 128 GPUs
        tolerations=[
            {"key": "dedicated", "operator": "Equal", "value": "llm", "effect": "NoSchedule"}
        ],
    )
    for i in range(48):  # inference: one GPU each, spread over 12 A100 nodes
        items.append(
            pod(
                "ml-serve",
                f"chat-7d9f-{i:03d}",
                {"cpu": "4", "memory": "32Gi", "nvidia.com/gpu": "1"},
                node_name=a100[8 + i % 12],
                labels={"app": "chat"},
            )
        )
    for i in range(60):  # Spark executors on the CPU pool, scheduled by YuniKorn
        items.append(
            pod(
                "data",
                f"etl-exec-{i}",
                {"cpu": "4", "memory": "16Gi"},
                node_name=cpu[i % 8],
                scheduler="yunikorn",
                labels={"spark-role": "executor"},
            )
        )
    for i in range(4):  # YuniKorn's backlog: not gangplan's to place
        items.append(
            pod(
                "data",
                f"etl-exec-{60 + i}",
                {"cpu": "4", "memory": "16Gi"},
                node_name=None,
                scheduler="yunikorn",
                labels={"spark-role": "executor"},
            )
        )
    items.append(
        pod(
            "dev",
            "notebook-alice",
            {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"},
            node_name=None,
        )
    )
    text = yaml.safe_dump(
        {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}},
        sort_keys=False,
        width=120,
    )
    OUT.write_text(
        "# Generated by scripts/make_example_dump.py: kubectl get nodes,pods -A -o yaml\n" + text
    )


if __name__ == "__main__":
    main()
