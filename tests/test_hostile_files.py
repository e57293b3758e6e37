"""Hostile files get one line naming the file (and the row, column or position), never a
traceback: binary text, numbers no machine holds, parser messages over several lines."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from clients.cli import app

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = str(ROOT / "examples" / "ganggroup-gpu.yaml")
CATALOG = str(ROOT / "benchmarks" / "openb" / "catalog.yaml")
TRACE_HEAD = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
    "creation_time,deletion_time,scheduled_time\n"
)


def _one_error_line(args: list[str], *wanted: str) -> None:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output  # clients/_exit.py: input errors exit 2
    assert isinstance(result.exception, SystemExit), result.exception
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    for text in wanted:
        assert text in lines[0], lines[0]


def test_a_binary_conf_is_one_line(tmp_path: Path) -> None:
    conf = tmp_path / "bin.conf"
    conf.write_bytes(b"\xff\xfe\x00garbage\x80")
    _one_error_line(["schedule", "-f", EXAMPLE, "--config", str(conf)], str(conf), "UTF-8")


def test_a_binary_manifest_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bin.yaml"
    bad.write_bytes(b"apiVersion: v1\n\xff\xfe")
    _one_error_line(["schedule", "-f", str(bad)], str(bad), "byte 0xff")


def test_a_yaml_error_in_a_conf_is_one_line_with_its_position(tmp_path: Path) -> None:
    conf = tmp_path / "bad.conf"
    conf.write_text("actions: allocate\ntiers: [\n  - plugins: {name: gang\n")
    _one_error_line(["schedule", "-f", EXAMPLE, "--config", str(conf)], str(conf), "line ")


@pytest.mark.parametrize("value", ["inf", "1e400", "1e30", "-inf"])
def test_a_trace_number_no_machine_holds_is_one_line(tmp_path: Path, value: str) -> None:
    trace = tmp_path / "trace.csv"
    trace.write_text(TRACE_HEAD + f"p0,1000,1024,{value},1000,,LS,Running,0,10,0\n")
    _one_error_line(["plan", "--trace", str(trace), "--catalog", CATALOG], "line 2", "num_gpu")


def test_a_binary_trace_is_one_line(tmp_path: Path) -> None:
    trace = tmp_path / "trace.csv"
    trace.write_bytes(b"\xff\xfe binary")
    _one_error_line(["plan", "--trace", str(trace), "--catalog", CATALOG], str(trace), "UTF-8")


def test_a_gpu_memory_label_beyond_any_device_is_unknown_memory(tmp_path: Path) -> None:
    """`nvidia.com/gpu.memory: 2^70` under capacity-card: the memory is unknown (as any
    label that is not a device's memory), the pod is placed, no OverflowError."""
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        f"""apiVersion: v1
kind: Node
metadata:
  name: n
  labels: {{nvidia.com/gpu.memory: "{2**70}", nvidia.com/gpu.product: A100, nvidia.com/gpu.count: "8"}}
status:
  allocatable: {{cpu: "8", nvidia.com/gpu: "8"}}
---
apiVersion: v1
kind: Pod
metadata: {{name: p, annotations: {{volcano.sh/card.name: A100}}}}
spec:
  containers: [{{name: c, resources: {{requests: {{nvidia.com/gpu: "1"}}}}}}]
"""
    )
    conf = tmp_path / "cards.conf"
    conf.write_text(
        "actions: allocate\ntiers:\n- plugins:\n  - name: predicates\n  - name: capacity-card\n"
    )
    result = CliRunner().invoke(app, ["schedule", "-f", str(cluster), "--config", str(conf)])
    assert result.exit_code == 0, result.output
    assert '"node": "n"' in result.output


REFUSED = {
    "a PriorityClass whose globalDefault is a string": (
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\n"
        "value: 1000\nglobalDefault: 'yes'\n",
        "globalDefault",
    ),
    "a Queue of weight -1": (
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q1}\n"
        "spec: {weight: -1}\n",
        "spec.weight",
    ),
    "a label whose value is a mapping": (
        "apiVersion: v1\nkind: Node\nmetadata: {name: n, labels: {a: {b: c}}}\n"
        "status: {allocatable: {cpu: '8'}}\n",
        "metadata.labels",
    ),
    "a Gt value in Arabic-Indic digits": (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c}]\n"
        "  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
        "{nodeSelectorTerms: [{matchExpressions: [{key: size, operator: Gt, values: ['٣']}]}]}}}\n",
        "matchExpressions[0].values",
    ),
    "a Gt value beyond int64": (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c}]\n"
        "  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
        f"{{nodeSelectorTerms: [{{matchExpressions: [{{key: size, operator: Gt, values: ['{2**70}']}}]}}]}}}}}}\n",
        "matchExpressions[0].values",
    ),
    # the input paths this session added: each bad shape is one line naming its field (a
    # KAI Queue whose metadata is a string raised AttributeError)
    "a KAI Queue whose metadata is a string": (
        "apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: x\n",
        "metadata",
    ),
    "a KAI Topology with no levels": (
        "apiVersion: kai.scheduler/v1alpha1\nkind: Topology\nmetadata: {name: t}\n"
        "spec: {levels: []}\n",
        "spec.levels",
    ),
    "a KAI PodGroup whose required level is a number": (
        "apiVersion: scheduling.run.ai/v2alpha2\nkind: PodGroup\nmetadata: {name: p}\n"
        "spec: {minMember: 1, topologyConstraint: {requiredTopologyLevel: 5}}\n",
        "spec.topologyConstraint.requiredTopologyLevel",
    ),
    "a KAI sub-group of a negative minMember": (
        "apiVersion: scheduling.run.ai/v2alpha2\nkind: PodGroup\nmetadata: {name: p}\n"
        "spec: {minMember: 1, subGroups: [{name: a, minMember: -1}]}\n",
        "spec.subGroups[0]",
    ),
    "a KAI sub-group whose parent is missing": (
        "apiVersion: scheduling.run.ai/v2alpha2\nkind: PodGroup\nmetadata: {name: p}\n"
        "spec: {minMember: 1, subGroups: [{name: a, parent: b}]}\n",
        "spec.subGroups[0].parent",
    ),
    "a scheduling gate without a name": (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c}]\n"
        "  schedulingGates: [{}]\n",
        "schedulingGates",
    ),
    "a DRA claim that is not a mapping": (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c}]\n"
        "  resourceClaims: [x]\n",
        "resourceClaims",
    ),
    "a Volcano task dependsOn that is a string": (
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j}\nspec:\n"
        "  tasks: [{name: w, dependsOn: master, template: {spec: {containers: [{name: c}]}}}]\n",
        "spec.tasks[0].dependsOn",
    ),
    "a node of a trillion GPUs": (
        "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"
        "status: {allocatable: {cpu: '8', nvidia.com/gpu: '1000000000000'}}\n",
        "status.allocatable.nvidia.com/gpu",
    ),
}


@pytest.mark.parametrize("case", REFUSED, ids=list(REFUSED))
def test_what_the_api_server_refuses_is_refused_in_one_line(tmp_path: Path, case: str) -> None:
    text, field = REFUSED[case]
    path = tmp_path / "input.yaml"
    path.write_text(text, encoding="utf-8")
    _one_error_line(["schedule", "-f", str(path)], str(path), field)


def test_an_unreadable_gpu_memory_label_is_a_note_where_devices_are_in_play(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        f"""apiVersion: v1
kind: Node
metadata:
  name: n
  labels: {{nvidia.com/gpu.memory: "{2**70}"}}
status:
  allocatable: {{cpu: "8", nvidia.com/gpu: "2"}}
---
apiVersion: v1
kind: Pod
metadata: {{name: p}}
spec:
  containers:
  - name: c
    resources: {{requests: {{koordinator.sh/gpu-core: "50", koordinator.sh/gpu-memory-ratio: "50"}}}}
"""
    )
    result = CliRunner().invoke(app, ["schedule", "-f", str(cluster)])
    assert result.exit_code == 0, result.output
    assert "nvidia.com/gpu.memory is not a device's memory in MiB on 1 node(s) (n)" in result.output


# JSON inside annotations, nested past what Python's parser recurses into: each reader's
# rule for unreadable JSON, never a RecursionError traceback.
DEEP = "[" * 100_000


def _pod_with(annotations: dict[str, str]) -> str:
    return yaml.safe_dump_all(
        [
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": "n0"},
                "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "10"}},
            },
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p", "namespace": "default", "annotations": annotations},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
            },
        ],
        width=10**9,
    )


def test_a_deeply_nested_gang_groups_annotation_is_koordinators_unreadable_groups(
    tmp_path: Path,
) -> None:
    """Koordinator: unreadable groups → the gang alone (reference/koordinator.md)."""
    gang = "gang.scheduling.koordinator.sh/"
    path = tmp_path / "deep.yaml"
    path.write_text(
        _pod_with({gang + "name": "g", gang + "min-available": "1", gang + "groups": DEEP})
    )
    result = CliRunner().invoke(app, ["schedule", "-f", str(path), "-o", "json"])
    assert result.exit_code == 0 and result.exception is None, result.output
    assert '"default/g"' in result.stdout
    assert "is not a JSON array of 'namespace/name' strings" in result.stderr  # noted


@pytest.mark.parametrize(
    "key",
    [
        "scheduling.koordinator.sh/device-allocated",
        "volcano.sh/card.request",
        "volcano.sh/nodegroup-limits",
    ],
)
def test_deeply_nested_json_in_any_annotation_is_no_traceback(tmp_path: Path, key: str) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text(_pod_with({key: DEEP}))
    result = CliRunner().invoke(app, ["schedule", "-f", str(path), "-o", "json"])
    assert result.exit_code in (0, 2), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception


def test_a_node_type_with_more_gpus_than_any_node_is_one_line(tmp_path: Path) -> None:
    """The planner keeps a row per device: 2^62 GPUs over gRPC once took 24 GB before the OOM killer; a YAML
    catalogue's quantity stops at 2^63-1 milli-units, still 10^15 devices."""
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text(
        "nodeTypes:\n- {name: g, cost: 1, allocatable: {cpu: '8', nvidia.com/gpu: '1000000'}}\n"
    )
    trace = tmp_path / "trace.csv"
    trace.write_text(TRACE_HEAD + "p0,1000,1024,1,1000,,LS,Running,0,10,0\n")
    _one_error_line(
        ["plan", "--trace", str(trace), "--catalog", str(catalog)],
        "nodeTypes[0].allocatable.nvidia.com/gpu",
        "4096",
    )
